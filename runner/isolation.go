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
// isolation worktree, of the workspace or of a clone of repoURL, and
// returns its workspace name (an engine's workers make theirs:
// MakeWorkTree).
func (s *Runner) isolate(ctx context.Context, workspace, repoURL, commit *string) (string, error) {
	src := WorkTreeSource{RepoURL: deref(repoURL), Commit: deref(commit)}
	if src.RepoURL == "" {
		name, root, err := s.ws.open(workspace, "/workspace")
		if err != nil {
			return "", err
		}
		root.Close()
		src.Workspace = name
	}
	var id [8]byte
	_, _ = rand.Read(id[:])
	wt := path.Join(IsolatedDir, hex.EncodeToString(id[:]))
	if err := MakeWorkTree(ctx, s.cfg.WorkspaceRoot, s.cfg.Clones, src, wt); err != nil {
		s.dropIsolated(wt)
		var re *Error
		if errors.As(err, &re) {
			return "", re
		}
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		s.log.Error("make an isolated run's work tree", "err", textclip.Clip(err.Error(), 500))
		return "", &Error{Kind: Internal, Detail: "the run's work tree could not be made"}
	}
	return wt, nil
}

// WorkTreeSource is what an isolated run's work tree is made of.
type WorkTreeSource struct {
	// Workspace is the workspace (as the API names it: "" or "." for the
	// root) whose repository the work tree is of, unless RepoURL is set.
	Workspace string
	// RepoURL, when set, is the URL of the repository the work tree is
	// of, cloned into the clone cache (Cloner).
	RepoURL string
	// Commit is the revision ("" for HEAD).
	Commit string
}

// MakeWorkTree makes the work tree of a run created with isolation
// worktree, at the workspace name wt under the workspace root root: a
// checkout of src's commit of the repository whose top is src's
// workspace, or of the clone of src's URL that clones keeps (nil: none
// is cloned), made a repository of its own that shares the objects
// read-only and runs nothing their repository's configuration names
// (gitcheckout.Make). A source or commit that cannot be is an *Error
// naming the request's field.
func MakeWorkTree(ctx context.Context, root string, clones *Cloner, src WorkTreeSource, wt string) error {
	rev := cmp.Or(src.Commit, gen.DefaultCreateRunRequestCommit)
	dst := filepath.Join(root, filepath.FromSlash(wt))
	if src.RepoURL != "" {
		repo, hash, err := clones.fetch(ctx, src.RepoURL, rev)
		if err != nil {
			return err
		}
		return gitcheckout.Make(ctx, filepath.Join(repo, "objects"), hash, dst)
	}
	from := src.Workspace
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
	hash, err := gitcheckout.Resolve(ctx, repo, rev)
	if err != nil {
		return badField("/commit", "names no commit of the workspace's repository")
	}
	objects, err := gitcheckout.Objects(ctx, repo)
	if err != nil {
		return badField("/isolation", "the workspace's repository has no object store git can name")
	}
	return gitcheckout.Make(ctx, objects, hash, dst)
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
