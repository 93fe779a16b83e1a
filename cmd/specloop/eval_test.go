package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/gitcheckout"
	"github.com/specloop/specloop/internal/gitcheckout/githttps"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/server"
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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

// evalTestdata copies testdata/eval to a directory of its own and makes
// each of its repos/ a git repository with one commit.
func evalTestdata(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "eval")
	if err := os.CopyFS(dir, os.DirFS("testdata/eval")); err != nil {
		t.Fatal(err)
	}
	repos, _ := filepath.Glob(filepath.Join(dir, "repos", "*"))
	for _, repo := range repos {
		for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-qm", "init"}} {
			cmd := exec.Command("git", append([]string{"-c", "user.email=a@b", "-c", "user.name=a", "-C", repo}, args...)...)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Skipf("git %v: %v: %s", args, err, out)
			}
		}
	}
	return dir
}

// TestEvalTaskSet runs the shipped task set: one task the model solves,
// one it does not, one whose setup fails.
func TestEvalTaskSet(t *testing.T) {
	t.Parallel()
	dir := evalTestdata(t)
	in := func(name string) string { return filepath.Join(dir, name) }
	code, stdout, stderr := specloop(t, "eval", in("tasks.jsonl"), "--script", in("fix-add.script"), "--parallel", "2", "--attempts", "2",
		"--out", in("out"), "--predictions", in("predictions.json"), "--price-input", "2", "--price-output", "8")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	stdout = regexp.MustCompile(`attempt time \| [0-9.]+(ms|s|m[0-9.]+s) \|`).ReplaceAllString(stdout, "attempt time | T |")
	golden(t, "eval_summary.txt", normalize(stdout, dir))
	if !strings.Contains(stderr, "offline #1 not run: setup failed with exit code 3") {
		t.Errorf("progress lacks the failed setup:\n%s", stderr)
	}
	var preds []map[string]any
	data, err := os.ReadFile(in("predictions.json"))
	if err == nil {
		err = json.Unmarshal(data, &preds)
	}
	if err != nil || len(preds) != 3 {
		t.Fatalf("predictions = %s, %v", data, err)
	}
	for _, p := range preds {
		if len(p) != 3 || p["instance_id"] == nil || p["model_name_or_path"] != in("fix-add.script") || p["model_patch"] == nil {
			t.Errorf("prediction %v: want SWE-bench's instance_id, model_name_or_path and model_patch", p)
		}
	}
	if p := preds[0]; p["instance_id"] != "adder" || !strings.Contains(p["model_patch"].(string), "+func Add(a, b int) int { return a + b }") {
		t.Errorf("adder's prediction = %v", p)
	}
	var sum gen.EvalSummary
	if data, err := os.ReadFile(in("out/summary.json")); err != nil || json.Unmarshal(data, &sum) != nil {
		t.Fatalf("summary.json: %s, %v", data, err)
	}
	validateAgainst(t, "EvalSummary", mustRead(t, in("out/summary.json")))
	results := strings.Split(strings.TrimSpace(string(mustRead(t, in("out/results.jsonl")))), "\n")
	for _, line := range results {
		validateAgainst(t, "EvalAttempt", []byte(line))
	}
	if len(results) != 6 || sum.Resolved != 2 || sum.CostUsd == nil {
		t.Errorf("%d results, summary %+v", len(results), sum)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestEvalResumesAfterKill: an eval killed (SIGKILL) mid-attempt, started
// again with the same --out, runs only the attempts it had not recorded,
// and leaves no work tree behind.
func TestEvalResumesAfterKill(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a specloop eval process mid-attempt and resumes it (about 10 s); runs without -short")
	}
	t.Parallel() // most of its time is its attempts' sleeps
	dir := evalTestdata(t)
	in := func(name string) string { return filepath.Join(dir, name) }
	tasks := strings.Join(strings.Split(string(mustRead(t, in("tasks.jsonl"))), "\n")[:2], "\n") + "\n"
	os.WriteFile(in("two.jsonl"), []byte(tasks), 0o600)
	// Each attempt takes two seconds, so the kill lands inside the second.
	os.WriteFile(in("slow.script"), []byte(`{"type":"tool_call","tool_name":"run_command","arguments":{"command":"sleep 2"}}`+"\n"+`{"type":"finish","answer":"done"}`+"\n"), 0o600)
	args := []string{"eval", in("two.jsonl"), "--script", in("slow.script"), "--parallel", "1", "--out", in("out")}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), selfServerEnv+"=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute) // a hang guard
	for {
		// The second attempt's run has started (its prompt is written
		// after its checkout): the kill lands in its two seconds.
		if _, err := os.Stat(in("out/attempts/multiplier/1/prompt.md")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the second attempt did not start; stderr:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if data := mustRead(t, in("out/results.jsonl")); strings.Count(string(data), "\n") != 1 {
		t.Fatalf("results when killed:\n%s", data)
	}
	code, stdout, errOut := specloop(t, args...)
	if code != exitOK || !strings.Contains(errOut, "1 recorded before: resuming") || strings.Count(errOut, "] ") != 1 || !strings.Contains(errOut, "[2/2] multiplier #1") {
		t.Fatalf("second eval: exit %d\nstdout: %s\nstderr: %s", code, stdout, errOut)
	}
	lines := strings.Split(strings.TrimSpace(string(mustRead(t, in("out/results.jsonl")))), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"task_id":"adder"`) || !strings.Contains(lines[1], `"task_id":"multiplier"`) {
		t.Errorf("results after the resume:\n%s", strings.Join(lines, "\n"))
	}
	if left, _ := os.ReadDir(in("out/worktrees")); len(left) != 0 {
		t.Errorf("work trees left behind: %v", left)
	}
}

// evalServer serves runs on a specloop server whose runner has cfg, commands
// allowed (the offline task's setup runs on the server), and returns its
// URL and a file holding its token.
func evalServer(t *testing.T, cfg runner.Config) (url, tokenFile string) {
	t.Helper()
	const token = "eval-token"
	tokenFile = filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.DataDir = t.TempDir()
	cfg.AllowCommands = true
	srv, err := server.New(server.Config{Token: token, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()); hs.Close() })
	return hs.URL, tokenFile
}

// evalSummary evaluates the task file tasks with script (two attempts at
// a time) into out, with the extra arguments, and returns the summary
// table (its attempt time blanked) and the results. With env, the eval is
// a process of its own whose environment has env added; else it runs in
// the test's process.
func evalSummary(t *testing.T, env []string, tasks, script, out string, extra ...string) (string, []gen.EvalAttempt) {
	t.Helper()
	args := append([]string{"eval", tasks, "--script", script, "--parallel", "2", "--out", out}, extra...)
	var code int
	var stdout, stderr string
	if env == nil {
		code, stdout, stderr = specloop(t, args...)
	} else {
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(append(os.Environ(), selfServerEnv+"=1"), env...)
		var o, e strings.Builder
		cmd.Stdout, cmd.Stderr = &o, &e
		if err := cmd.Run(); err != nil && cmd.ProcessState == nil {
			t.Fatal(err)
		}
		code, stdout, stderr = cmd.ProcessState.ExitCode(), o.String(), e.String()
	}
	if code != exitOK {
		t.Fatalf("%v: exit %d\nstdout: %s\nstderr: %s", extra, code, stdout, stderr)
	}
	var rs []gen.EvalAttempt
	for _, line := range strings.Split(strings.TrimSpace(string(mustRead(t, filepath.Join(out, "results.jsonl")))), "\n") {
		var r gen.EvalAttempt
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	table, _, _ := strings.Cut(stdout, "\nresults:")
	return regexp.MustCompile(`attempt time \| [^|]+ \|`).ReplaceAllString(table, "attempt time | T |"), rs
}

// evalLocalAndRemote evaluates tasks with script locally and through the
// server at url (each with env as for evalSummary), both at once, and returns
// the two summaries and the remote results; it ends the test on a
// failure of either.
func evalLocalAndRemote(t *testing.T, env []string, tasks, script, url, tokenFile string) (local, remote string, rs []gen.EvalAttempt) {
	t.Helper()
	t.Run("both", func(t *testing.T) { // the two evaluations at once
		t.Run("local", func(t *testing.T) {
			t.Parallel()
			local, _ = evalSummary(t, env, tasks, script, filepath.Join(t.TempDir(), "local"))
		})
		t.Run("remote", func(t *testing.T) {
			t.Parallel()
			remote, rs = evalSummary(t, env, tasks, script, filepath.Join(t.TempDir(), "remote"), "--remote", url, "--token-file", tokenFile)
		})
	})
	if t.Failed() {
		t.FailNow()
	}
	return local, remote, rs
}

// TestEvalRemoteMatchesLocal: the same task set through a specloop server
// (each attempt a run there with isolation worktree, graded here on its
// patch) gives the results a local evaluation gives, and leaves the
// server's repositories as they were.
func TestEvalRemoteMatchesLocal(t *testing.T) {
	t.Parallel()
	dir := evalTestdata(t)
	url, tokenFile := evalServer(t, runner.Config{WorkspaceRoot: dir})
	before := repoState(t, filepath.Join(dir, "repos", "adder"))

	local, remote, rs := evalLocalAndRemote(t, nil, filepath.Join(dir, "tasks.jsonl"), filepath.Join(dir, "fix-add.script"), url, tokenFile)
	if remote != local || !strings.Contains(remote, "| resolved | 1 (33.3 %") || !strings.Contains(remote, "| setup_failed | 1 |") {
		t.Errorf("remote summary:\n%s\nlocal summary:\n%s", remote, local)
	}
	for _, r := range rs {
		want := gen.ExitReasonFinished
		if r.TaskId == "offline" {
			want = gen.ExitReasonSetupFailed
		}
		if r.RunId == nil || r.ExitReason == nil || *r.ExitReason != want || r.Resolved != (r.TaskId == "adder") {
			t.Errorf("remote attempt %+v", r)
		}
		if r.TaskId == "offline" && (r.Error == nil || !strings.Contains(*r.Error, "setup failed with exit code 3") || r.Grade != nil) {
			t.Errorf("remote attempt whose setup failed %+v", r)
		}
	}
	if after := repoState(t, filepath.Join(dir, "repos", "adder")); after != before {
		t.Errorf("the server's repository changed:\nbefore: %s\nafter:  %s", before, after)
	}
	if left, _ := os.ReadDir(filepath.Join(dir, ".specloop-worktrees")); len(left) != 0 {
		t.Errorf("the server left work trees: %v", left)
	}
}

// TestEvalRemoteOfURLsMatchesLocal: the shipped task set with every
// repository given as an https URL, evaluated on a server whose
// workspace root is empty (it clones each URL, --clone-hosts), gives the
// summary a local evaluation of the same tasks gives. The git of the
// evaluating side (the user's own, as for any clone of theirs) trusts the
// test server through GIT_SSL_CAINFO, so both evals are processes of
// their own with that in their environment (the test's process keeps its
// environment, and the test runs in parallel); the server's git reads
// none of the environment and trusts it through its cloner.
func TestEvalRemoteOfURLsMatchesLocal(t *testing.T) {
	t.Parallel()
	dir := evalTestdata(t)
	srv := githttps.Start(t)
	var tasks strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(string(mustRead(t, filepath.Join(dir, "tasks.jsonl")))), "\n") {
		var task map[string]any
		if err := json.Unmarshal([]byte(line), &task); err != nil {
			t.Fatal(err)
		}
		task["repo"] = srv.Publish(t, filepath.Base(task["repo"].(string)), filepath.Join(dir, task["repo"].(string)))
		data, _ := json.Marshal(task)
		tasks.Write(append(data, '\n'))
	}
	file := filepath.Join(t.TempDir(), "tasks.jsonl")
	os.WriteFile(file, []byte(tasks.String()), 0o600)

	root := t.TempDir()
	clones := &runner.Cloner{Hosts: []string{srv.Host()}, Remote: gitcheckout.Remote{CAFile: srv.CAFile}}
	url, tokenFile := evalServer(t, runner.Config{WorkspaceRoot: root, Clones: clones})

	script := filepath.Join(dir, "fix-add.script")
	local, remote, rs := evalLocalAndRemote(t, []string{"GIT_SSL_CAINFO=" + srv.CAFile}, file, script, url, tokenFile)
	if remote != local || !strings.Contains(remote, "| resolved | 1 (33.3 %") || !strings.Contains(remote, "| setup_failed | 1 |") {
		t.Errorf("remote summary:\n%s\nlocal summary:\n%s", remote, local)
	}
	for _, r := range rs {
		if r.RunId == nil || r.ExitReason == nil || r.Resolved != (r.TaskId == "adder") {
			t.Errorf("remote attempt %+v", r)
		}
	}
	if ents, _ := os.ReadDir(clones.Dir); len(ents) != 4 { // the 3 repositories and .locks
		t.Errorf("the server's clone cache holds %v, want the 3 repositories and the lock files", ents)
	}
	if left, _ := os.ReadDir(filepath.Join(root, ".specloop-worktrees")); len(left) != 0 {
		t.Errorf("the server left work trees: %v", left)
	}

	// A URL the server does not clone is refused before any attempt starts.
	bad := filepath.Join(t.TempDir(), "tasks.jsonl")
	os.WriteFile(bad, []byte(`{"id": "x", "repo": "file://`+filepath.Join(dir, "repos", "adder")+`", "prompt": "p", "test": "true"}`+"\n"), 0o600)
	code, _, stderr := specloop(t, "eval", bad, "--script", script, "--out", filepath.Join(t.TempDir(), "bad"), "--remote", url, "--token-file", tokenFile)
	if code != exitUsage || !strings.Contains(stderr, "only https URLs") {
		t.Errorf("a file URL with --remote: exit %d, %s", code, stderr)
	}
}

// TestEvalTestMayUseGit: a task's test runs git in the attempt's work tree,
// in the sandbox, which reads the object store the work tree borrows from
// the task's repository (and only reads it): a test that grades by `git
// diff` and `git log` sees the commit and what the attempt changed.
func TestEvalTestMayUseGit(t *testing.T) {
	t.Parallel()
	dir, _, _ := evalRepo(t)
	script := filepath.Join(dir, "fix.script")
	if err := os.WriteFile(script, []byte(fixScript), 0o600); err != nil {
		t.Fatal(err)
	}
	tasks := filepath.Join(dir, "git-tasks.jsonl")
	line := `{"id":"bygit","repo":"repos/calc","prompt":"Make Add add.","test":"git log -1 --format=%s | grep -qx init && git diff --name-only HEAD | grep -qx calc.go","max_steps":5}` + "\n"
	if err := os.WriteFile(tasks, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	code, stdout, stderr := specloop(t, "eval", tasks, "--script", script, "--no-commands", "--out", out)
	if code != exitOK || !strings.Contains(stdout, "| resolved | 1 (100.0 %") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
}
