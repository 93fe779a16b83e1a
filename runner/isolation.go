package runner

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/gitcheckout"
	"github.com/specloop/specloop/internal/textclip"
)

// IsolatedDir is the directory under the workspace root that holds the
// work trees of the runs created with isolation worktree, one each,
// removed when the run ends. A request may not name a workspace in it.
const IsolatedDir = ".specloop-worktrees"

var errContinueIsolated = &Error{Kind: Conflict, Detail: "the run worked in a work tree of its own (isolation worktree), removed when it ended: its patch is what it delivered; start a new run"}

// Isolated says whether the run asks for a work tree of its own
// (isolation worktree).
func (sp *Spec) Isolated() bool {
	return sp.Isolation != nil && *sp.Isolation == gen.CreateRunRequestIsolationWorktree
}

// inIsolated says whether the workspace name (as the API shows it) is, or
// is inside, the directory of isolated work trees; without case, as a
// file system may ignore it.
func inIsolated(name string) bool {
	first, _, _ := strings.Cut(name, "/")
	return strings.EqualFold(first, IsolatedDir)
}

// isolate makes the work tree of a run the embedded engine executes with
// isolation worktree and returns its workspace name (an engine's workers
// make theirs: MakeWorkTree).
func (s *Runner) isolate(ctx context.Context, workspace, commit *string) (string, error) {
	name, root, err := s.ws.open(workspace, "/workspace")
	if err != nil {
		return "", err
	}
	root.Close()
	var id [8]byte
	_, _ = rand.Read(id[:])
	wt := path.Join(IsolatedDir, hex.EncodeToString(id[:]))
	if err := MakeWorkTree(ctx, s.cfg.WorkspaceRoot, name, deref(commit), wt); err != nil {
		s.dropIsolated(wt)
		var re *Error
		if errors.As(err, &re) {
			return "", re
		}
		s.log.Error("make an isolated run's work tree", "err", textclip.Clip(err.Error(), 500))
		return "", &Error{Kind: Internal, Detail: "the run's work tree could not be made"}
	}
	return wt, nil
}

// MakeWorkTree makes the work tree of a run created with isolation
// worktree, at the workspace name wt under the workspace root root: a
// checkout of commit ("" for HEAD) of the repository whose top is the
// workspace from (gitcheckout.Make: a repository of its own, sharing the
// workspace's objects read-only, running nothing its configuration
// names). A workspace or commit that cannot be is an *Error naming the
// request's field.
func MakeWorkTree(ctx context.Context, root, from, commit, wt string) error {
	// The workspace is opened through the root first, which refuses a
	// name that leads out of it (a symbolic link included).
	r, err := os.OpenRoot(root)
	if err != nil {
		return err
	}
	defer r.Close()
	dir := r
	if from != "" {
		if dir, err = r.OpenRoot(filepath.FromSlash(from)); err != nil {
			return openProblem(err, "/workspace")
		}
		defer dir.Close()
	}
	if fi, err := dir.Lstat(".git"); err != nil || fi.Mode()&fs.ModeSymlink != 0 {
		return badField("/isolation", "isolation worktree needs a workspace that is the top of a git repository (it holds .git)")
	}
	repo := filepath.Join(root, filepath.FromSlash(from))
	rev := cmp.Or(commit, gen.DefaultCreateRunRequestCommit)
	hash, err := gitcheckout.Resolve(ctx, repo, rev)
	if err != nil {
		return badField("/commit", "names no commit of the workspace's repository")
	}
	objects, err := gitcheckout.Objects(ctx, repo)
	if err != nil {
		return badField("/isolation", "the workspace's repository has no object store git can name")
	}
	return gitcheckout.Make(ctx, objects, hash, filepath.Join(root, filepath.FromSlash(wt)))
}

// dropIsolated removes the work tree of an isolated run whose workspace
// is name; names outside the isolated directory are left alone.
func (s *Runner) dropIsolated(name string) {
	if !inIsolated(name) || name == IsolatedDir || s.ws == nil {
		return
	}
	if err := s.ws.root.RemoveAll(filepath.FromSlash(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.log.Warn("remove an isolated run's work tree", "workspace", name, "err", err)
	}
}
