package eval

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// gitTimeout bounds one git command (a clone of a large repository
// included).
const gitTimeout = 30 * time.Minute

// git runs git in dir as the person would, with their own configuration,
// but with hooks and fsmonitor off and no terminal prompt: making and
// removing worktrees runs nothing a repository names. The error holds the
// end of what git printed.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	args = append([]string{"-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-C", dir}, args...)
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Env = append(cleanEnv(), "GIT_TERMINAL_PROMPT=0")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 500 {
			msg = "…" + msg[len(msg)-500:]
		}
		return "", fmt.Errorf("git %s: %w: %s", args[6], err, msg)
	}
	return strings.TrimSpace(stdout.String()), nil
}

// cleanEnv is the environment without the variables that point git at
// another repository, index or work tree than the one named.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_NAMESPACE":
			continue
		}
		env = append(env, kv)
	}
	return env
}

func cloneBare(ctx context.Context, url, dst string) error {
	if _, err := os.Stat(filepath.Join(dst, "HEAD")); err == nil {
		_, err := git(ctx, dst, "fetch", "--quiet", "origin", "+refs/heads/*:refs/heads/*")
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	_, err := git(ctx, filepath.Dir(dst), "clone", "--quiet", "--bare", "--", url, dst)
	return err
}

func resolve(ctx context.Context, repo, rev string) (string, error) {
	if strings.HasPrefix(rev, "-") {
		return "", fmt.Errorf("%q is not a revision", rev)
	}
	return git(ctx, repo, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
}

// addWorktree checks out commit, detached, in a new worktree at dir; a
// directory left there by an attempt that was stopped is removed first.
func addWorktree(ctx context.Context, repo, commit, dir string) error {
	if err := removeWorktree(ctx, repo, dir); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return err
	}
	_, err := git(ctx, repo, "worktree", "add", "--quiet", "--detach", "--", dir, commit)
	return err
}

// removeWorktree deletes dir and the repository's record of it. The
// directory is deleted by this process, not by git, so that nothing the
// run left in it is read by git (os.RemoveAll follows no link).
func removeWorktree(ctx context.Context, repo, dir string) error {
	err := os.RemoveAll(dir)
	if _, perr := git(ctx, repo, "worktree", "prune"); perr != nil {
		err = errors.Join(err, perr)
	}
	return err
}
