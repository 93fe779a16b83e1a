package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// BenchmarkEvalAttempt is specloop's own cost of one eval attempt on a
// repository of 10,000 files: the checkout, a run of a scripted model that
// writes one file (its patch included), a test that exits 0 in the
// sandbox, the result line and the removal. The budget is 1 s an attempt.
//
//	go test ./cmd/specloop -run '^$' -bench EvalAttempt -benchtime 5x
func BenchmarkEvalAttempt(b *testing.B) {
	dir := b.TempDir()
	repo := filepath.Join(dir, "repo")
	for i := range 10000 {
		p := filepath.Join(repo, fmt.Sprintf("pkg%03d", i/100), fmt.Sprintf("file%04d.go", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, fmt.Appendf(nil, "package pkg%03d\n\n// V%d is file %d.\nconst V%d = %d\n", i/100, i, i, i, i), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-qm", "10,000 files"}} {
		if out, err := exec.Command("git", append([]string{"-c", "user.email=a@b", "-c", "user.name=a", "-C", repo}, args...)...).CombinedOutput(); err != nil {
			b.Skipf("git %v: %v: %s", args, err, out)
		}
	}
	script := filepath.Join(dir, "one.script")
	os.WriteFile(script, []byte(`{"type":"tool_call","tool_name":"write_file","arguments":{"path":"new.go","content":"package main\n"}}`+"\n"+`{"type":"finish","answer":"done"}`+"\n"), 0o600)
	for i := 0; b.Loop(); i++ {
		tasks := filepath.Join(dir, fmt.Sprintf("tasks%d.jsonl", i))
		os.WriteFile(tasks, []byte(`{"id":"big","repo":"repo","prompt":"add a file","test":"test -f new.go"}`+"\n"), 0o600)
		code, stdout, stderr := specloop(b, "eval", tasks, "--script", script, "--no-commands", "--out", filepath.Join(dir, fmt.Sprintf("out%d", i)))
		if code != exitOK {
			b.Fatalf("exit %d: %s%s", code, stdout, stderr)
		}
	}
}
