package sandbox

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// noFollow makes an open fail on a symbolic link, and not block on a FIFO.
const noFollow = unix.O_NOFOLLOW | unix.O_NONBLOCK

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
