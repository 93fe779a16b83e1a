package wiring

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrRecordsInWorkspace is the error (wrapped) of CheckRecordsDir (and so
// of runner.New, and of Open for a transcript) when a directory of run
// records is the workspace root or inside it, or the workspace root is
// inside it. A run may read
// and write every file of the workspace root (a run that names no
// workspace works in the root itself), so run records there could be read,
// forged or wiped by any run.
var ErrRecordsInWorkspace = errors.New("run records would be reachable from runs")

// CheckRecordsDir returns an error wrapping ErrRecordsInWorkspace when dir,
// a directory of run records (the server's data directory, the Temporal
// store, a transcript's directory), is root or inside it, or root is inside dir. Paths are compared
// as the directories they are: symbolic links are resolved, and a
// directory is recognised by its identity (os.SameFile), so a differently
// spelled path (letter case on a case-insensitive file system, a bind
// mount) is no way around it. dir need not exist yet; root must.
func CheckRecordsDir(dir, root string) error {
	realDir, err := realPath(dir)
	if err != nil {
		return err
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err == nil {
		realRoot, err = filepath.Abs(realRoot)
	}
	if err != nil {
		return fmt.Errorf("workspace root: %w", err)
	}
	rootInfo, err := os.Stat(realRoot)
	if err != nil {
		return fmt.Errorf("workspace root: %w", err)
	}
	if a := ancestorLike(realDir, rootInfo); a != "" {
		if a == realDir {
			return fmt.Errorf("%w: %s is the workspace root", ErrRecordsInWorkspace, dir)
		}
		return fmt.Errorf("%w: %s is inside the workspace root %s", ErrRecordsInWorkspace, dir, root)
	}
	if dirInfo, err := os.Stat(realDir); err == nil {
		if ancestorLike(realRoot, dirInfo) != "" {
			return fmt.Errorf("%w: the workspace root %s is inside %s", ErrRecordsInWorkspace, root, dir)
		}
	}
	return nil
}

// ancestorLike returns the first of path and its parents that is the
// directory fi describes, or "".
func ancestorLike(path string, fi fs.FileInfo) string {
	for p := path; ; p = filepath.Dir(p) {
		if pi, err := os.Stat(p); err == nil && os.SameFile(pi, fi) {
			return p
		}
		if filepath.Dir(p) == p {
			return ""
		}
	}
}

// realPath is the absolute path of p with the symbolic links of its
// longest existing prefix resolved; the rest, which does not exist yet,
// is kept as written.
func realPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	var tail []string
	for q := abs; ; q = filepath.Dir(q) {
		r, err := filepath.EvalSymlinks(q)
		if err == nil {
			return filepath.Join(append([]string{r}, tail...)...), nil
		}
		if !errors.Is(err, fs.ErrNotExist) || filepath.Dir(q) == q {
			return "", err
		}
		tail = append([]string{filepath.Base(q)}, tail...)
	}
}
