//go:build unix && !walkroot

package fswalk

import (
	"io"
	"io/fs"
	"os"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// Dir is an open directory of the workspace, shared by the files of
// it that are being visited; it is closed when the last user releases it.
// Its files and subdirectories are opened relative to it (one openat each,
// instead of one per path component), one name at a time and never through
// a symbolic link, so they cannot leave it. It holds one descriptor.
type Dir struct {
	dir  *os.File
	refs atomic.Int32
}

// newDirHandle wraps the open directory f, which it owns.
func newDirHandle(f *os.File) *Dir {
	d := &Dir{dir: f}
	d.refs.Store(1)
	return d
}

// openStart opens the directory start of root for a walk. The directory is
// opened through root (confined), then its descriptor is duplicated into a
// plain file: os.File.ReadDir on a directory opened through an os.Root
// stats every entry (one system call each), a plain one reads the types
// from the directory itself.
func openStart(root *os.Root, start string) (*Dir, error) {
	f, err := root.Open(start)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, syscall.ENOTDIR
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	var dup int
	var dupErr error
	if err := rc.Control(func(fd uintptr) { dup, dupErr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return nil, err
	}
	if dupErr != nil {
		return nil, dupErr
	}
	return newDirHandle(os.NewFile(uintptr(dup), start)), nil
}

// openat opens the entry name of the directory with flags, never
// following a symbolic link: name must be a single path component.
func (d *Dir) openat(name string, flags int) (int, error) {
	if !validName(name) {
		return -1, fs.ErrInvalid
	}
	rc, err := d.dir.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd, openErr := -1, error(nil)
	if err := rc.Control(func(dirfd uintptr) {
		fd, openErr = unix.Openat(int(dirfd), name, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	}); err != nil {
		return -1, err
	}
	return fd, openErr
}

// openSub opens the subdirectory name: a single path component, never
// through a symbolic link.
func (d *Dir) openSub(name string) (*Dir, error) {
	fd, err := d.openat(name, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return nil, err
	}
	return newDirHandle(os.NewFile(uintptr(fd), name)), nil
}

// OpenFile opens the regular file name of the directory for reading: a
// single path component, never following a symbolic link and never
// blocking on a FIFO or a device, so it cannot leave the directory. It
// returns the open file and its size.
func (d *Dir) OpenFile(name string) (f FD, size int64, err error) {
	fd, err := d.openat(name, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY)
	if err != nil {
		return -1, 0, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, 0, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return -1, 0, fs.ErrInvalid
	}
	return FD(fd), st.Size, nil
}

// FD is a file opened by OpenFile: a bare descriptor, read with plain
// read calls (an os.File would cost a system call and a finalizer more per
// file searched).
type FD int

// Read reads from the file; it returns io.EOF at the end.
func (f FD) Read(p []byte) (int, error) {
	for {
		n, err := unix.Read(int(f), p)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, err
		}
		if n == 0 && len(p) > 0 {
			return 0, io.EOF
		}
		return n, nil
	}
}

// Close closes the file.
func (f FD) Close() error { return unix.Close(int(f)) }
