package fswalk

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkWalkGitignore walks a tree of 4000 files in 200 directories
// under a root .gitignore of 400 patterns of the usual kinds (names,
// extensions, directories, anchored paths, "**") and a 10-pattern
// .gitignore in every fourth directory, as list_files and search do.
func BenchmarkWalkGitignore(b *testing.B) {
	dir := b.TempDir()
	var root strings.Builder
	for i := range 100 {
		fmt.Fprintf(&root, "*.ext%d\nbuild%d/\n/top%d.txt\ndocs/**/tmp%d\n", i, i, i, i)
	}
	write := func(name, content string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	write(".gitignore", root.String())
	for d := range 200 {
		sub := fmt.Sprintf("pkg%d/sub%d", d/10, d)
		if d%4 == 0 {
			write(sub+"/.gitignore", "*.o\n!keep.o\nlocal/\n/gen.go\n*.tmp\n**/cache\n#c\nnode_modules/\n*.swp\n.env\n")
		}
		for f := range 20 {
			write(fmt.Sprintf("%s/file%d.go", sub, f), "x\n")
		}
	}
	rr, err := os.OpenRoot(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer rr.Close()
	n := 0
	for b.Loop() {
		n = 0
		wk := &Walker{Root: rr, MaxEntries: 200_000, MaxDepth: 128, MaxIgnoreLines: 2000}
		if err := wk.Walk(context.Background(), ".", func(f File) bool { f.Dir.Release(); n++; return true }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n), "files")
}
