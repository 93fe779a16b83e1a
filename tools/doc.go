// Package tools is the agent's tool runtime: the registry of tools derived
// from the spec, argument validation, dispatch to Go handlers, and the
// built-in tools (the calculator and the code tools that work inside a
// confined workspace).
//
// A tool is defined only in spec/agent.yaml, as the operation
// POST /v1/tools/{name}: its name, description, input schema, result schema
// and error codes (x-error-codes, members of the ErrorCode enum) all come
// from there. Go supplies handlers, bound to
// tools by their generated input type.
//
// (The root tools.go, with the "tools" build tag, only pins the code
// generator; it has nothing to do with this package.)
package tools
