// Package tools runs the spec's tools: it derives the registry from the
// spec, validates arguments, dispatches to Go handlers and provides the
// built-in ones (the calculator and the code tools confined to a
// workspace).
//
// The code tools' engines sit in internal packages: the directory walk in
// tools/internal/fswalk, the line matcher of search in
// tools/internal/linematch; tools maps their plain errors to its error
// codes and words their notes.
//
// A tool is defined only in spec/agent.yaml, as the operation
// POST /v1/tools/NAME: its name, description, input schema, result schema
// and error codes (x-error-codes, members of the ErrorCode enum) all come
// from there. Go supplies handlers, bound to tools by their generated input
// type. Over HTTP one operation, POST /v1/tools/{name}, serves them all
// (the server runs each call in its own workspace with Runtime.In).
//
// (The root tools.go, with the "tools" build tag, only pins the code
// generator; it has nothing to do with this package.)
package tools
