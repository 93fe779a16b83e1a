package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// BenchmarkGitGuard measures the guard's two walks of one command on a
// synthetic tree of 10,000 files in 500 directories (with a .git and a
// nested repository, each with core.hooksPath = .husky and a hook there):
// go test ./sandbox -run '^$' -bench GitGuard.
func BenchmarkGitGuard(b *testing.B) {
	dir := b.TempDir()
	for i := range 500 {
		d := filepath.Join(dir, fmt.Sprintf("pkg%d/sub%d", i%50, i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
		for j := range 20 {
			if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%d.go", j)), []byte("package x\n"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, g := range []string{".git", "vendor/x/.git"} {
		for _, p := range []string{"objects/ab", "refs/heads", "hooks"} {
			os.MkdirAll(filepath.Join(dir, g, p), 0o755)
		}
		os.WriteFile(filepath.Join(dir, g, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
		os.WriteFile(filepath.Join(dir, g, "config"), []byte("[core]\n\thooksPath = .husky\n"), 0o644)
		os.MkdirAll(filepath.Join(dir, g, "..", ".husky"), 0o755)
		os.WriteFile(filepath.Join(dir, g, "..", ".husky", "pre-commit"), []byte("#!/bin/sh\n"), 0o755)
		os.WriteFile(filepath.Join(dir, g, "hooks", "pre-commit.sample"), make([]byte, 2000), 0o755)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer root.Close()
	// The CPU time is reported too: on a loaded machine it says more
	// than the wall time.
	cpu := func() time.Duration {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	b.ResetTimer()
	start := cpu()
	for b.Loop() {
		before := snapshotGit(root, dir)
		if e := undoGit(root, before, false); e != nil {
			b.Fatal(e)
		}
	}
	b.ReportMetric(float64(cpu()-start)/float64(b.N), "cpu-ns/op")
}
