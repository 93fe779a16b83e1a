package patchfmt

import (
	"strings"
	"testing"
)

// The line numbers of errors count from the Begin marker, so a model can
// find the line it got wrong.
func TestParseErrorLines(t *testing.T) {
	_, err := Parse("*** Begin Patch\n*** Update File: a\n@@\n-a\n+b\noops\n*** End Patch")
	se, ok := err.(*SyntaxError)
	if !ok || se.Line != 6 {
		t.Fatalf("got %v, want a syntax error at line 6", err)
	}
}

// A hunk of many equal lines over a file of equal lines gives up after
// MaxSeekWork comparisons instead of taking the product of their sizes.
func TestApplyBoundsSeekWork(t *testing.T) {
	file, h := ambiguous(100_000)
	_, err := NewBudget().Apply(file, []Hunk{h})
	ce, ok := err.(*ConflictError)
	if !ok || !strings.Contains(ce.Msg, "too ambiguous") {
		t.Fatalf("got %v, want a conflict that gave up", err)
	}
}

// ambiguous is a file of 200,000 lines "a" and a hunk of n-1 lines "a"
// and one "b", which matches nowhere and almost everywhere.
func ambiguous(n int) (string, Hunk) {
	old := make([]string, n)
	for i := range old {
		old[i] = "a"
	}
	old[n-1] = "b"
	return strings.Repeat("a\n", 200_000), Hunk{Old: old, New: []string{"c"}, Kept: []int{-1}, Line: 2}
}

// FuzzParseApply: no patch text makes Parse or Apply panic, and Apply
// always returns text ending in a newline (or nothing).
func FuzzParseApply(f *testing.F) {
	f.Add("*** Begin Patch\n*** Update File: a\n@@ x\n a\n-b\n+c\n*** End of File\n*** End Patch", "x\na\nb\n")
	f.Add("*** Begin Patch\n*** Add File: a\n+x\n*** Delete File: b\n*** End Patch", "")
	f.Add(" *** Begin Patch \n*** Update File: a\n*** Move to: b\n\n-\n+\n@@\n*** End Patch", "\r\n\r\n")
	f.Fuzz(func(t *testing.T, patch, content string) {
		ops, err := Parse(patch)
		if err != nil {
			if _, ok := err.(*SyntaxError); !ok {
				t.Fatalf("Parse returned %T, want *SyntaxError", err)
			}
			return
		}
		for _, op := range ops {
			if op.Path == "" {
				t.Fatal("an operation without a path")
			}
			if op.Kind != Update {
				continue
			}
			out, err := NewBudget().Apply(content, op.Hunks)
			if err != nil {
				if _, ok := err.(*ConflictError); !ok {
					t.Fatalf("Apply returned %T, want *ConflictError", err)
				}
				continue
			}
			if out != "" && !strings.HasSuffix(out, "\n") {
				t.Fatalf("Apply returned %q, which does not end with a newline", out)
			}
		}
	})
}
