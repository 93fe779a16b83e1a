//go:build !unix || walkroot

package fswalk

import (
	"io/fs"
	"os"
	"path"
	"strings"
	"sync/atomic"
	"syscall"
)

// nonblock makes opening a FIFO or a device return at once.
const nonblock = syscall.O_NONBLOCK

// Dir is an open directory of the workspace, shared by the files of
// it that are being visited; it is closed when the last user releases it.
// Without openat (this file is for the systems that are not Unix), its
// files and subdirectories are opened through the workspace's os.Root by
// their path, which keeps them inside the workspace, and each is checked
// to be the entry the directory listed, not a symbolic link. The walkroot
// build tag selects it on Unix too, so CI runs the tools tests over it
// (go test -tags walkroot ./tools/...).
type Dir struct {
	dir  *os.File
	root *os.Root
	rel  string // the directory's path in root
	refs atomic.Int32
}

func newDirHandle(root *os.Root, rel string, f *os.File) *Dir {
	d := &Dir{dir: f, root: root, rel: rel}
	d.refs.Store(1)
	return d
}

// openStart opens the directory start of root for a walk.
func openStart(root *os.Root, start string) (*Dir, error) {
	f, err := root.Open(start)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.IsDir() {
		f.Close()
		return nil, syscall.ENOTDIR
	}
	return newDirHandle(root, start, f), nil
}

// open opens the entry name of the directory, which must be of the kind
// want (a directory or a regular file) and not a symbolic link, both
// before it is opened and once it is.
func (d *Dir) open(name string, want fs.FileMode) (*os.File, os.FileInfo, error) {
	if !validName(name) || strings.ContainsRune(name, '\\') {
		return nil, nil, fs.ErrInvalid
	}
	p := path.Join(d.rel, name)
	before, err := d.root.Lstat(p)
	if err != nil {
		return nil, nil, err
	}
	if before.Mode().Type() != want {
		return nil, nil, fs.ErrInvalid
	}
	f, err := d.root.OpenFile(p, os.O_RDONLY|nonblock, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode().Type() != want || !os.SameFile(before, fi) {
		f.Close()
		return nil, nil, fs.ErrInvalid
	}
	return f, fi, nil
}

// openSub opens the subdirectory name: a single path component, never
// through a symbolic link.
func (d *Dir) openSub(name string) (*Dir, error) {
	f, _, err := d.open(name, fs.ModeDir)
	if err != nil {
		return nil, err
	}
	return newDirHandle(d.root, path.Join(d.rel, name), f), nil
}

// OpenFile opens the regular file name of the directory for reading: a
// single path component, never a symbolic link. It returns the open file
// and its size.
func (d *Dir) OpenFile(name string) (f FD, size int64, err error) {
	of, fi, err := d.open(name, 0)
	if err != nil {
		return FD{}, 0, err
	}
	return FD{of}, fi.Size(), nil
}

// FD is a file opened by OpenFile.
type FD struct{ *os.File }
