// Package gen holds the Go code generated from spec/agent.yaml: by
// oapi-codegen the data types, the echo strict-server interface and the
// HTTP client; by gen/internal/specconst (spec.gen.go) the spec's
// constants and tables: every default and bound (DefaultCreateRunRequestMaxSteps,
// MaxItemsTurnActions), each string enum's values and meanings
// (ExitReasonValues, ErrorCode.Meaning), the operations, and what each
// built-in tool does (BuiltinTools: writes files, runs commands, its error
// codes and hints), so that no package parses the document to learn them.
//
// Nothing in this package is written by hand. Edit spec/agent.yaml and run
// `go generate ./gen` (the generator version is pinned in go.mod through the
// root tools.go); a test fails when these files are stale.
package gen

//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen -config types.cfg.yaml ../spec/agent.yaml
//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen -config server.cfg.yaml ../spec/agent.yaml
//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen -config client.cfg.yaml ../spec/agent.yaml
//go:generate go run ./internal/specconst -spec ../spec/agent.yaml -o spec.gen.go
