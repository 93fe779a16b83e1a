package runner_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/sandbox"
)

// Runs created with isolation worktree on one repository each work in a
// work tree of their own: each patch holds its own change, the workspace
// is untouched, and the work trees are gone once the runs end. Such a run
// cannot be continued, and a request may not name the work trees.
func TestIsolatedRunsNeverShareFiles(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	repo := filepath.Join(root, "repo")
	for _, args := range [][]string{{"init", "-q", repo}, {"-C", repo, "commit", "-q", "--allow-empty", "-m", "empty"}} {
		if out, err := exec.Command("git", append([]string{"-c", "user.email=a@b", "-c", "user.name=a"}, args...)...).CombinedOutput(); err != nil {
			t.Skipf("git: %v: %s", err, out)
		}
	}
	os.WriteFile(filepath.Join(repo, "a.txt"), []byte("base\n"), 0o644)
	for _, args := range [][]string{{"add", "a.txt"}, {"commit", "-qm", "base"}} {
		if out, err := exec.Command("git", append([]string{"-c", "user.email=a@b", "-c", "user.name=a", "-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git: %v: %s", err, out)
		}
	}
	rn := newRunner(t, t.TempDir(), root)
	ctx := context.Background()
	worktree := gen.CreateRunRequestIsolationWorktree
	create := func(content string) gen.Run {
		req := script(t, `{"type":"tool_call","tool_name":"write_file","arguments":{"path":"a.txt","content":"`+content+`\n"}}`, `{"type":"finish","answer":"done"}`)
		req.Workspace, req.Isolation = new("repo"), &worktree
		r, err := rn.Create(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if r.Workspace == nil || !strings.HasPrefix(*r.Workspace, ".specloop-worktrees/") {
			t.Fatalf("an isolated run's workspace is %v", r.Workspace)
		}
		return r
	}
	one, two := create("one"), create("two")
	for r, want := range map[string]string{one.Id: "+one", two.Id: "+two"} {
		v := waitFor(t, rn, r, finished)
		if v.Result.ExitReason != gen.ExitReasonFinished || v.Result.Patch == nil || !strings.Contains(*v.Result.Patch, "-base\n"+want+"\n") {
			t.Errorf("run %s: %+v, patch %v", r, v.Result, v.Result.Patch)
		}
	}
	if data, _ := os.ReadFile(filepath.Join(repo, "a.txt")); string(data) != "base\n" {
		t.Errorf("the workspace changed: %q", data)
	}
	if left, _ := os.ReadDir(filepath.Join(root, ".specloop-worktrees")); len(left) != 0 {
		t.Errorf("work trees left after the runs ended: %v", left)
	}

	var re *runner.Error
	if _, err := rn.Continue(ctx, one.Id, gen.ContinueRunRequest{Message: "more"}); !errors.As(err, &re) || re.Kind != runner.Conflict {
		t.Errorf("continuing an isolated run: %v, want a conflict", err)
	}
	bad := func(name string, edit func(*gen.CreateRunRequest), field string) {
		t.Helper()
		req := script(t, `{"type":"finish","answer":"done"}`)
		edit(&req)
		if _, err := rn.Create(ctx, req); !errors.As(err, &re) || re.Kind != runner.Invalid || re.Field != field {
			t.Errorf("%s: %v, want a refusal of %s", name, err, field)
		}
	}
	bad("a workspace among the work trees", func(r *gen.CreateRunRequest) { r.Workspace = new(".specloop-worktrees/x") }, "/workspace")
	bad("the work trees in other case", func(r *gen.CreateRunRequest) { r.Workspace = new("./.SpecLoop-Worktrees/x") }, "/workspace")
	bad("no repository", func(r *gen.CreateRunRequest) { r.Isolation = &worktree }, "/isolation")
	bad("no such commit", func(r *gen.CreateRunRequest) {
		r.Workspace, r.Isolation, r.Commit = new("repo"), &worktree, new("no-such-branch")
	}, "/commit")
	bad("an option for a commit", func(r *gen.CreateRunRequest) {
		r.Workspace, r.Isolation, r.Commit = new("repo"), &worktree, new("--output=/tmp/x")
	}, "/commit")
}

// git works in an isolated run's work tree under a confining sandbox:
// the run's setup and completion check (sandboxed as run_command is)
// read the commit and the change from the repository's objects, which
// the work tree borrows.
func TestIsolatedRunGitInSandbox(t *testing.T) {
	t.Parallel()
	needSandbox(t)
	root := t.TempDir()
	repo := filepath.Join(root, "repo")
	os.MkdirAll(repo, 0o755)
	os.WriteFile(filepath.Join(repo, "a.txt"), []byte("base\n"), 0o644)
	for _, args := range [][]string{{"init", "-q"}, {"add", "a.txt"}, {"commit", "-qm", "base"}} {
		if out, err := exec.Command("git", append([]string{"-c", "user.email=a@b", "-c", "user.name=a", "-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Skipf("git: %v: %s", err, out)
		}
	}
	head, err := exec.Command("git", "-C", repo, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	rn, err := runner.New(runner.Config{DataDir: t.TempDir(), WorkspaceRoot: root, AllowCommands: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rn.Shutdown(context.Background()) })
	worktree := gen.CreateRunRequestIsolationWorktree
	req := script(t, `{"type":"tool_call","tool_name":"write_file","arguments":{"path":"a.txt","content":"one\n"}}`, `{"type":"finish","answer":"done"}`)
	req.Workspace, req.Isolation = new("repo"), &worktree
	isHead := "git log -1 --format=%H | grep -qx " + strings.TrimSpace(string(head))
	req.Setup = new(isHead)
	req.Check = new(isHead + " && git status --porcelain | grep -qx ' M a.txt'")
	setupAndCheckPass(t, rn, req, "the isolated run's sandbox")
}

// needSandbox skips the test where no sandbox is available, but for CI,
// where it fails.
func needSandbox(t *testing.T) {
	t.Helper()
	if err := sandbox.Available(sandbox.Auto); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
}

// setupAndCheckPass runs req on rn and fails t unless its setup and its
// check passed, where git runs in the sandbox (where).
func setupAndCheckPass(t *testing.T, rn *runner.Runner, req gen.CreateRunRequest, where string) {
	t.Helper()
	r, err := rn.Create(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	v := waitFor(t, rn, r.Id, finished)
	if res := v.Result; res.Setup == nil || res.Setup.ExitCode != 0 || res.Check == nil || res.Check.ExitCode != 0 {
		t.Fatalf("git in %s: setup %+v, check %+v", where, res.Setup, res.Check)
	}
}
