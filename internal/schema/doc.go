// Package schema is the one place where specloop decodes, validates and
// binds JSON.
//
// Decode parses one JSON value strictly with github.com/go-json-experiment/json
// (the encoding/json/v2 design): duplicate object keys, invalid UTF-8,
// data after the value and nesting deeper than MaxDepth are errors. Compile
// takes a JSON Schema (draft 2020-12) object, such as internal/oas reads
// from the embedded spec or an MCP server sends, which
// github.com/google/jsonschema-go (the MCP SDK's) parses and resolves
// once; Validate walks that tree with a decoded value once, for both the
// verdict and the first problem. The library's own validator is the
// oracle the tests and fuzz targets hold the walk to.
// Bind stores a valid value in a generated Go type. The model path (tool
// calls and actions a model writes), the HTTP path (request bodies and
// parameters) and MCP tool inputs go through these same functions.
//
// No error of this package contains a submitted value: values may be
// secrets, and errors end up in logs, traces and model prompts. Errors name
// the field by its JSON pointer and say what is wrong.
package schema
