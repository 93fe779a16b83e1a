//go:build !linux

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"
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

func (s *Sandbox) run(ctx context.Context, c Command) (Result, error) {
	scratch, err := os.MkdirTemp("", "specloop-cmd-")
	if err != nil {
		return Result{}, &StartError{err}
	}
	defer os.RemoveAll(scratch)
	tctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	cmd := exec.CommandContext(tctx, c.Args[0], c.Args[1:]...)
	cmd.Dir = c.DirPath
	cmd.Env = s.environment(scratch, c.DirPath, goToolchain(), c.Env)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = c.Stdin, c.Stdout, c.Stderr
	cmd.WaitDelay = 2 * time.Second
	t0 := time.Now()
	err = cmd.Run()
	res := Result{Duration: time.Since(t0)}
	if ctx.Err() != nil {
		return Result{}, ctx.Err()
	}
	var ee *exec.ExitError
	switch {
	case err == nil || errors.As(err, &ee):
	case cmd.Process == nil:
		return Result{}, &StartError{err}
	}
	if cmd.ProcessState != nil {
		res.ExitCode = cmd.ProcessState.ExitCode()
	}
	if tctx.Err() != nil {
		res.TimedOut, res.ExitCode = true, -1
	}
	return res, nil
}
