package runner_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/gitcheckout"
	"github.com/specloop/specloop/internal/gitcheckout/githttps"
	"github.com/specloop/specloop/runner"
)

// gitRepo makes a repository with a.txt "base" committed and returns it
// and a func that commits a change of a.txt and returns its hash.
func gitRepo(t *testing.T) (repo string, commit func(content string) string) {
	t.Helper()
	repo = filepath.Join(t.TempDir(), "repo")
	git := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-c", "user.email=a@b", "-c", "user.name=a", "-c", "core.hooksPath=/dev/null", "-C", repo}, args...)...).CombinedOutput()
		if err != nil {
			t.Skipf("git %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
		t.Skipf("git init: %v: %s", err, out)
	}
	commit = func(content string) string {
		os.WriteFile(filepath.Join(repo, "a.txt"), []byte(content+"\n"), 0o644)
		git("add", "a.txt")
		git("commit", "-qm", content)
		return git("rev-parse", "HEAD")
	}
	commit("base")
	return repo, commit
}

// clones are the entries of the clone cache dir, its lock files left out.
func clones(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		if e.Name() != ".locks" {
			names = append(names, e.Name())
		}
	}
	return names
}

func newCloningRunner(t *testing.T, srv *githttps.Server, hosts ...string) (*runner.Runner, *runner.Cloner, string) {
	t.Helper()
	return newCloningRunnerOn(t, srv, "", hosts...)
}

// newCloningRunnerOn is newCloningRunner with the clone cache dir ("" for
// the runner's default).
func newCloningRunnerOn(t *testing.T, srv *githttps.Server, dir string, hosts ...string) (*runner.Runner, *runner.Cloner, string) {
	t.Helper()
	root := t.TempDir()
	c := &runner.Cloner{Dir: dir, Hosts: hosts, Remote: gitcheckout.Remote{CAFile: srv.CAFile}}
	rn, err := runner.New(runner.Config{DataDir: t.TempDir(), WorkspaceRoot: root, Clones: c})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rn.Shutdown(context.Background()) })
	return rn, c, root
}

// Each repo_url a server must not clone is refused with a 400 naming
// /repo_url, before git runs: a local file or path, a transport that
// runs a program, credentials in the URL, a host not allowed, another
// protocol; and so is a repo_url without isolation worktree or with a
// workspace, or on a server that clones nothing.
func TestRepoURLRefusals(t *testing.T) {
	t.Parallel()
	srv := githttps.Start(t)
	repo, _ := gitRepo(t)
	good := srv.Publish(t, "r", repo)
	other := githttps.Start(t) // a server git would reach, on a host:port not allowed
	otherURL := other.Publish(t, "r", repo)
	rn, c, _ := newCloningRunner(t, srv, srv.Host())
	marker := filepath.Join(t.TempDir(), "pwned")
	worktree, shared := gen.CreateRunRequestIsolationWorktree, gen.CreateRunRequestIsolationShared
	ctx := context.Background()
	var re *runner.Error
	refused := func(rn *runner.Runner, name string, edit func(*gen.CreateRunRequest), field string) {
		t.Helper()
		req := script(t, `{"type":"finish","answer":"done"}`)
		req.Isolation = &worktree
		edit(&req)
		if _, err := rn.Create(ctx, req); !errors.As(err, &re) || re.Kind != runner.Invalid || re.Field != field {
			t.Errorf("%s: %v, want a refusal of %s", name, err, field)
		}
	}
	before := srv.Requests()
	for name, u := range map[string]string{
		"a file URL":             "file://" + repo,
		"a file URL of the host": "file://localhost" + repo,
		"a local path":           repo,
		"a relative path":        "../repo",
		"a workspace name":       "repo",
		"ext::":                  "ext::sh -c touch% " + marker,
		"fd::":                   "fd::0",
		"https over ext::":       "https::ext::sh -c touch% " + marker,
		"ssh":                    "ssh://git@" + srv.Host() + "/r.git",
		"scp-like ssh":           "git@" + srv.Host() + ":r.git",
		"plain http":             strings.Replace(good, "https://", "http://", 1),
		"a password":             strings.Replace(good, "https://", "https://u:secret@", 1),
		"a host not allowed":     strings.Replace(good, "127.0.0.1", "localhost", 1),
		"a port not allowed":     otherURL,
		"another port":           "https://127.0.0.1:1/r.git",
	} {
		refused(rn, name, func(r *gen.CreateRunRequest) { r.RepoUrl = &u }, "/repo_url")
	}
	refused(rn, "no isolation", func(r *gen.CreateRunRequest) { r.RepoUrl, r.Isolation = &good, nil }, "/repo_url")
	refused(rn, "isolation shared", func(r *gen.CreateRunRequest) { r.RepoUrl, r.Isolation = &good, &shared }, "/repo_url")
	refused(rn, "a workspace too", func(r *gen.CreateRunRequest) { r.RepoUrl, r.Workspace = &good, new("repo") }, "/repo_url")
	refused(rn, "no such commit", func(r *gen.CreateRunRequest) { r.RepoUrl, r.Commit = &good, new("no-such-branch") }, "/commit")
	refused(rn, "an option for a commit", func(r *gen.CreateRunRequest) { r.RepoUrl, r.Commit = &good, new("--upload-pack=x") }, "/commit")
	noClones, _, _ := newCloningRunner(t, srv)
	refused(noClones, "no --clone-hosts", func(r *gen.CreateRunRequest) { r.RepoUrl = &good }, "/repo_url")
	plain := newRunner(t, t.TempDir(), t.TempDir())
	refused(plain, "no cloner", func(r *gen.CreateRunRequest) { r.RepoUrl = &good }, "/repo_url")
	if _, err := os.Stat(marker); err == nil {
		t.Error("an ext:: transport ran its command")
	}
	if n := other.Requests(); n != 0 {
		t.Errorf("the server not allowed got %d requests", n)
	}
	// Only the no-such-commit one reached the server (a clone and a fetch).
	if ents := clones(t, c.Dir); len(ents) != 1 {
		t.Errorf("the clone cache holds %d entries, want the one good URL's", len(ents))
	}
	if srv.Requests() == before {
		t.Error("the good URL was never cloned")
	}
}

// A cache inside the workspace root, which runs may write, is refused.
func TestCloneCacheOutsideTheWorkspaceRoot(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for _, dir := range []string{filepath.Join(root, "clones"), root} {
		_, err := runner.New(runner.Config{DataDir: t.TempDir(), WorkspaceRoot: root, Clones: &runner.Cloner{Dir: dir, Hosts: []string{"example.com"}}})
		if err == nil || !strings.Contains(err.Error(), "clone cache") {
			t.Errorf("a clone cache at %s: %v, want a refusal", dir, err)
		}
	}
}

// Isolated runs of a repository given as a URL work in work trees of one
// clone of it: parallel runs clone it once, each patch holds its own
// change, a later commit is fetched when a run names it, and a branch
// name is fetched again.
func TestIsolatedRunsOfARepoURL(t *testing.T) {
	t.Parallel()
	srv := githttps.Start(t)
	repo, commit := gitRepo(t)
	u := srv.Publish(t, "r", repo)
	base, _ := gitcheckout.Resolve(context.Background(), repo, "HEAD")
	worktree := gen.CreateRunRequestIsolationWorktree
	ctx := context.Background()
	run := func(rn *runner.Runner, rev, content string) gen.Run {
		t.Helper()
		req := script(t, `{"type":"tool_call","tool_name":"write_file","arguments":{"path":"a.txt","content":"`+content+`\n"}}`, `{"type":"finish","answer":"done"}`)
		req.RepoUrl, req.Isolation, req.Commit = &u, &worktree, &rev
		r, err := rn.Create(ctx, req)
		if err != nil {
			t.Error(err)
			return gen.Run{}
		}
		return r
	}
	patchOf := func(rn *runner.Runner, id string) string {
		v := waitFor(t, rn, id, finished)
		if v.Result.ExitReason != gen.ExitReasonFinished || v.Result.Patch == nil {
			t.Fatalf("run %s: %+v", id, v.Result)
		}
		return *v.Result.Patch
	}

	// What one clone costs the server, in requests.
	first, _, _ := newCloningRunner(t, srv, srv.Host())
	n0 := srv.Requests()
	if p := patchOf(first, run(first, base, "one").Id); !strings.Contains(p, "-base\n+one\n") {
		t.Errorf("patch %q", p)
	}
	perClone := srv.Requests() - n0

	rn, c, root := newCloningRunner(t, srv, srv.Host())
	n1 := srv.Requests()
	var wg sync.WaitGroup
	ids := make([]string, 4)
	for i := range ids {
		wg.Go(func() { ids[i] = run(rn, base, "p"+string(rune('0'+i))).Id })
	}
	wg.Wait()
	if got := srv.Requests() - n1; got != perClone {
		t.Errorf("4 parallel runs made %d requests, want one clone's %d", got, perClone)
	}
	for i, id := range ids {
		if id == "" {
			continue
		}
		if p := patchOf(rn, id); !strings.Contains(p, "-base\n+p"+string(rune('0'+i))+"\n") {
			t.Errorf("run %d's patch %q", i, p)
		}
	}
	if ents := clones(t, c.Dir); len(ents) != 1 {
		t.Errorf("the clone cache holds %v, want one clone", ents)
	}
	if left, _ := os.ReadDir(filepath.Join(root, ".specloop-worktrees")); len(left) != 0 {
		t.Errorf("work trees left after the runs ended: %v", left)
	}
	if strings.HasPrefix(c.Dir, root) {
		t.Errorf("the clone cache %s is in the workspace root", c.Dir)
	}

	// A later commit, by hash and as the branch's head.
	next := commit("next")
	srv.Publish(t, "r", repo)
	if p := patchOf(rn, run(rn, next, "after").Id); !strings.Contains(p, "-next\n+after\n") {
		t.Errorf("the run at the later commit: patch %q", p)
	}
	last := commit("last")
	srv.Publish(t, "r", repo)
	if p := patchOf(rn, run(rn, "HEAD", "head").Id); !strings.Contains(p, "-last\n+head\n") {
		t.Errorf("the run at HEAD after a push (%s): patch %q", last, p)
	}
}

// The allow-list matches HOST for port 443 and HOST:PORT for that port,
// without case.
func TestCloneHostsMatch(t *testing.T) {
	t.Parallel()
	c := &runner.Cloner{Hosts: []string{"Example.com", "git.example.org:8443", "[::1]:9000", "10.0.0.1"}}
	for u, want := range map[string]bool{
		"https://example.com/r.git":          true,
		"https://EXAMPLE.com:443/r.git":      true,
		"https://example.com:8443/r.git":     false,
		"https://git.example.org:8443/r.git": true,
		"https://git.example.org/r.git":      false,
		"https://[::1]:9000/r.git":           true,
		"https://[::1]/r.git":                false,
		"https://10.0.0.1/r.git":             true,
		"https://evil.example.com/r.git":     false,
		"https://example.com.evil.org/r.git": false,
		"https://example.com@evil.org/r.git": false,
		"https://evil.org/example.com/r.git": false,
	} {
		if got := c.Check(u) == nil; got != want {
			t.Errorf("Check(%q) allowed = %v, want %v", u, got, want)
		}
	}
}

// A clone that fails says what git said, without quoting the URL.
func TestCloneFailureQuotesNoURL(t *testing.T) {
	t.Parallel()
	srv := githttps.Start(t)
	rn, _, _ := newCloningRunner(t, srv, srv.Host())
	u := srv.URL + "/no-such-repository.git"
	req := script(t, `{"type":"finish","answer":"done"}`)
	worktree := gen.CreateRunRequestIsolationWorktree
	req.RepoUrl, req.Isolation = &u, &worktree
	_, err := rn.Create(context.Background(), req)
	var re *runner.Error
	if !errors.As(err, &re) || re.Field != "/repo_url" || !strings.Contains(re.Detail, "could not be cloned") || strings.Contains(re.Detail, "no-such-repository") {
		t.Errorf("Create = %v", err)
	}
}

// git works in the sandbox of a repo_url run: its work tree borrows the
// clone's objects, in the clone cache outside the workspace root, which
// the run's setup and check (sandboxed as run_command is) read.
func TestRepoURLRunGitInSandbox(t *testing.T) {
	t.Parallel()
	needSandbox(t)
	srv := githttps.Start(t)
	repo, _ := gitRepo(t)
	u := srv.Publish(t, "r", repo)
	head, _ := gitcheckout.Resolve(context.Background(), repo, "HEAD")
	c := &runner.Cloner{Hosts: []string{srv.Host()}, Remote: gitcheckout.Remote{CAFile: srv.CAFile}}
	rn, err := runner.New(runner.Config{DataDir: t.TempDir(), WorkspaceRoot: t.TempDir(), Clones: c, AllowCommands: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rn.Shutdown(context.Background()) })
	worktree := gen.CreateRunRequestIsolationWorktree
	req := script(t, `{"type":"tool_call","tool_name":"write_file","arguments":{"path":"a.txt","content":"one\n"}}`, `{"type":"finish","answer":"done"}`)
	req.RepoUrl, req.Isolation = &u, &worktree
	isHead := "git log -1 --format=%H | grep -qx " + head
	req.Setup = new(isHead)
	req.Check = new(isHead + " && git diff | grep -qx +one")
	setupAndCheckPass(t, rn, req, "the repo_url run's sandbox")
}

// Two processes that share a clone cache (an API server and a worker, two
// workers), here two runners on one cache directory, clone a URL once
// between them: the lock of a cache entry is a file lock, not a lock of
// one process.
func TestRunnersSharingACloneCacheCloneOnce(t *testing.T) {
	t.Parallel()
	srv := githttps.Start(t)
	repo, _ := gitRepo(t)
	u := srv.Publish(t, "shared", repo)
	base, _ := gitcheckout.Resolve(context.Background(), repo, "HEAD")
	worktree := gen.CreateRunRequestIsolationWorktree
	ctx := context.Background()

	// What one clone costs, in requests.
	solo, _, _ := newCloningRunner(t, srv, srv.Host())
	n0 := srv.Requests()
	req := script(t, `{"type":"finish","answer":"done"}`)
	req.RepoUrl, req.Isolation, req.Commit = &u, &worktree, &base
	r, err := solo.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, solo, r.Id, finished)
	perClone := srv.Requests() - n0

	dir := filepath.Join(t.TempDir(), "clones")
	a, _, _ := newCloningRunnerOn(t, srv, dir, srv.Host())
	b, _, _ := newCloningRunnerOn(t, srv, dir, srv.Host())
	n1 := srv.Requests()
	var wg sync.WaitGroup
	ids := make([]string, 4)
	for i, rn := range []*runner.Runner{a, b, a, b} {
		wg.Go(func() {
			r, err := rn.Create(ctx, req)
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = r.Id
		})
	}
	wg.Wait()
	for i, rn := range []*runner.Runner{a, b, a, b} {
		if ids[i] != "" {
			if v := waitFor(t, rn, ids[i], finished); v.Result.ExitReason != gen.ExitReasonFinished {
				t.Errorf("run %d: %+v", i, v.Result)
			}
		}
	}
	if got := srv.Requests() - n1; got != perClone {
		t.Errorf("two runners sharing a cache made %d requests for 4 runs, want one clone's %d", got, perClone)
	}
	if ents := clones(t, dir); len(ents) != 1 {
		t.Errorf("the shared cache holds %v, want one clone", ents)
	}
}
