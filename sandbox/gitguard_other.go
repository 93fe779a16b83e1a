//go:build !linux

package sandbox

import (
	"os"
)

// noFollow: no portable flag; only None runs commands here, and None has
// no guard.
const noFollow = 0

// dirKey identifies a directory by its path.
type dirKey struct{ path string }

func keyOf(dir *os.File) (dirKey, error) { return dirKey{dir.Name()}, nil }

func openDirRoot(c Command) (*os.Root, error) { return os.OpenRoot(c.DirPath) }
