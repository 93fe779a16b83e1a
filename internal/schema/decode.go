package schema

import (
	"errors"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// MaxDepth is the deepest nesting of arrays and objects that Decode accepts.
const MaxDepth = 512

// SyntaxError reports why Decode rejected its input. It never quotes the
// input: Pointer names where the problem is (object keys are part of the
// pointer) and Msg says what it is.
type SyntaxError struct {
	Offset  int64  // The byte offset in the input where the problem was found.
	Pointer string // The RFC 6901 JSON pointer of the value, "" for the top level.
	Msg     string // A short description of the problem.
}

// Error formats the error as `invalid JSON at offset N (field "/p"): Msg`.
func (e *SyntaxError) Error() string {
	s := "invalid JSON at offset " + strconv.FormatInt(e.Offset, 10)
	if e.Pointer != "" {
		s += " (field " + quotePointer(e.Pointer) + ")"
	}
	return s + ": " + e.Msg
}

// Decode parses one JSON value strictly. Objects become map[string]any,
// arrays []any, numbers float64, strings string, true and false bool, and
// null nil, as encoding/json produces when decoding into an any.
//
// Duplicate object keys, invalid UTF-8 (raw or as an escaped lone
// surrogate), data after the value other than white space, numbers outside
// the float64 range and nesting deeper than MaxDepth are rejected. Every
// error is a *SyntaxError.
func Decode(data []byte) (any, error) {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, syntaxError(err)
	}
	v, ptr, deep := normalize(v, 0)
	if deep {
		return nil, &SyntaxError{Pointer: ptr, Msg: "nested deeper than " + strconv.Itoa(MaxDepth) + " arrays and objects"}
	}
	return v, nil
}

// syntaxError turns an error of the JSON library into a *SyntaxError
// without the library's text, which may quote the input.
func syntaxError(err error) *SyntaxError {
	var se *jsontext.SyntacticError
	if errors.As(err, &se) {
		out := &SyntaxError{Offset: se.ByteOffset, Pointer: string(se.JSONPointer), Msg: "syntax error"}
		text := ""
		if se.Err != nil {
			text = se.Err.Error()
		}
		switch {
		case errors.Is(se.Err, jsontext.ErrDuplicateName):
			out.Msg = "duplicate key"
		case text == "invalid UTF-8", strings.Contains(text, "surrogate"):
			out.Msg = "invalid UTF-8"
		case strings.HasSuffix(text, "after top-level value"):
			out.Msg = "data after the top-level value"
		case errors.Is(se.Err, io.ErrUnexpectedEOF) || text == "unexpected EOF":
			out.Msg = "unexpected end of input"
		case strings.HasPrefix(text, "invalid character '"):
			out.Msg = withoutCharacter(text)
		}
		return out
	}
	var me *json.SemanticError
	if errors.As(err, &me) {
		return &SyntaxError{Offset: me.ByteOffset, Pointer: string(me.JSONPointer), Msg: "number out of range"}
	}
	return &SyntaxError{Msg: "syntax error"}
}

// normalize replaces negative zeros in v with zero, in place (JSON Schema
// compares numbers by value, so [0,-0] has duplicate items), and reports
// the pointer of the first value nested deeper than MaxDepth.
func normalize(v any, depth int) (any, string, bool) {
	switch x := v.(type) {
	case float64:
		if x == 0 {
			return 0.0, "", false
		}
	case map[string]any:
		if depth++; depth > MaxDepth {
			return v, "", true
		}
		for k, e := range x {
			n, p, deep := normalize(e, depth)
			if deep {
				return v, "/" + escapeToken(k) + p, true
			}
			if f, ok := e.(float64); ok && f == 0 {
				x[k] = n // only a zero changes; maps and slices change in place
			}
		}
	case []any:
		if depth++; depth > MaxDepth {
			return v, "", true
		}
		for i, e := range x {
			e, p, deep := normalize(e, depth)
			if deep {
				return v, "/" + strconv.Itoa(i) + p, true
			}
			x[i] = e
		}
	}
	return v, "", false
}

// withoutCharacter drops the quoted character from the library's message
// "invalid character 'c' WHERE", which may be part of a secret, keeping
// where it was found.
func withoutCharacter(text string) string {
	const prefix = "invalid character '"
	rest := text[len(prefix):]
	_, n := utf8.DecodeRuneInString(rest)
	rest, ok := strings.CutPrefix(rest[n:], "' ")
	if !ok || strings.ContainsAny(rest, "\"`") {
		return "invalid character"
	}
	return "invalid character " + rest
}
