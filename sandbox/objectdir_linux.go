package sandbox

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// openObjectDir opens the object directory p, absolute and clean, from
// the file system's root one name at a time, following no symbolic link:
// a path whose directories were swapped for links since it was decided
// (see Policy.ObjectDirs) does not open. It must be a directory that
// holds a pack directory, as every git object directory does.
func openObjectDir(p string) (*os.File, error) {
	fd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	for _, name := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		next, err := unix.Openat(fd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
			return nil, fmt.Errorf("%q is a symbolic link or not a directory", name)
		}
		if err != nil {
			return nil, err
		}
		fd = next
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		unix.Close(fd)
		return nil, errors.New("not a directory")
	}
	if err := unix.Fstatat(fd, "pack", &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		unix.Close(fd)
		return nil, errors.New("holds no pack directory, so it is no git object directory")
	}
	return os.NewFile(uintptr(fd), p), nil
}

// objectDirsFor opens the policy's object directories for a command in
// the directory dir (at dirPath): those that open (openObjectDir) and
// neither hold dir nor are inside it.
func (s *Sandbox) objectDirsFor(dir *os.File, dirPath string) []*os.File {
	if len(s.policy.ObjectDirs) == 0 {
		return nil
	}
	paths := []string{dirPath}
	if real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(dir.Fd()))); err == nil {
		paths = append(paths, real)
	}
	var out []*os.File
	for _, d := range s.policy.ObjectDirs {
		overlaps := false
		for _, p := range paths {
			overlaps = overlaps || within(d, p) || within(p, d)
		}
		if overlaps {
			continue
		}
		if f, err := openObjectDir(d); err == nil {
			out = append(out, f)
		}
	}
	return out
}

// within says whether the path p is dir or below it.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}
