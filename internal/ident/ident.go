// Package ident is the one rule for the plain identifiers specloop takes
// from outside and uses as names: 1 to 64 ASCII letters, digits, '_' or
// '-' — the spec's run id pattern, the common ground of the providers'
// rules for tool names, and the call ids a trace records verbatim.
package ident

import "strings"

// MaxLen is the longest plain identifier.
const MaxLen = 64

// Plain reports whether s is a plain identifier. (A loop, not a regular
// expression: compiling one at package init cost every program importing
// it some 860 allocations.)
func Plain(s string) bool { return Of(s, MaxLen, "_-") }

// Of reports whether s is 1 to most bytes of ASCII letters, digits and
// the bytes of extra: Plain's rule with another length or other
// punctuation, for the ids and error codes providers send.
func Of(s string, most int, extra string) bool {
	if len(s) == 0 || len(s) > most {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte(extra, c) >= 0) {
			return false
		}
	}
	return true
}
