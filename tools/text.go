package tools

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"unicode/utf8"

	"github.com/specloop/specloop/internal/textclip"
)

// binarySniffLen is how much of a file decides whether it is binary.
const binarySniffLen = 8 << 10

// isBinary reports whether data (a file's beginning) looks binary: like git
// and ripgrep, a NUL byte in the first 8 KiB means binary.
func isBinary(data []byte) bool {
	if len(data) > binarySniffLen {
		data = data[:binarySniffLen]
	}
	return bytes.IndexByte(data, 0) >= 0
}

// clipLine shortens line, the first bytes of a line of size bytes, to at
// most n bytes on a rune boundary and marks the cut.
func clipLine(line []byte, n, size int) []byte {
	if size <= n {
		return line
	}
	head := textclip.Head(line, n)
	return fmt.Appendf(bytes.Clone(head), "… [%d more bytes]", size-len(head))
}

// plural renders n and a noun, pluralized with s.
func plural(n int, noun string) string { return fmt.Sprintf("%d %s%s", n, noun, pick(n, "", "s")) }

// pick returns one when n is 1, else many.
func pick(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func randomSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// trimToRunes drops a partial UTF-8 sequence at the start and the end of s,
// left by cutting a byte stream.
func trimToRunes(s string) string {
	for i := 0; i < utf8.UTFMax && len(s) > 0 && !utf8.RuneStart(s[0]); i++ {
		s = s[1:]
	}
	if len(s) == 0 {
		return s
	}
	// Drop the last rune when it was cut.
	i := len(s) - 1
	for i > 0 && !utf8.RuneStart(s[i]) && len(s)-i < utf8.UTFMax {
		i--
	}
	if !utf8.FullRuneInString(s[i:]) {
		return s[:i]
	}
	return s
}
