package schema

import (
	"slices"
	"strconv"
	"unicode/utf8"
)

// CheckUTF8 returns an *Error naming the first string (or object key) in
// a decoded value that is not valid UTF-8, or nil. JSON text cannot
// carry such a string, but a Go caller's map can, and no encoder takes it.
func CheckUTF8(value any) error {
	if p, ok := badUTF8(value); ok {
		slices.Reverse(p)
		return &Error{Pointer: pointer(p), Reason: "is not valid UTF-8"}
	}
	return nil
}

// badUTF8 returns the path to the first string that is not UTF-8, its
// last token first (it is built on the way back, so that a valid value
// costs no allocation).
func badUTF8(v any) ([]string, bool) {
	switch v := v.(type) {
	case string:
		return nil, !utf8.ValidString(v)
	case map[string]any:
		for k, x := range v {
			if !utf8.ValidString(k) {
				// The key itself cannot be named: point at its object.
				return nil, true
			}
			if p, ok := badUTF8(x); ok {
				return append(p, k), true
			}
		}
	case []any:
		for i, x := range v {
			if p, ok := badUTF8(x); ok {
				return append(p, strconv.Itoa(i)), true
			}
		}
	}
	return nil, false
}
