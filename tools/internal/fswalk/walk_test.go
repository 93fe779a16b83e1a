package fswalk

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// tree writes the files of spec (path -> content) under a new directory and
// opens it as a root.
func tree(t *testing.T, spec map[string]string) *os.Root {
	t.Helper()
	dir := t.TempDir()
	for name, content := range spec {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func walkAll(t *testing.T, wk *Walker, start string) []string {
	t.Helper()
	var got []string
	if err := wk.Walk(context.Background(), start, func(f File) bool {
		defer f.Dir.Release()
		if f.Name != filepath.Base(f.Rel) {
			t.Errorf("%s: name %q", f.Rel, f.Name)
		}
		fd, _, err := f.Dir.OpenFile(f.Name)
		if err != nil {
			t.Errorf("open %s through its directory: %v", f.Rel, err)
		} else {
			fd.Close()
		}
		got = append(got, f.Rel)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

func caps() *Walker { return &Walker{MaxEntries: 1000, MaxDepth: 10, MaxIgnoreLines: 100} }

// TestWalkOrderAndIgnores: files come in path order, without .git, what
// the .gitignore files ignore (the parents' too when the walk starts below
// them) and what the glob rejects.
func TestWalkOrderAndIgnores(t *testing.T) {
	r := tree(t, map[string]string{
		".gitignore":       "*.log\n/build/\n",
		".git/HEAD":        "ref\n",
		"a.go":             "",
		"a.log":            "",
		"a-b.go":           "",
		"build/out.go":     "",
		"sub/build/x.go":   "",
		"sub/.gitignore":   "tmp*\n!tmp.keep\n",
		"sub/tmp1":         "",
		"sub/tmp.keep":     "",
		"sub/z.log":        "",
		"sub/deeper/b.go":  "",
		"sub/deeper/c.txt": "",
	})
	wk := caps()
	wk.Root = r
	want := []string{".gitignore", "a-b.go", "a.go", "sub/.gitignore", "sub/build/x.go", "sub/deeper/b.go", "sub/deeper/c.txt", "sub/tmp.keep"}
	if got := walkAll(t, wk, "."); !slices.Equal(got, want) {
		t.Errorf("walk of .:\n got %q\nwant %q", got, want)
	}
	wk = caps()
	wk.Root = r
	if got, want := walkAll(t, wk, "sub"), []string{"sub/.gitignore", "sub/build/x.go", "sub/deeper/b.go", "sub/deeper/c.txt", "sub/tmp.keep"}; !slices.Equal(got, want) {
		t.Errorf("walk of sub (the root .gitignore applies):\n got %q\nwant %q", got, want)
	}
	g, err := CompileGlob("sub/**/*.go")
	if err != nil {
		t.Fatal(err)
	}
	wk = caps()
	wk.Root, wk.Glob = r, g
	if got, want := walkAll(t, wk, "."), []string{"sub/build/x.go", "sub/deeper/b.go"}; !slices.Equal(got, want) {
		t.Errorf("walk with a glob:\n got %q\nwant %q", got, want)
	}
	if _, err := CompileGlob("a/[b"); err == nil {
		t.Error("a malformed glob compiled")
	}
}

// TestWalkCaps: what the caps leave out is counted, and the first of it named.
func TestWalkCaps(t *testing.T) {
	r := tree(t, map[string]string{
		"a/b/c/deep.go": "",
		"a/top.go":      "",
		"x/.gitignore":  strings.Repeat("p\n", 5),
		"x/p":           "",
	})
	wk := &Walker{Root: r, MaxEntries: 1000, MaxDepth: 1, MaxIgnoreLines: 4}
	got := walkAll(t, wk, ".")
	if want := []string{"a/top.go", "x/.gitignore", "x/p"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if wk.Deep != 1 || wk.FirstDeep != "a/b" {
		t.Errorf("deep %d (first %q), want 1 (a/b)", wk.Deep, wk.FirstDeep)
	}
	if wk.Unapplied != 1 || wk.FirstIgnore != "x/.gitignore" {
		t.Errorf("unapplied %d (first %q), want 1 (x/.gitignore)", wk.Unapplied, wk.FirstIgnore)
	}
	if wk.Capped {
		t.Error("capped under the entry cap")
	}
	wk = &Walker{Root: r, MaxEntries: 2, MaxDepth: 10, MaxIgnoreLines: 100}
	walkAll(t, wk, ".")
	if !wk.Capped {
		t.Error("not capped at 2 entries")
	}
}

// TestWalkSkipsLinks: a symbolic link, to a file or a directory, is not
// visited, and a start that is not a directory is an error.
func TestWalkSkipsLinks(t *testing.T) {
	r := tree(t, map[string]string{"d/f.go": "", "g.go": ""})
	if err := os.Symlink("d", filepath.Join(r.Name(), "ld")); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	if err := os.Symlink("g.go", filepath.Join(r.Name(), "lg.go")); err != nil {
		t.Fatal(err)
	}
	wk := caps()
	wk.Root = r
	if got, want := walkAll(t, wk, "."), []string{"d/f.go", "g.go"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	wk = caps()
	wk.Root = r
	if err := wk.Walk(context.Background(), "g.go", func(f File) bool { f.Dir.Release(); return true }); err == nil {
		t.Error("walking a file: no error")
	}
}
