//go:build tools

// Package tools pins the code generator so `go generate ./...` needs nothing
// installed by hand. It is not the agent's tools: those live in ./tools.
package tools

import (
	_ "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen"
)
