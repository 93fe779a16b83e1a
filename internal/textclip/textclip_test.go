package textclip

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// A cut never splits a character, never exceeds its budget, and keeps as
// much as it can; bytes that are not UTF-8 are cut where the budget ends.
func TestCutsOnCharacterBoundaries(t *testing.T) {
	for _, tt := range []struct {
		s          string
		n          int
		head, tail string
	}{
		{"abc", 5, "abc", "abc"},
		{"abc", 3, "abc", "abc"},
		{"abcdef", 2, "ab", "ef"},
		{"héllo", 2, "h", "lo"}, // é is 2 bytes at 1..2
		{"héllo", 3, "hé", "llo"},
		{"a€b", 3, "a", "b"}, // € is 3 bytes: neither half fits whole
		{"€€", 4, "€", "€"},
		{"abc", 0, "", ""},
		{"abc", -1, "", ""},
		{"a\x80\x80\x80\x80\x80b", 4, "a\x80\x80\x80", "\x80\x80\x80b"}, // not UTF-8: cut at the budget
		{"\xff\xfeab", 1, "\xff", "b"},
	} {
		if got := Head(tt.s, tt.n); got != tt.head {
			t.Errorf("Head(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.head)
		}
		if got := string(Head([]byte(tt.s), tt.n)); got != tt.head {
			t.Errorf("Head([]byte(%q), %d) = %q, want %q", tt.s, tt.n, got, tt.head)
		}
		if got := Tail(tt.s, tt.n); got != tt.tail {
			t.Errorf("Tail(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.tail)
		}
	}
	if got := Clip("héllo", 2); got != "h…" {
		t.Errorf("Clip cut to %q, want h…", got)
	}
	if got := Clip("héllo", 6); got != "héllo" {
		t.Errorf("Clip changed a string within its budget: %q", got)
	}
	// Every budget over a mixed string gives valid UTF-8 within it.
	s := strings.Repeat("aé€😀", 3)
	for n := range len(s) + 1 {
		h, tl := Head(s, n), Tail(s, n)
		if len(h) > n || len(tl) > n || !utf8.ValidString(h) || !utf8.ValidString(tl) || len(h) < n-3 || len(tl) < n-3 {
			t.Errorf("n=%d: Head %q, Tail %q", n, h, tl)
		}
	}
}
