// Package gittest runs git in tests as a person would after a run: outside
// any sandbox and hermetically (no user or system configuration), to tell
// whether an attack a run planted executes.
package gittest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Env is the environment of a person's git: PATH, an empty home and
// configuration, and an author.
func Env(home string) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_CONFIG_HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + filepath.Join(home, "none"),
		"GIT_AUTHOR_NAME=p", "GIT_AUTHOR_EMAIL=p@example.com", "GIT_COMMITTER_NAME=p", "GIT_COMMITTER_EMAIL=p@example.com"}
}

// Ran runs each git command line in dir with env (Env plus extra) and
// reports whether marker exists afterwards: whether what an attack
// planted ran. Failures of git itself are ignored.
func Ran(t *testing.T, dir, marker string, extra []string, commands ...[]string) bool {
	t.Helper()
	env := append(Env(t.TempDir()), extra...)
	for _, args := range commands {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, env
		_, _ = cmd.CombinedOutput()
	}
	_, err := os.Stat(marker)
	return err == nil
}

// StatusRan reports whether `git status` in dir ran what an attack
// planted (it creates marker).
func StatusRan(t *testing.T, dir, marker string) bool {
	t.Helper()
	return Ran(t, dir, marker, nil, []string{"status"})
}

// CommitRan reports whether a status, a commit and a checkout in dir ran
// what an attack planted: fsmonitor, pre-commit and post-checkout hooks.
func CommitRan(t *testing.T, dir, marker string) bool {
	t.Helper()
	return Ran(t, dir, marker, nil, []string{"status"}, []string{"commit", "-q", "--allow-empty", "-m", "person"}, []string{"checkout", "-q", "-b", "person"})
}
