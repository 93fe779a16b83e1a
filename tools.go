//go:build tools

// Package tools pins the code generator and the linter so `go generate ./...`
// and `go run honnef.co/go/tools/cmd/staticcheck ./...` need nothing installed
// by hand. It is not the agent's tools: those live in ./tools.
package tools

import (
	_ "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen"
	_ "honnef.co/go/tools/cmd/staticcheck"
)
