package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// evalRepo makes a repository whose Add subtracts, with a post-checkout
// hook and a smudge filter (named by its committed .gitattributes) that
// each leave a marker if anything runs them, and a task file for it.
func evalRepo(t *testing.T) (dir, tasks, marker string) {
	t.Helper()
	dir = t.TempDir()
	repo := filepath.Join(dir, "repos", "calc")
	marker = filepath.Join(dir, "hook-ran")
	files := map[string]string{
		"calc.go":                  "package calc\n\nfunc Add(a, b int) int { return a - b }\n",
		".gitattributes":           "*.go filter=evil\n",
		".git/hooks/post-checkout": "#!/bin/sh\ntouch " + marker + "\n",
	}
	if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
		t.Skipf("git: %v: %s", err, out)
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("git", "-C", repo, "config", "filter.evil.smudge", "sh -c 'touch "+marker+"; cat'").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	cmd := exec.Command("git", "-c", "user.email=a@b", "-c", "user.name=a", "-C", repo, "add", "calc.go", ".gitattributes")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	cmd = exec.Command("git", "-c", "user.email=a@b", "-c", "user.name=a", "-c", "core.hooksPath=/dev/null", "-C", repo, "commit", "-qm", "init")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	tasks = filepath.Join(dir, "tasks.jsonl")
	lines := `{"id":"add","repo":"repos/calc","prompt":"Make Add add.","test":"grep -q 'a + b' calc.go","max_steps":5}
{"id":"other","repo":"repos/calc","commit":"HEAD","prompt":"Look around.","test":"test -f nothing-here"}
`
	if err := os.WriteFile(tasks, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, tasks, marker
}

// repoState is what a person sees of a repository: its status, its refs
// and the entries of its .git.
func repoState(t *testing.T, repo string) string {
	t.Helper()
	var b strings.Builder
	for _, args := range [][]string{{"status", "--porcelain", "--ignored"}, {"for-each-ref"}, {"rev-parse", "HEAD"}} {
		out, err := exec.Command("git", append([]string{"-c", "core.hooksPath=/dev/null", "-C", repo}, args...)...).Output()
		if err != nil {
			t.Fatal(err)
		}
		b.Write(out)
	}
	entries, _ := os.ReadDir(filepath.Join(repo, ".git"))
	for _, e := range entries {
		b.WriteString(e.Name() + " ")
	}
	return b.String()
}

const fixScript = `{"type":"tool_call","tool_name":"write_file","arguments":{"path":"calc.go","content":"package calc\n\nfunc Add(a, b int) int { return a + b }\n"}}
{"type":"finish","answer":"fixed"}
`

// TestEvalGradesEachAttemptInItsOwnWorktree: each attempt edits a worktree
// of its own, the task's test grades what it left, the person's working
// tree and hooks are untouched, and a second eval with the same --out
// runs nothing recorded.
func TestEvalGradesEachAttemptInItsOwnWorktree(t *testing.T) {
	dir, tasks, marker := evalRepo(t)
	script := filepath.Join(dir, "fix.script")
	if err := os.WriteFile(script, []byte(fixScript), 0o600); err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(dir, "repos", "calc")
	before := repoState(t, repo)
	out := filepath.Join(dir, "out")
	pred := filepath.Join(dir, "preds.jsonl")
	code, stdout, stderr := specloop(t, "eval", tasks, "--script", script, "--no-commands", "--out", out, "--attempts", "2", "--parallel", "2", "--predictions", pred)
	if code != exitOK {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	// Every attempt writes the fix; only task add's test wants it.
	for _, want := range []string{"| attempts | 4 |", "| resolved | 2 (50.0 %", "| pass@2 | 50.0 % |", "| finished | 4 |"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "[4/4]") || !strings.Contains(stderr, "add #1 resolved") {
		t.Errorf("progress lacks the attempts:\n%s", stderr)
	}
	patch, err := os.ReadFile(filepath.Join(out, "attempts", "add", "1", "patch.diff"))
	if err != nil || !strings.Contains(string(patch), "+func Add(a, b int) int { return a + b }") {
		t.Errorf("attempt's patch = %q, %v", patch, err)
	}
	if data, err := os.ReadFile(pred); err != nil || !strings.Contains(string(data), `"instance_id":"add"`) || !strings.Contains(string(data), "a + b") {
		t.Errorf("predictions = %s, %v", data, err)
	}
	if after := repoState(t, repo); after != before {
		t.Errorf("the task's repository changed:\nbefore: %s\nafter:  %s", before, after)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("making a work tree ran the repository's post-checkout hook or smudge filter")
	}
	if left, _ := os.ReadDir(filepath.Join(out, "worktrees")); len(left) != 0 {
		t.Errorf("work trees left behind: %v", left)
	}
	for _, f := range []string{"summary.json", "summary.md"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}

	code, stdout, stderr = specloop(t, "eval", tasks, "--script", script, "--no-commands", "--out", out, "--attempts", "2")
	if code != exitOK || !strings.Contains(stderr, "4 recorded before: resuming") || strings.Contains(stderr, "[") || !strings.Contains(stdout, "| attempts | 4 |") {
		t.Errorf("second eval: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
}

func TestEvalRefusesBadInput(t *testing.T) {
	dir, tasks, _ := evalRepo(t)
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte(`{"id":"x","repo":"repos/calc","prompt":"p","test":"t"}`+"\n"+`{"id":"y","repo":"repos/calc","prompt":"p"}`+"\n"), 0o600)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"eval", bad, "--script", tasks}, `bad.jsonl:2: field "/test": is required`},
		{[]string{"eval", tasks, "--script", tasks, "--out", filepath.Join(dir, "repos", "calc", "out")}, "inside task add's repository"},
		{[]string{"eval", tasks, "--script", tasks, "--workspace", dir}, "--workspace does not apply"},
		{[]string{"eval", tasks, "--script", tasks, "--parallel", "0"}, "--parallel must be between 1 and 256"},
		{[]string{"eval", "--script", tasks}, "the task file TASKS.jsonl is required"},
		{[]string{"eval", tasks}, "give exactly one of --script FILE and --model"},
	} {
		code, _, stderr := specloop(t, c.args...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args[1:], code, stderr, exitUsage, c.want)
		}
	}
}

func TestEvalCompare(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	line := func(task string, ok bool, steps int) string {
		r := "false"
		if ok {
			r = "true"
		}
		return `{"task_id":"` + task + `","attempt":1,"resolved":` + r + `,"steps":` + string(rune('0'+steps)) + `,"input_tokens":0,"output_tokens":0,"duration_seconds":1}` + "\n"
	}
	os.Mkdir(a, 0o700)
	os.Mkdir(b, 0o700)
	os.WriteFile(filepath.Join(a, "results.jsonl"), []byte(line("t1", false, 9)+line("t2", true, 3)), 0o600)
	os.WriteFile(filepath.Join(b, "results.jsonl"), []byte(line("t1", true, 5)+line("t2", false, 3)), 0o600)
	code, stdout, stderr := specloop(t, "eval", "compare", a, b)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"t1    0/1  1/1  -4.0", "newly solved (1): t1", "newly failing (1): t2", "resolved: 50.0 % → 50.0 %"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("compare lacks %q:\n%s", want, stdout)
		}
	}
}
