package tools_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/specloop/specloop/tools"
)

// BenchmarkPatchGit measures a run's patch in a git repository of 2,000
// files (8 MB): the snapshot before the first change, one write_file, the
// snapshot and diff at the end.
func BenchmarkPatchGit(b *testing.B) {
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("git is not installed")
	}
	dir := b.TempDir()
	files := map[string]string{}
	line := fmt.Sprintf("%099d\n", 0)
	content := ""
	for range 40 {
		content += line
	}
	for i := range 2000 {
		files[fmt.Sprintf("pkg%02d/file%04d.txt", i%50, i)] = fmt.Sprintf("file %d\n", i) + content
	}
	writeFiles(b, dir, files)
	commitAll(b, dir)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		benchRun(b, dir, "write_file", map[string]any{"path": "pkg00/file0000.txt", "content": fmt.Sprintf("run %d\n", i)}, true)
	}
}

// BenchmarkPatchRepository puts the three costs the patch's budget
// compares side by side, on a copy of $(go env GOROOT)/src with one commit
// (goroot) and on a synthetic tree of 100,000 files (synthetic100k):
// `git status` of the tree, a run that only reads a file, and a run that
// writes one new file with write_file (the file tools' record says what
// changed: its patch costs what that file costs); for comparison, the same
// run without its patch, and a run whose command writes the file (a
// snapshot before the command and one at the end; not in the budget), with
// and without its patch. The file is removed after each run. The budget
// (docs/performance.md): write ≤ 3× status + read on goroot, and write on
// synthetic100k ≤ 2× write on goroot.
func BenchmarkPatchRepository(b *testing.B) {
	if testing.Short() {
		b.Skip("a copy of GOROOT/src and a tree of 100,000 files: not with -short")
	}
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("git is not installed")
	}
	b.Run("goroot", func(b *testing.B) {
		goroot, err := exec.Command("go", "env", "GOROOT").Output()
		src := filepath.Join(strings.TrimSpace(string(goroot)), "src")
		if _, serr := os.Stat(filepath.Join(src, "go.mod")); err != nil || serr != nil {
			b.Skipf("no GOROOT/src to copy: %v", errors.Join(err, serr))
		}
		dir := b.TempDir()
		if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
			b.Skipf("copying %s: %v", src, err)
		}
		benchRepository(b, dir)
	})
	b.Run("synthetic100k", func(b *testing.B) {
		dir := b.TempDir()
		content := []byte(fmt.Sprintf("%0999d\n", 0))
		for d := range 1000 {
			sub := filepath.Join(dir, fmt.Sprintf("d%02d/e%02d", d/40, d%40))
			if err := os.MkdirAll(sub, 0o755); err != nil {
				b.Fatal(err)
			}
			for f := range 100 {
				if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%03d.txt", f)), append([]byte(sub), content...), 0o644); err != nil {
					b.Fatal(err)
				}
			}
		}
		benchRepository(b, dir)
	})
}

// benchRepository commits every file of dir and runs the three
// benchmarks on it.
func benchRepository(b *testing.B, dir string) {
	commitAll(b, dir)
	b.Run("status", func(b *testing.B) {
		for range b.N {
			cmd := exec.Command("git", "status", "--porcelain")
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
				b.Fatalf("git status: %v\n%.300s", err, out)
			}
		}
	})
	b.Run("read", func(b *testing.B) {
		for range b.N {
			ws, err := tools.OpenWorkspace(dir)
			if err != nil {
				b.Fatal(err)
			}
			rt, err := tools.New(tools.Config{Workspace: ws, DisableCommands: true})
			if err != nil {
				b.Fatal(err)
			}
			mustSucceed(b, callTool(b, rt, "list_files", map[string]any{"path": "."}))
			if p, err := rt.Patch(context.Background()); err != nil || p != "" {
				b.Fatalf("patch %q, %v", p, err)
			}
			ws.Close()
		}
	})
	const name = "zz_specloop_bench.txt"
	for _, run := range []struct {
		name, tool string
		args       func(i int) map[string]any
		patch      bool
	}{
		{"write", "write_file", func(i int) map[string]any { return map[string]any{"path": name, "content": fmt.Sprintf("run %d\n", i)} }, true},
		// The same run without its patch: what the write tool costs.
		{"write-nopatch", "write_file", func(i int) map[string]any { return map[string]any{"path": name, "content": fmt.Sprintf("run %d\n", i)} }, false},
		// The change made by a command: a snapshot before it and one at the end.
		{"command", "run_command", func(i int) map[string]any { return map[string]any{"command": fmt.Sprintf("echo run %d > %s", i, name)} }, true},
		{"command-nopatch", "run_command", func(i int) map[string]any { return map[string]any{"command": fmt.Sprintf("echo run %d > %s", i, name)} }, false},
	} {
		b.Run(run.name, func(b *testing.B) {
			for i := range b.N {
				benchRun(b, dir, run.tool, run.args(i), run.patch)
				if err := os.Remove(filepath.Join(dir, name)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchRun is a run in dir that makes one tool call and, with patch,
// computes its patch.
func benchRun(b *testing.B, dir, tool string, args map[string]any, patch bool) {
	ws, err := tools.OpenWorkspace(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	rt, err := tools.New(tools.Config{Workspace: ws, DisableCommands: tool != "run_command"})
	if err != nil {
		b.Fatal(err)
	}
	mustSucceed(b, callTool(b, rt, tool, args))
	if !patch {
		return
	}
	if p, err := rt.Patch(context.Background()); err != nil || p == "" {
		b.Fatalf("patch %q, %v", p, err)
	}
}

// commitAll makes dir a repository with every file in one commit.
func commitAll(b *testing.B, dir string) {
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=b", "-c", "user.email=b@example.com", "commit", "-q", "-m", "init"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}
