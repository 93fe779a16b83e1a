// Package gitcheckout makes git work trees of a commit, each a repository of
// its own that shares a repository's objects read-only, running nothing
// the repository configures: what specloop eval's attempts and the
// server's isolated runs work in.
package gitcheckout

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/specloop/specloop/internal/textclip"
)

// gitTimeout bounds one git command (a clone of a large repository
// included).
const gitTimeout = 30 * time.Minute

// git runs git in the task's repository dir as the person would, with
// their own configuration, but with hooks and fsmonitor off and no
// terminal prompt, for what only reads it (rev-parse) and for cloning a
// URL. The error holds the end of what git printed.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-C", dir}, args...)...)
	cmd.Env = append(cleanEnv(), "GIT_TERMINAL_PROMPT=0")
	return output(cmd, args[0])
}

// output runs git's cmd (its subcommand name) and returns what it printed;
// its error holds the end of what git printed on its standard error.
func output(cmd *exec.Cmd, name string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if tail := textclip.Tail(msg, 500); len(tail) < len(msg) {
			msg = "…" + tail
		}
		return "", fmt.Errorf("git %s: %w: %s", name, err, msg)
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

// CloneBare clones url, bare, into dst, or fetches its branches again
// when dst holds the clone already.
func CloneBare(ctx context.Context, url, dst string) error {
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

// Resolve returns the hash of the commit rev names in the repository repo.
func Resolve(ctx context.Context, repo, rev string) (string, error) {
	if strings.HasPrefix(rev, "-") {
		return "", fmt.Errorf("%q is not a revision", rev)
	}
	return git(ctx, repo, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
}

// Make makes dir a git work tree of its own, detached at commit: a
// repository made here, with no hooks and a configuration of this
// process's, whose objects are the task repository's, read as an
// alternate. Nothing of the task repository is changed, and nothing of its
// configuration, hooks, attributes' drivers or fsmonitor runs: git runs
// with no system or global configuration, and an info/attributes that
// unsets every driver and conversion, so the files are the commit's exact
// bytes. The alternates file names the store with its symbolic links
// resolved. A directory left at dir by an attempt that was stopped is
// removed first.
func Make(ctx context.Context, objects, commit, dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove what a stopped attempt left: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	gitDir := filepath.Join(dir, ".git")
	if err := private(ctx, dir, "init", "--quiet", "--template=", dir); err != nil {
		return err
	}
	// The store as the sandbox binds it, at its path with symbolic links
	// resolved (Alternates), so that git inside finds it there.
	if real, err := filepath.EvalSymlinks(objects); err == nil {
		objects = real
	}
	for name, text := range map[string]string{
		"objects/info/alternates": objects + "\n",
		"info/attributes":         "* -filter -text -eol -ident -working-tree-encoding\n",
	} {
		p := filepath.Join(gitDir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			return err
		}
	}
	return private(ctx, dir, "checkout", "--quiet", "--detach", commit)
}

// Apply applies patch, a unified diff as git diff writes it, to the work
// tree Make made at dir, as the same private git (no configuration, no
// attribute drivers): a patch made elsewhere, checked against a copy of
// the commit it was made at.
func Apply(ctx context.Context, dir string, patch []byte) error {
	if len(bytes.TrimSpace(patch)) == 0 {
		return nil
	}
	return privateIn(ctx, dir, bytes.NewReader(patch), "apply", "--whitespace=nowarn", "-")
}

// private runs git on the repository Make made at dir, in an environment
// built from scratch (see Make).
func private(ctx context.Context, dir string, args ...string) error {
	return privateIn(ctx, dir, nil, args...)
}

// privateIn is private with stdin as git's standard input.
func privateIn(ctx context.Context, dir string, stdin io.Reader, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	gitDir := filepath.Join(dir, ".git")
	cmd := exec.CommandContext(ctx, "git", append([]string{"-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"}, args...)...)
	cmd.Dir, cmd.Stdin = dir, stdin
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + gitDir, "XDG_CONFIG_HOME=" + gitDir, "LC_ALL=C",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_ATTR_NOSYSTEM=1", "GIT_NO_REPLACE_OBJECTS=1", "GIT_TERMINAL_PROMPT=0"}
	if args[0] != "init" {
		cmd.Env = append(cmd.Env, "GIT_DIR="+gitDir, "GIT_WORK_TREE="+dir)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		msg := strings.TrimSpace(string(out))
		if len(msg) > 500 {
			msg = "…" + msg[len(msg)-500:]
		}
		return fmt.Errorf("git %s: %w: %s", args[0], err, msg)
	}
	return nil
}

// Objects is the object store of the repository at repo.
func Objects(ctx context.Context, repo string) (string, error) {
	common, err := git(ctx, repo, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return "", err
	}
	return filepath.Join(common, "objects"), nil
}
