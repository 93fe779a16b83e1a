package tools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

const (
	// patchTimeout bounds the git commands that compute a patch.
	patchTimeout = time.Minute
	// maxPatchBytes caps a run's patch; a longer one is cut with a note.
	maxPatchBytes = 4 << 20
)

// Patch returns the changes the run made to the runtime's workspace, as a
// unified diff (it implements agent.Patcher); empty without a workspace or
// when no tool that can change files (edit_file, write_file, run_command)
// was called.
//
// In a git work tree it is `git diff` between two snapshots of the
// workspace, one taken just before the first such tool call and one now, so
// new files and changes made by commands are included and changes that were
// there before the run are not. The snapshots are trees written with a
// temporary copy of the index: the repository's index, branches and working
// tree are never changed (the snapshots only add objects, which git gc
// removes). Elsewhere, or when git fails, it is the diff of every file the
// file tools changed, against its content before their first change.
func (r *Runtime) Patch(ctx context.Context) (string, error) {
	if r.env.Workspace == nil {
		return "", nil
	}
	return r.env.Workspace.patch(ctx)
}

// changing is called before a tool call that may change files: the first
// time, it takes the git snapshot the patch is computed against.
func (w *Workspace) changing(ctx context.Context) {
	w.baseMu.Lock()
	defer w.baseMu.Unlock()
	if w.touched {
		return
	}
	w.touched = true
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), patchTimeout)
	defer cancel()
	if tree, err := w.gitSnapshot(ctx); err == nil {
		w.baseTree = tree
	}
}

func (w *Workspace) patch(ctx context.Context) (string, error) {
	w.baseMu.Lock()
	touched, base := w.touched, w.baseTree
	w.baseMu.Unlock()
	if !touched {
		return "", nil
	}
	ctx, cancel := context.WithTimeout(ctx, patchTimeout)
	defer cancel()
	var p string
	var err error
	if base != "" {
		p, err = w.gitDiffSince(ctx, base)
	}
	if base == "" || err != nil {
		// Not a git work tree, or git failed on it: the file tools' record
		// still says what they changed.
		if p, err = w.toolPatch(); err != nil {
			return "", err
		}
	}
	if len(p) > maxPatchBytes {
		cut := maxPatchBytes
		for cut > 0 && p[cut-1] != '\n' {
			cut--
		}
		p = p[:cut] + fmt.Sprintf("[patch cut: %d more bytes]\n", len(p)-cut)
	}
	return p, nil
}

// toolPatch diffs the files the file tools changed against their originals.
func (w *Workspace) toolPatch() (string, error) {
	w.mu.Lock()
	paths := make([]string, 0, len(w.original))
	for p := range w.original {
		paths = append(paths, p)
	}
	originals := make(map[string]originalFile, len(w.original))
	for p, o := range w.original {
		originals[p] = o
	}
	w.mu.Unlock()
	slices.Sort(paths)
	var b strings.Builder
	for _, p := range paths {
		o := originals[p]
		cur, _, err := w.readRegular(p)
		exists := err == nil
		if err != nil {
			var te *Error
			if !errors.As(err, &te) {
				return "", err
			}
			cur = nil // gone, or no longer a regular file
		}
		b.WriteString(fileDiff(p, o.content, o.existed, cur, exists))
	}
	return b.String(), nil
}

// errNotGit: the workspace is not in a git work tree (or git is missing).
var errNotGit = errors.New("not a git work tree")

// gitSnapshot writes the current state of the workspace (tracked files as
// they are now, untracked files that are not ignored, deletions) as a git
// tree and returns its id. It works on a temporary copy of the index.
func (w *Workspace) gitSnapshot(ctx context.Context) (string, error) {
	inside, err := w.git(ctx, nil, "rev-parse", "--is-inside-work-tree")
	if err != nil || strings.TrimSpace(inside) != "true" {
		return "", errNotGit
	}
	indexPath, err := w.git(ctx, nil, "rev-parse", "--git-path", "index")
	if err != nil {
		return "", err
	}
	indexPath = strings.TrimSpace(indexPath)
	if !filepath.IsAbs(indexPath) {
		indexPath = filepath.Join(w.dir, indexPath)
	}
	dir, err := os.MkdirTemp("", "specloop-index-*")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	tmpIndex := filepath.Join(dir, "index")
	if err := copyFile(tmpIndex, indexPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	env := []string{"GIT_INDEX_FILE=" + tmpIndex, "GIT_OPTIONAL_LOCKS=0"}
	// The workspace's part of the work tree; the rest of the tree is the
	// index's.
	if _, err := w.git(ctx, env, "add", "--all", "--", "."); err != nil {
		return "", err
	}
	tree, err := w.git(ctx, env, "write-tree")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(tree), nil
}

// gitDiffSince is the diff of the workspace from the snapshot base to now.
func (w *Workspace) gitDiffSince(ctx context.Context, base string) (string, error) {
	now, err := w.gitSnapshot(ctx)
	if err != nil {
		return "", err
	}
	return w.git(ctx, nil, "-c", "core.quotePath=false", "diff", "--no-color", "--no-ext-diff", "--no-textconv",
		"--relative", "--src-prefix=a/", "--dst-prefix=b/", base, now, "--", ".")
}

func copyFile(dst, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// git runs git in the workspace with extra environment variables.
func (w *Workspace) git(ctx context.Context, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = w.dir
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		if msg := strings.TrimSpace(errOut.String()); msg != "" {
			return "", fmt.Errorf("%w: %s", err, clip(msg, 300))
		}
		return "", err
	}
	return out.String(), nil
}
