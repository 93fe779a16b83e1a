package tools_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/specloop/specloop/tools"
)

// toolNameRule is the rule ValidToolName implements, as the regular
// expression it replaced.
var toolNameRule = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func TestValidToolName(t *testing.T) {
	for _, tt := range []struct {
		name string
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
	} {
		if got := tools.ValidToolName(tt.name); got != tt.want {
			t.Errorf("ValidToolName(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// FuzzValidToolName: ValidToolName accepts exactly the names the regular
// expression [A-Za-z0-9_-]{1,64} matches whole.
func FuzzValidToolName(f *testing.F) {
	for _, s := range []string{"", "run_command", "a-b", strings.Repeat("x", 64), strings.Repeat("x", 65), "a b", "ä", "a\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if got, want := tools.ValidToolName(name), toolNameRule.MatchString(name); got != want {
			t.Errorf("ValidToolName(%q) = %v, the rule says %v", name, got, want)
		}
	})
}
