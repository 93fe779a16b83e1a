package tools_test

import (
	"fmt"
	"strings"
	"testing"
)

// bigFile writes a 10 MB text file of 40-byte lines and returns its line
// count.
func bigFile(b *testing.B, dir string) int {
	b.Helper()
	var sb strings.Builder
	n := 0
	for sb.Len() < 10<<20 {
		n++
		fmt.Fprintf(&sb, "line %09d of a ten megabyte file...\n", n)
	}
	writeFiles(b, dir, map[string]string{"big.txt": sb.String()})
	return n
}

// read_file on a 10 MB file: the first lines, and the last ones (the whole
// file is scanned). Target: under 50 ms.
func BenchmarkReadFile10MB(b *testing.B) {
	dir := b.TempDir()
	n := bigFile(b, dir)
	rt := wsRuntime(b, dir)
	for _, bc := range []struct {
		name  string
		start int
	}{{"head", 1}, {"tail", n - 100}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				mustSucceed(b, callTool(b, rt, "read_file", map[string]any{"path": "big.txt", "start_line": bc.start}))
			}
		})
	}
}

// edit_file of one line in the middle of a 10 MB file: read, count the
// occurrences, diff, write a temporary file, sync, rename. Target: under
// 50 ms.
func BenchmarkEditFile10MB(b *testing.B) {
	dir := b.TempDir()
	n := bigFile(b, dir)
	rt := wsRuntime(b, dir)
	a := fmt.Sprintf("line %09d of a ten megabyte file...\n", n/2)
	c := fmt.Sprintf("LINE %09d of a ten megabyte file!!!\n", n/2)
	for b.Loop() {
		mustSucceed(b, callTool(b, rt, "edit_file", map[string]any{"path": "big.txt", "old_text": a, "new_text": c}))
		a, c = c, a
	}
}
