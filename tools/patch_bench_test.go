package tools_test

import (
	"context"
	"fmt"
	"os/exec"
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
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=b", "-c", "user.email=b@example.com", "commit", "-q", "-m", "init"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ws, err := tools.OpenWorkspace(dir)
		if err != nil {
			b.Fatal(err)
		}
		rt, err := tools.New(tools.Config{Workspace: ws, DisableCommands: true})
		if err != nil {
			b.Fatal(err)
		}
		mustSucceed(b, callTool(b, rt, "write_file", map[string]any{"path": "pkg00/file0000.txt", "content": fmt.Sprintf("run %d\n", i)}))
		p, err := rt.Patch(context.Background())
		if err != nil || p == "" {
			b.Fatalf("patch %q, %v", p, err)
		}
		ws.Close()
	}
}
