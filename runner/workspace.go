package runner

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/specloop/specloop/internal/wslock"
)

// workspaces opens workspaces: directories under the workspace root, named
// by a relative path that is validated like a tool path. A workspace is
// resolved once, by opening its directory through the root's os.Root, and
// afterwards only that handle is used: replacing the directory (by a
// symbolic link to somewhere else, say) between a request's resolution
// and its use, or while a run waits in the queue, changes nothing.
type workspaces struct {
	root *os.Root // confines lookups to the root

	mu   sync.Mutex
	held map[string]*heldWorkspace // by identity of the directory
}

// heldWorkspace is a workspace directory held open for the runs accepted
// in it, from their creation to their end. The runs of one directory
// share one handle, whatever name they gave it.
type heldWorkspace struct {
	root *os.Root
	key  string // the directory's identity (device and inode)
	refs int    // guarded by workspaces.mu
}

func openWorkspaces(dir string) (*workspaces, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &workspaces{root: root, held: map[string]*heldWorkspace{}}, nil
}

// close closes the root and every handle still held.
func (w *workspaces) close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	errs := []error{w.root.Close()}
	for k, h := range w.held {
		errs = append(errs, h.root.Close())
		delete(w.held, k)
	}
	return errors.Join(errs...)
}

// clean validates a workspace name and returns it cleaned ("." for the
// root). field names the request field for the problem: the name must be
// relative, with forward slashes and without "..".
func cleanWorkspace(name *string, field string) (string, error) {
	if name == nil || *name == "" {
		return ".", nil
	}
	n := *name
	if strings.ContainsRune(n, 0) || strings.Contains(n, `\`) || filepath.IsAbs(n) || strings.HasPrefix(n, "/") {
		return "", badField(field, "the workspace must be a relative path with forward slashes")
	}
	if slices.Contains(strings.Split(n, "/"), "..") {
		return "", badField(field, "the workspace must not contain ..")
	}
	clean := filepath.Clean(n)
	if !filepath.IsLocal(clean) && clean != "." {
		return "", badField(field, "the workspace must be a path inside the workspace root")
	}
	return clean, nil
}

// open validates a workspace name and opens its directory through the
// root, which refuses anything that leads out of it (symbolic links
// included). It returns the name as the API shows it ("" for the root)
// and the open directory, which the caller closes.
func (w *workspaces) open(name *string, field string) (string, *os.Root, error) {
	clean, err := cleanWorkspace(name, field)
	if err != nil {
		return "", nil, err
	}
	root, err := w.root.OpenRoot(clean)
	if err != nil {
		return "", nil, openProblem(err, field)
	}
	if clean == "." {
		return "", root, nil
	}
	return filepath.ToSlash(clean), root, nil
}

// openProblem turns the error of opening a workspace into its problem.
func openProblem(err error, field string) error {
	var pe *fs.PathError
	inner := err
	if errors.As(err, &pe) {
		inner = pe.Err
	}
	switch {
	case errors.Is(err, syscall.ENOTDIR):
		return badField(field, "the workspace is not a directory")
	case errors.Is(err, fs.ErrNotExist):
		return &Error{Kind: NotFound, Field: field, Detail: "the workspace does not exist"}
	case errors.Is(err, fs.ErrPermission):
		return badField(field, "the workspace cannot be opened: permission denied")
	case errors.Is(err, syscall.ELOOP), inner != nil && strings.Contains(inner.Error(), "escapes"):
		return badField(field, "the workspace is not inside the workspace root")
	}
	return badField(field, "the workspace cannot be opened")
}

// hold opens a workspace for a run and holds it until release: the run
// executes in the directory its name resolved to when it was accepted.
// The handle's key is the directory's identity, so that two names of one
// directory share the one-run-per-workspace rule.
func (w *workspaces) hold(name *string, field string) (string, *heldWorkspace, error) {
	clean, root, err := w.open(name, field)
	if err != nil {
		return "", nil, err
	}
	fi, err := root.Stat(".")
	if err != nil {
		root.Close()
		return "", nil, badField(field, "the workspace cannot be opened")
	}
	key := wslock.Key(fi, clean)
	w.mu.Lock()
	defer w.mu.Unlock()
	if h := w.held[key]; h != nil {
		root.Close()
		h.refs++
		return clean, h, nil
	}
	h := &heldWorkspace{root: root, key: key, refs: 1}
	w.held[key] = h
	return clean, h, nil
}

// release drops a run's hold on its workspace; the last one closes it.
func (w *workspaces) release(h *heldWorkspace) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if h.refs--; h.refs > 0 {
		return
	}
	if w.held[h.key] == h {
		delete(w.held, h.key)
	}
	_ = h.root.Close()
}
