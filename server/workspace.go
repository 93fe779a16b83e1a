package server

import (
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

// workspaces resolves workspace names: directories under the workspace root,
// named by a relative path that is validated like a tool path.
type workspaces struct {
	dir  string   // the root, absolute with symlinks resolved
	root *os.Root // confines lookups to the root
}

func openWorkspaces(dir string) (*workspaces, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(real)
	if err != nil {
		return nil, err
	}
	return &workspaces{dir: real, root: root}, nil
}

func (w *workspaces) close() error { return w.root.Close() }

// resolve validates a workspace name and returns it cleaned ("" for the
// root) and the directory it names. field names the request field for the
// problem: the name must be relative, without "..", must stay inside the
// root (symlinks included) and must be an existing directory.
func (w *workspaces) resolve(name *string, field string) (clean, dir string, err error) {
	if name == nil || *name == "" {
		return "", w.dir, nil
	}
	n := *name
	if strings.ContainsRune(n, 0) || strings.Contains(n, `\`) || filepath.IsAbs(n) || strings.HasPrefix(n, "/") {
		return "", "", badField(field, "the workspace must be a relative path with forward slashes")
	}
	for _, part := range strings.Split(n, "/") {
		if part == ".." {
			return "", "", badField(field, "the workspace must not contain ..")
		}
	}
	clean = filepath.Clean(n)
	if !filepath.IsLocal(clean) && clean != "." {
		return "", "", badField(field, "the workspace must be a path inside the workspace root")
	}
	if clean == "." {
		return "", w.dir, nil
	}
	// os.Root refuses to follow anything out of the root.
	info, err := w.root.Stat(clean)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", "", &problemError{status: http.StatusNotFound, field: field, detail: "the workspace does not exist"}
	case err != nil:
		return "", "", badField(field, "the workspace is not inside the workspace root")
	case !info.IsDir():
		return "", "", badField(field, "the workspace is not a directory")
	}
	// The directory's real path keys the one-run-per-workspace rule, so
	// that two names of one directory share it.
	real := filepath.Join(w.dir, clean)
	if w.hasSymlink(clean) {
		if real, err = filepath.EvalSymlinks(real); err != nil {
			return "", "", &problemError{status: http.StatusNotFound, field: field, detail: "the workspace does not exist"}
		}
		if rel, err := filepath.Rel(w.dir, real); err != nil || !filepath.IsLocal(rel) && rel != "." {
			return "", "", badField(field, "the workspace is not inside the workspace root")
		}
	}
	return filepath.ToSlash(clean), real, nil
}

// hasSymlink reports whether a component of the clean relative path is a
// symbolic link (or cannot be examined).
func (w *workspaces) hasSymlink(clean string) bool {
	for i := 0; i <= len(clean); i++ {
		if i < len(clean) && clean[i] != filepath.Separator {
			continue
		}
		info, err := w.root.Lstat(clean[:i])
		if err != nil || info.Mode()&fs.ModeSymlink != 0 {
			return true
		}
	}
	return false
}
