// Package textclip cuts text to a byte budget without splitting a
// character: for messages, names and tool output that have a size cap.
package textclip

import "unicode/utf8"

// Head returns the longest prefix of s of at most n bytes that does not
// split a UTF-8 sequence. Bytes that are not UTF-8 are no character: Head
// cuts them where the budget ends.
func Head[T ~string | ~[]byte](s T, n int) T {
	if n >= len(s) {
		return s
	}
	n = max(n, 0)
	if i := straddling(s, n); i >= 0 {
		return s[:i]
	}
	return s[:n]
}

// Tail returns the longest suffix of s of at most n bytes that does not
// split a UTF-8 sequence, cutting bytes that are not UTF-8 where the
// budget ends.
func Tail[T ~string | ~[]byte](s T, n int) T {
	if n >= len(s) {
		return s
	}
	cut := len(s) - max(n, 0)
	i := straddling(s, cut)
	if i < 0 {
		return s[cut:]
	}
	for i++; i < len(s) && !utf8.RuneStart(s[i]); i++ {
	}
	return s[i:]
}

// straddling returns where the character that a cut at i would split
// starts, or -1 when the cut splits none.
func straddling[T ~string | ~[]byte](s T, i int) int {
	for j := i - 1; j >= 0 && j >= i-(utf8.UTFMax-1); j-- {
		if utf8.RuneStart(s[j]) {
			if utf8.FullRuneInString(string(s[j:i])) {
				return -1
			}
			return j
		}
	}
	return -1
}

// Clip returns s when it is at most n bytes, else its Head of n bytes
// followed by "…".
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return Head(s, n) + "…"
}
