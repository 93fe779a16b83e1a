//go:build !linux

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// On systems other than Linux there is no confinement: only None runs
// commands (unconfined, from the directory's path, and without killing what
// a command leaves in the background).

func resolve(p Policy) (Info, error) {
	if p.Backend == None {
		return Info{Backend: None}, nil
	}
	return Info{}, fmt.Errorf("%w: sandboxes need Linux (landlock or bwrap); pass --sandbox none to run commands unconfined", ErrUnavailable)
}

func (s *Sandbox) run(ctx context.Context, c Command) (Result, error) { return s.unconfined(ctx, c) }

func unconfinedIn(cmd *exec.Cmd, c Command) { cmd.Dir = c.DirPath }

func killGroup(*exec.Cmd) {}

// openObjectDir checks that the object directory p is a directory that
// holds a pack directory (no backend here mounts it).
func openObjectDir(p string) (*os.File, error) {
	if fi, err := os.Stat(filepath.Join(p, "pack")); err != nil || !fi.IsDir() {
		return nil, errors.New("holds no pack directory, so it is no git object directory")
	}
	return os.Open(p)
}
