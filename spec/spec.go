// Package spec embeds spec/agent.yaml, the OpenAPI document that is the single
// source of every action, observation, result, trace event and tool schema.
//
// Its exported API carries no kin-openapi type. Code that needs a
// constant of the document (a default, a bound, an enum, what a tool
// does) uses the ones `go generate ./gen` writes into gen/spec.gen.go;
// the validators read the document through gen.SpecDoc (as internal/oas
// reads it, generated as JSON and decoded once per process, on first
// use). Tests that check the code against kin-openapi's reading of it use
// internal/contract.
package spec

import _ "embed"

//go:embed agent.yaml
var document []byte

// YAML returns the embedded OpenAPI document exactly as written.
func YAML() []byte { return document }
