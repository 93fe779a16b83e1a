package schema

import (
	"strconv"
	"unicode/utf8"
)

// CheckUTF8 returns an *Error naming the first string (or object key) in
// a decoded value that is not valid UTF-8, or nil. JSON text cannot
// carry such a string, but a Go caller's map can, and no encoder takes it.
func CheckUTF8(value any) error {
	if p, ok := badUTF8(value, nil); ok {
		return &Error{Pointer: pointer(p), Reason: "is not valid UTF-8"}
	}
	return nil
}

func badUTF8(v any, at []string) ([]string, bool) {
	switch v := v.(type) {
	case string:
		if !utf8.ValidString(v) {
			return at, true
		}
	case map[string]any:
		for k, x := range v {
			if !utf8.ValidString(k) {
				// The key itself cannot be named: point at its object.
				return at, true
			}
			if p, ok := badUTF8(x, append(at, k)); ok {
				return p, true
			}
		}
	case []any:
		for i, x := range v {
			if p, ok := badUTF8(x, append(at, strconv.Itoa(i))); ok {
				return p, true
			}
		}
	}
	return nil, false
}
