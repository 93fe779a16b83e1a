//go:build tools

// Package tools pins the code generator and the linters so `go generate ./...`,
// `go run honnef.co/go/tools/cmd/staticcheck ./...` and
// `go run go.temporal.io/sdk/contrib/tools/workflowcheck ./temporal/...` need
// nothing installed by hand. It is not the agent's tools: those live in ./tools.
package tools

import (
	_ "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen"
	_ "go.temporal.io/sdk/contrib/tools/workflowcheck"
	_ "honnef.co/go/tools/cmd/staticcheck"
)
