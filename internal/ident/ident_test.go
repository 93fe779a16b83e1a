package ident_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/specloop/specloop/internal/contract"
	"github.com/specloop/specloop/internal/ident"
)

// rule is the spec's run id pattern, which Plain implements.
func rule(t testing.TB) *regexp.Regexp {
	t.Helper()
	p := contract.MustSpec().Components.Parameters["RunID"].Value.Schema.Value.Pattern
	if p == "" {
		t.Fatal("the spec's RunID parameter has no pattern")
	}
	return regexp.MustCompile(p)
}

func TestPlain(t *testing.T) {
	re := rule(t)
	for _, tt := range []struct {
		s    string
		want bool
	}{
		{"read_file", true},
		{"a", true},
		{"Z-9_x", true},
		{strings.Repeat("a", 64), true},
		{"", false},
		{strings.Repeat("a", 65), false},
		{"read file", false},
		{"read.file", false},
		{"read_file\n", false},
		{"\nread_file", false},
		{"é", false},
		{"ａ", false}, // a fullwidth letter
		{"a/b", false},
		{"..", false},
	} {
		if got := ident.Plain(tt.s); got != tt.want || re.MatchString(tt.s) != tt.want {
			t.Errorf("Plain(%q) = %v, the spec's pattern %v, want %v", tt.s, got, re.MatchString(tt.s), tt.want)
		}
	}
}

// FuzzPlain: Plain accepts exactly what the spec's run id pattern matches.
func FuzzPlain(f *testing.F) {
	for _, s := range []string{"", "run_command", "a-b", strings.Repeat("x", 64), strings.Repeat("x", 65), "a b", "ä", "a\n"} {
		f.Add(s)
	}
	re := rule(f)
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := ident.Plain(s), re.MatchString(s); got != want {
			t.Errorf("Plain(%q) = %v, the spec's pattern says %v", s, got, want)
		}
	})
}
