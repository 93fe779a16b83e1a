// Package spec embeds spec/agent.yaml, the OpenAPI document that is the single
// source of every action, observation, result, trace event and tool schema.
//
// Its exported API carries no kin-openapi type: code inside this module
// reads the parsed document through internal/specdoc, which parses and
// validates it once per process with kin-openapi.
package spec

import _ "embed"

//go:embed agent.yaml
var document []byte

// YAML returns the embedded OpenAPI document exactly as written.
func YAML() []byte { return document }
