package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"path"
	"path/filepath"
	"strings"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/gitcheckout"
	"github.com/specloop/specloop/internal/textclip"
)

// isolatedDir is the directory under the workspace root that holds the
// work trees of the runs created with isolation worktree, one each,
// removed when the run ends. A request may not name a workspace in it.
const isolatedDir = ".specloop-worktrees"

var errContinueIsolated = &Error{Kind: Conflict, Detail: "the run worked in a work tree of its own (isolation worktree), removed when it ended: its patch is what it delivered; start a new run"}

// isolated says whether sp asks for a work tree of its own.
func isolated(sp *Spec) bool {
	return sp.Isolation != nil && *sp.Isolation == gen.CreateRunRequestIsolationWorktree
}

// inIsolated says whether the workspace name (as the API shows it) is, or
// is inside, the directory of isolated work trees; without case, as a
// file system may ignore it.
func inIsolated(name string) bool {
	first, _, _ := strings.Cut(name, "/")
	return strings.EqualFold(first, isolatedDir)
}

// isolate makes the work tree of a run created with isolation worktree: a
// checkout of commit of the repository whose top is the workspace
// (gitcheckout.Make: a repository of its own, sharing the workspace's
// objects read-only, running nothing its configuration names), and
// returns its workspace name.
func (s *Runner) isolate(ctx context.Context, workspace, commit *string) (string, error) {
	if s.cfg.Engine != nil {
		return "", badField("/isolation", "isolation worktree needs the embedded engine: an engine's workers open workspaces under their own root")
	}
	name, root, err := s.ws.open(workspace, "/workspace")
	if err != nil {
		return "", err
	}
	_, err = root.Lstat(".git")
	root.Close()
	if err != nil {
		return "", badField("/isolation", "isolation worktree needs a workspace that is the top of a git repository (it holds .git)")
	}
	repo := filepath.Join(s.cfg.WorkspaceRoot, filepath.FromSlash(name))
	rev := gen.DefaultCreateRunRequestCommit
	if commit != nil {
		rev = *commit
	}
	hash, err := gitcheckout.Resolve(ctx, repo, rev)
	if err != nil {
		return "", badField("/commit", "names no commit of the workspace's repository")
	}
	objects, err := gitcheckout.Objects(ctx, repo)
	if err != nil {
		return "", badField("/isolation", "the workspace's repository has no object store git can name")
	}
	var id [8]byte
	_, _ = rand.Read(id[:])
	wt := path.Join(isolatedDir, hex.EncodeToString(id[:]))
	if err := gitcheckout.Make(ctx, objects, hash, filepath.Join(s.cfg.WorkspaceRoot, filepath.FromSlash(wt))); err != nil {
		s.dropIsolated(wt)
		s.log.Error("make an isolated run's work tree", "err", textclip.Clip(err.Error(), 500))
		return "", &Error{Kind: Internal, Detail: "the run's work tree could not be made"}
	}
	return wt, nil
}

// dropIsolated removes the work tree of an isolated run whose workspace
// is name; names outside the isolated directory are left alone.
func (s *Runner) dropIsolated(name string) {
	if !inIsolated(name) || name == isolatedDir || s.ws == nil {
		return
	}
	if err := s.ws.root.RemoveAll(filepath.FromSlash(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.log.Warn("remove an isolated run's work tree", "workspace", name, "err", err)
	}
}
