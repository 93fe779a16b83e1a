// Package schema decodes JSON strictly and validates it fast against
// schemas from the OpenAPI document.
//
// Decode parses one JSON value into the same shapes encoding/json produces
// for an any, but rejects duplicate keys, invalid UTF-8 and excessive
// nesting, and needs about half the time and allocations. Compile turns a
// kin-openapi schema into a Validator once; Validate then checks decoded
// values without allocating and reports the first problem as an *Error
// that names the field by its JSON pointer. Bind copies a validated value
// into a Go struct as encoding/json would. DecodeMembers, ValidateMembers
// and BindMembers do the same for a top-level object that is read once, as
// a list of members instead of a map.
//
// No error of this package contains a submitted value: values may be
// secrets, and errors end up in logs, traces and model prompts.
package schema
