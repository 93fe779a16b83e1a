package sandbox_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/specloop/specloop/internal/gittest"
	"github.com/specloop/specloop/sandbox"
)

// gitRan reports whether `git status` in dir, run as a person would,
// ran the command an attack planted (it creates marker).
func gitRan(t *testing.T, dir, marker string) bool {
	t.Helper()
	return gittest.StatusRan(t, dir, marker)
}

func gitInit(t *testing.T, dir string) {
	t.Helper()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
}

// runGuarded runs script in dir and returns the guard's error, if any.
func runGuarded(t *testing.T, p sandbox.Policy, dir, script string) (sandbox.Result, *sandbox.GitError) {
	t.Helper()
	r, err := runScript(t, p, dir, script, time.Minute)
	var ge *sandbox.GitError
	if err != nil && !errors.As(err, &ge) {
		t.Fatalf("run: %v", err)
	}
	if r.res.ExitCode != 0 {
		t.Fatalf("the script failed (%d): %s%s", r.res.ExitCode, r.stdout, r.stderr)
	}
	return r.res, ge
}

// fsmonitorConfig is a git configuration that runs touch marker on git
// status.
func fsmonitorConfig(marker string, worktree bool) string {
	cfg := "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = touch " + marker + "\n"
	if worktree {
		cfg += "\tworktree = .\n"
	}
	return cfg
}

// TestCommandsBuildNoGitDirectory: a command, under every backend, cannot
// leave behind a git directory or a change to one that the person's next
// git command in the workspace would run: it is undone, and the call
// fails naming it. None is the control: there each attack works, so the
// probe would catch a sandbox that lets it. It failed before the guard:
// only the top-level .git was read-only.
func TestCommandsBuildNoGitDirectory(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	attacks := []struct {
		name string
		// setup returns the workspace and the directory git runs in.
		setup  func(t *testing.T) (ws, gitDir string)
		script func(marker string) string
		// kept are files that were there before and must stay.
		kept []string
	}{
		{"a .git in a workspace inside a repository", func(t *testing.T) (string, string) {
			outer := t.TempDir()
			gitInit(t, outer)
			ws := filepath.Join(outer, "ws")
			os.Mkdir(ws, 0o755)
			return ws, ws
		}, func(m string) string {
			return "mkdir -p .git/objects .git/refs .git/hooks && echo 'ref: refs/heads/main' > .git/HEAD && printf '" + fsmonitorConfig(m, false) + "' > .git/config"
		}, nil},
		{"a nested repository's config and hooks", func(t *testing.T) (string, string) {
			ws := t.TempDir()
			gitInit(t, filepath.Join(ws, "vendor/x"))
			return ws, filepath.Join(ws, "vendor/x")
		}, func(m string) string {
			return "printf '" + fsmonitorConfig(m, false) + "' >> vendor/x/.git/config && printf '#!/bin/sh\\ntouch " + m + "\\n' > vendor/x/.git/hooks/pre-commit && chmod +x vendor/x/.git/hooks/pre-commit"
		}, []string{"vendor/x/.git/HEAD", "vendor/x/.git/hooks/pre-push.sample"}},
		{"a bare-shaped directory", func(t *testing.T) (string, string) {
			ws := t.TempDir()
			os.MkdirAll(filepath.Join(ws, "sub"), 0o755)
			os.WriteFile(filepath.Join(ws, "sub", "notes.txt"), []byte("mine\n"), 0o644)
			return ws, filepath.Join(ws, "sub")
		}, func(m string) string {
			return "mkdir -p sub/objects sub/refs && echo 'ref: refs/heads/main' > sub/HEAD && printf '" + fsmonitorConfig(m, true) + "' > sub/config"
		}, []string{"sub/notes.txt"}},
		{"a .git file pointing at a git directory the command built", func(t *testing.T) (string, string) {
			ws := t.TempDir()
			os.MkdirAll(filepath.Join(ws, "app"), 0o755)
			return ws, filepath.Join(ws, "app")
		}, func(m string) string {
			return "mkdir -p meta/d/objects meta/d/refs && echo 'ref: refs/heads/main' > meta/d/HEAD && printf '" + fsmonitorConfig(m, false) + "' > meta/d/config && echo 'gitdir: ../meta/d' > app/.git"
		}, nil},
	}
	conf := confining(t)
	for _, b := range withControl(t) {
		for i, a := range attacks {
			t.Run(string(b)+"/"+a.name, func(t *testing.T) {
				shortTurn(t, i, b, conf)
				t.Parallel()
				ws, gitDir := a.setup(t)
				kept := map[string][]byte{}
				for _, p := range a.kept {
					data, err := os.ReadFile(filepath.Join(ws, p))
					if err != nil {
						t.Fatal(err)
					}
					kept[p] = data
				}
				marker := filepath.Join(t.TempDir(), "PWNED")
				_, ge := runGuarded(t, sandbox.Policy{Backend: b}, ws, a.script(marker))
				ran := gitRan(t, gitDir, marker)
				if b == sandbox.None {
					if !ran {
						t.Fatal("control: unconfined, the attack did not work, so the probe proves nothing")
					}
					return
				}
				if ran {
					t.Fatal("git status ran what the command planted")
				}
				if ge == nil || len(ge.Paths) == 0 {
					t.Fatalf("the call did not fail naming the undone paths: %v", ge)
				}
				for p, data := range kept {
					if got, err := os.ReadFile(filepath.Join(ws, p)); err != nil || !bytes.Equal(got, data) {
						t.Errorf("%s, there before, was not kept: %v", p, err)
					}
				}
			})
		}
	}
}

// TestGuardAllowGitWrites: with git writes allowed, a command may commit
// (objects, refs, index, logs, HEAD of the top-level .git) but not change
// its configuration or hooks.
func TestGuardAllowGitWrites(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	for _, b := range confining(t) {
		t.Run(string(b), func(t *testing.T) {
			ws := t.TempDir()
			gitInit(t, ws)
			cfg, _ := os.ReadFile(filepath.Join(ws, ".git", "config"))
			p := sandbox.Policy{Backend: b, AllowGitWrites: true}
			commit := "echo x > f && git -c user.name=t -c user.email=t@x add f && git -c user.name=t -c user.email=t@x commit -qm x && git checkout -qb other"
			if _, ge := runGuarded(t, p, ws, commit); ge != nil {
				t.Fatalf("a commit was refused: %v", ge)
			}
			if head, _ := os.ReadFile(filepath.Join(ws, ".git", "HEAD")); string(head) != "ref: refs/heads/other\n" {
				t.Fatalf("HEAD: %q", head)
			}
			_, ge := runGuarded(t, p, ws, "echo '[core] fsmonitor = x' >> .git/config && echo x > .git/hooks/post-commit")
			if ge == nil {
				t.Fatal("the config and hook changes were not refused")
			}
			if got, _ := os.ReadFile(filepath.Join(ws, ".git", "config")); !bytes.Equal(got, cfg) {
				t.Fatalf("the config was not restored: %q", got)
			}
			if _, err := os.Stat(filepath.Join(ws, ".git", "hooks", "post-commit")); err == nil {
				t.Fatal("the new hook was not removed")
			}
			if !strings.Contains(ge.Error(), ".git/config") {
				t.Fatalf("the error does not name the config: %v", ge)
			}
		})
	}
}

// TestGuardSharedBaseline: commands that run at once in one directory are
// all checked against the state before the first of them started. A
// command that starts after another changed a nested repository's config
// must not take the change for how things were, and restore it when the
// first command's change was undone. Conditions, not timing, order the
// two commands (a generous deadline only guards against a hang).
func TestGuardSharedBaseline(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	for _, b := range confining(t) {
		t.Run(string(b), func(t *testing.T) {
			ws := t.TempDir()
			gitInit(t, filepath.Join(ws, "x"))
			cfgPath := filepath.Join(ws, "x", ".git", "config")
			original, err := os.ReadFile(cfgPath)
			if err != nil {
				t.Fatal(err)
			}
			wait := func(cond string) string {
				return "i=0; until " + cond + "; do i=$((i+1)); [ $i -gt 3000 ] && exit 9; sleep 0.01; done"
			}
			// First: changes the config, then waits for the second to run.
			first := make(chan *sandbox.GitError, 1)
			go func() {
				_, ge := runGuardedNoFatal(sandbox.Policy{Backend: b}, ws, "echo '[core] fsmonitor = evil' >> x/.git/config && touch first-wrote && "+wait("[ -e second-started ]"))
				first <- ge
			}()
			deadline := time.Now().Add(30 * time.Second)
			for {
				if _, err := os.Stat(filepath.Join(ws, "first-wrote")); err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the first command did not run")
				}
				time.Sleep(10 * time.Millisecond)
			}
			// Second: starts now, and ends only after the first command's
			// change was undone.
			second := make(chan *sandbox.GitError, 1)
			go func() {
				_, ge := runGuardedNoFatal(sandbox.Policy{Backend: b}, ws, "touch second-started && "+wait("! grep -q evil x/.git/config"))
				second <- ge
			}()
			if ge := <-first; ge == nil {
				t.Error("the first command's change was not reported")
			}
			<-second
			if got, _ := os.ReadFile(cfgPath); !bytes.Equal(got, original) {
				t.Fatalf("the config is not the original after both commands:\n%s", got)
			}
		})
	}
}

// runGuardedNoFatal is runGuarded for a goroutine.
func runGuardedNoFatal(p sandbox.Policy, dir, script string) (sandbox.Result, *sandbox.GitError) {
	sb, err := sandbox.New(p)
	if err != nil {
		return sandbox.Result{}, nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return sandbox.Result{}, nil
	}
	defer d.Close()
	res, err := sb.Run(context.Background(), sandbox.Command{Args: []string{"/bin/sh", "-c", script}, Dir: d, DirPath: dir, Timeout: time.Minute})
	var ge *sandbox.GitError
	errors.As(err, &ge)
	return res, ge
}

// A git directory deeper than the guard walks: the part of the tree below
// the guard's depth that the command made goes whole; a deep tree that
// was there before fails every command, since the guard cannot vouch for
// what happens inside it.
func TestGuardDeepTrees(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	for _, b := range confining(t) {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			ws := t.TempDir()
			marker := filepath.Join(t.TempDir(), "PWNED")
			deep := strings.Repeat("a/", 300) + "x"
			plant := "mkdir -p " + deep + "/objects " + deep + "/refs && echo 'ref: refs/heads/main' > " + deep + "/HEAD && printf '" + fsmonitorConfig(marker, true) + "' > " + deep + "/config"
			_, ge := runGuarded(t, sandbox.Policy{Backend: b}, ws, plant)
			if ge == nil {
				t.Error("the call that planted a deep git directory did not fail")
			}
			if _, err := os.Lstat(filepath.Join(ws, deep)); !os.IsNotExist(err) {
				t.Fatalf("the deep git directory the command made is still there: %v", err)
			}
			if gitRan(t, filepath.Join(ws, strings.Repeat("a/", 200)), marker) {
				t.Fatal("git status in the deep tree ran what the command planted")
			}

			old := filepath.Join(ws, "old", strings.Repeat("b/", 300))
			if err := os.MkdirAll(old, 0o755); err != nil {
				t.Fatal(err)
			}
			_, ge = runGuarded(t, sandbox.Policy{Backend: b}, ws, "true")
			if ge == nil || len(ge.Unchecked) != 1 || !strings.Contains(ge.Unchecked[0], "deeper than the guard walks") {
				t.Fatalf("a command beside a deep tree that was there before: %v, want a failure that names it", ge)
			}
			if _, err := os.Stat(old); err != nil {
				t.Fatalf("the deep tree that was there before is gone: %v", err)
			}
		})
	}
}
