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

// BenchmarkKeptBaseline measures what a kept baseline costs on a copy of
// $(go env GOROOT)/src with one commit and one untracked file: a run of
// one write_file whose baseline a keeper keeps (the snapshot before the
// change, its record, the patch), beside the same run without a keeper
// (BenchmarkPatchRepository's write, the file tools' record only), and
// the patch of a Workspace that rebuilds the baseline from the record (a
// run that moved: its end snapshot hashes every file).
func BenchmarkKeptBaseline(b *testing.B) {
	if testing.Short() {
		b.Skip("a copy of GOROOT/src: not with -short")
	}
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("git is not installed")
	}
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	src := filepath.Join(strings.TrimSpace(string(goroot)), "src")
	if _, serr := os.Stat(filepath.Join(src, "go.mod")); err != nil || serr != nil {
		b.Skipf("no GOROOT/src to copy: %v", errors.Join(err, serr))
	}
	dir := b.TempDir()
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		b.Skipf("copying %s: %v", src, err)
	}
	commitAll(b, dir)
	writeFiles(b, dir, map[string]string{"untracked.txt": "before the run\n"})
	const name = "zz_specloop_bench.txt"
	write := func(b *testing.B, k tools.BaselineKeeper, i int) string {
		ws, err := tools.OpenWorkspace(dir)
		if err != nil {
			b.Fatal(err)
		}
		defer ws.Close()
		if k != nil {
			ws.KeepBaseline(k)
		}
		rt, err := tools.New(tools.Config{Workspace: ws, DisableCommands: true})
		if err != nil {
			b.Fatal(err)
		}
		mustSucceed(b, callTool(b, rt, "write_file", map[string]any{"path": name, "content": fmt.Sprintf("run %d\n", i)}))
		p, err := rt.Patch(context.Background())
		if err != nil || p == "" {
			b.Fatalf("patch %q, %v", p, err)
		}
		return p
	}
	clean := func(b *testing.B) {
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("write", func(b *testing.B) {
		for i := range b.N {
			write(b, nil, i)
			clean(b)
		}
	})
	b.Run("write-kept", func(b *testing.B) {
		for i := range b.N {
			k := &memKeeper{}
			write(b, k, i)
			clean(b)
			b.ReportMetric(float64(len(k.data)), "record-bytes")
		}
	})
	b.Run("moved-patch", func(b *testing.B) {
		k := &memKeeper{}
		want := write(b, k, 0)
		b.ResetTimer()
		for range b.N {
			ws, err := tools.OpenWorkspace(dir)
			if err != nil {
				b.Fatal(err)
			}
			ws.KeepBaseline(k)
			rt, err := tools.New(tools.Config{Workspace: ws, DisableCommands: true})
			if err != nil {
				b.Fatal(err)
			}
			if p, err := rt.Patch(context.Background()); err != nil || p != want {
				b.Fatalf("patch %q, %v; want %q", p, err, want)
			}
			ws.Close()
		}
		b.StopTimer()
		clean(b)
	})
}
