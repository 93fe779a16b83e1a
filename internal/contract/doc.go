// Package contract holds the checks that prove the Go code still matches
// spec/agent.yaml: the tool contract (every tool, every handler, inputs
// generated from each input schema), the quality rules of the spec itself,
// the HTTP contract (requests and responses validated with kin-openapi's
// openapi3filter, routes compared with the spec's paths) and the artifacts
// (trace lines, tool specs, run results) validated against their schemas.
//
// The checks are functions over an *openapi3.T so that tests can run them
// against an edited copy of the spec and show that drift is caught. They
// return []Problem rather than failing a test themselves; every Problem
// names what drifted (a tool, an operation or a schema), the field (a JSON
// pointer) and, for generated inputs, the value that exposed it.
//
// Validity is decided with kin-openapi, the engine the runtime uses too
// (through internal/schema); what the contract adds is the comparison of
// handlers, routes and artifacts with the spec.
package contract
