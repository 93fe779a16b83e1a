package temporal_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/gitcheckout"
	"github.com/specloop/specloop/internal/gitcheckout/githttps"
	"github.com/specloop/specloop/runner"
)

// A run on Temporal created with isolation worktree works in a work tree
// its worker makes of the workspace's repository: the patch holds its
// change, the workspace is untouched, and the work tree is gone once the
// run ends.
func TestIsolatedRunOnTemporal(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	repo := filepath.Join(h.root, "repo")
	for _, args := range [][]string{{"init", "-q", repo}, {"-C", repo, "commit", "-q", "--allow-empty", "-m", "empty"}} {
		if out, err := exec.Command("git", append([]string{"-c", "user.email=a@b", "-c", "user.name=a"}, args...)...).CombinedOutput(); err != nil {
			t.Skipf("git: %v: %s", err, out)
		}
	}
	in := scriptInput([]string{writeDone, finish}, "", 0)
	worktree := gen.CreateRunRequestIsolationWorktree
	in.Workspace, in.Isolation = new("repo"), &worktree
	res, _ := h.run(t, in)
	if res.ExitReason != gen.ExitReasonFinished || res.Patch == nil || !strings.Contains(*res.Patch, "+++ b/done.txt") {
		t.Fatalf("result %+v, patch %v", res, res.Patch)
	}
	if _, err := os.Stat(filepath.Join(repo, "done.txt")); err == nil {
		t.Error("the run wrote in the workspace, not its work tree")
	}
	if left, _ := os.ReadDir(filepath.Join(h.root, ".specloop-worktrees")); len(left) != 0 {
		t.Errorf("work trees left after the run: %v", left)
	}

	// A workspace that is no repository ends the run with the reason.
	h.newEnv()
	os.Mkdir(filepath.Join(h.root, "plain"), 0o755)
	in = scriptInput([]string{finish}, "", 0)
	in.ID, in.Workspace, in.Isolation = "run2", new("plain"), &worktree
	out, _ := h.run(t, in)
	if out.ExitReason != gen.ExitReasonInternalError || out.Error == nil || !strings.Contains(*out.Error, "top of a git repository") {
		t.Errorf("a plain workspace: %+v", out)
	}
}

// A run on Temporal of a repository given as a URL works in a work tree
// its worker makes of its own clone of it (Activities.Clones).
func TestIsolatedRunOfARepoURLOnTemporal(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	repo := filepath.Join(t.TempDir(), "repo")
	for _, args := range [][]string{{"init", "-q", repo}, {"-C", repo, "commit", "-q", "--allow-empty", "-m", "empty"}} {
		if out, err := exec.Command("git", append([]string{"-c", "user.email=a@b", "-c", "user.name=a"}, args...)...).CombinedOutput(); err != nil {
			t.Skipf("git: %v: %s", err, out)
		}
	}
	srv := githttps.Start(t)
	u := srv.Publish(t, "r", repo)
	cache := t.TempDir()
	h.acts.Clones = &runner.Cloner{Dir: cache, Hosts: []string{srv.Host()}, Remote: gitcheckout.Remote{CAFile: srv.CAFile}}
	in := scriptInput([]string{writeDone, finish}, "", 0)
	worktree := gen.CreateRunRequestIsolationWorktree
	in.RepoUrl, in.Isolation = &u, &worktree
	res, _ := h.run(t, in)
	if res.ExitReason != gen.ExitReasonFinished || res.Patch == nil || !strings.Contains(*res.Patch, "+++ b/done.txt") {
		t.Fatalf("result %+v, patch %v", res, res.Patch)
	}
	if ents, _ := os.ReadDir(cache); len(ents) != 2 { // its one clone and the lock files (.locks)
		t.Errorf("the worker's clone cache holds %v, want its one clone and .locks", ents)
	}

	// A worker that clones nothing ends the run with the reason.
	h.acts.Clones = nil
	h.newEnv()
	in = scriptInput([]string{finish}, "", 0)
	in.ID, in.RepoUrl, in.Isolation = "run2", &u, &worktree
	out, _ := h.run(t, in)
	if out.ExitReason != gen.ExitReasonInternalError || out.Error == nil || !strings.Contains(*out.Error, "/repo_url") {
		t.Errorf("a worker without --clone-hosts: %+v", out)
	}
	if left, _ := os.ReadDir(filepath.Join(h.root, ".specloop-worktrees")); len(left) != 0 {
		t.Errorf("work trees left after the run: %v", left)
	}
}
