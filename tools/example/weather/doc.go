// Package weather is the example of a custom tool: weather.yaml defines a
// get_weather tool the way spec/agent.yaml defines the built-in ones, and
// weather.gen.go holds the Go types oapi-codegen generated from it (never
// edited; a test fails when they are stale). The package example of
// tools.Spec.Register binds a handler to them.
package weather

import _ "embed"

//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen -config types.cfg.yaml weather.yaml

// Spec is weather.yaml, the OpenAPI document of the tool.
//
//go:embed weather.yaml
var Spec []byte
