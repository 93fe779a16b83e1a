package tools

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// OpenWorkspaceIn opens the directory name under parent as a workspace,
// through parent: a name that leads out of it (by "..", or a symbolic
// link on the way) is refused, as os.Root refuses it. The workspace holds
// its own handle on the directory it opened, so renaming the directory or
// replacing it with a symbolic link afterwards changes nothing for the
// file tools. name "." opens parent's own directory again.
//
// Dir is the real path of the opened directory, read back from the
// handle, never the name it was reached by.
func OpenWorkspaceIn(parent *os.Root, name string) (*Workspace, error) {
	root, err := parent.OpenRoot(name)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	dir, err := rootPath(root, filepath.Join(parent.Name(), name))
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("workspace: %w", err)
	}
	return newWorkspace(dir, root), nil
}

// rootPath returns the real path of root's directory: what the kernel
// says the handle's path is (/proc/self/fd), or else guess (the path it
// was opened by, with symbolic links resolved) when that names the very
// same directory.
func rootPath(root *os.Root, guess string) (string, error) {
	d, err := root.Open(".")
	if err != nil {
		return "", err
	}
	defer d.Close()
	// The kernel's path of a directory that was removed ends with
	// " (deleted)"; such a directory has no path.
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(d.Fd())))
	if err == nil && filepath.IsAbs(p) && !strings.HasSuffix(p, " (deleted)") {
		return p, nil
	}
	fi, err := d.Stat()
	if err != nil {
		return "", err
	}
	if p, err := filepath.EvalSymlinks(guess); err == nil {
		if p, err = filepath.Abs(p); err == nil {
			if pi, err := os.Stat(p); err == nil && os.SameFile(fi, pi) {
				return p, nil
			}
		}
	}
	return "", errors.New("the directory has no path any more (it was moved or removed)")
}
