package schema

import (
	"bytes"
	"encoding/json"
)

// AppendString appends s as a JSON string, exactly as encoding/json writes
// it with HTML escaping off.
func AppendString(b []byte, s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}
