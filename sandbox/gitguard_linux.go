package sandbox

import (
	"io/fs"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// noFollow makes an open fail on a symbolic link, and not block on a FIFO.
const noFollow = unix.O_NOFOLLOW | unix.O_NONBLOCK

// nonblock makes an open not block on a FIFO (reading one as a directory
// then fails).
const nonblock = unix.O_NONBLOCK

// dirKey identifies a directory whatever path it is reached by.
type dirKey struct{ dev, ino uint64 }

func keyOf(dir *os.File) (dirKey, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(dir.Fd()), &st); err != nil {
		return dirKey{}, err
	}
	return dirKey{uint64(st.Dev), st.Ino}, nil
}

// openDirRoot opens the command's directory as an os.Root through the
// descriptor held open, never its path looked up again.
func openDirRoot(c Command) (*os.Root, error) {
	return os.OpenRoot("/proc/self/fd/" + strconv.Itoa(int(c.Dir.Fd())))
}

// readDir lists the directory d (opened in an os.Root) and closes it. It
// reads the entries' types from the directory itself, through a
// descriptor of its own: a ReadDir of a file of an os.Root stats every
// entry, which costs most of a walk.
func readDir(d *os.File) ([]fs.DirEntry, error) {
	fd, err := unix.Dup(int(d.Fd()))
	d.Close()
	if err != nil {
		return nil, err
	}
	unix.CloseOnExec(fd)
	f := os.NewFile(uintptr(fd), "dir")
	defer f.Close()
	return f.ReadDir(-1)
}
