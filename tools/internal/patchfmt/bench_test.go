package patchfmt

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkApply applies a patch of 50 hunks, each with 3 lines of context
// around one changed line, to a file of 100,000 lines (about 2.5 MB).
func BenchmarkApply(b *testing.B) {
	var file strings.Builder
	for i := range 100_000 {
		fmt.Fprintf(&file, "line %d of the file\n", i)
	}
	var patch strings.Builder
	patch.WriteString("*** Begin Patch\n*** Update File: f\n")
	for h := range 50 {
		at := h*2000 + 1000
		patch.WriteString("@@\n")
		for i := at - 3; i < at; i++ {
			fmt.Fprintf(&patch, " line %d of the file\n", i)
		}
		fmt.Fprintf(&patch, "-line %d of the file\n+changed %d\n", at, at)
		for i := at + 1; i <= at+3; i++ {
			fmt.Fprintf(&patch, " line %d of the file\n", i)
		}
	}
	patch.WriteString("*** End Patch\n")
	content, text := file.String(), patch.String()
	b.SetBytes(int64(len(content)))
	for b.Loop() {
		ops, err := Parse(text)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := NewBudget().Apply(content, ops[0].Hunks); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkApplyWorstCase is a hunk that makes the search spend its whole
// MaxSeekWork budget before giving up.
func BenchmarkApplyWorstCase(b *testing.B) {
	file, h := ambiguous(1000)
	for b.Loop() {
		if _, err := NewBudget().Apply(file, []Hunk{h}); err == nil {
			b.Fatal("applied")
		}
	}
}
