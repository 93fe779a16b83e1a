//go:build !linux

package sandbox

import (
	"io/fs"
	"os"
)

// noFollow: no portable flag; only None runs commands here, and None has
// no guard.
const noFollow = 0

// nonblock: likewise.
const nonblock = 0

// dirKey identifies a directory by its path.
type dirKey struct{ path string }

func keyOf(dir *os.File) (dirKey, error) { return dirKey{dir.Name()}, nil }

func openDirRoot(c Command) (*os.Root, error) { return os.OpenRoot(c.DirPath) }

// readDir lists the directory d and closes it.
func readDir(d *os.File) ([]fs.DirEntry, error) {
	defer d.Close()
	return d.ReadDir(-1)
}
