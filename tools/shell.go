package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// shellPath is the shell commands run in.
const shellPath = "/bin/sh"

// pipeGrace is how long output is still read after a command ended and its
// process group was killed, for processes that left the group.
const pipeGrace = 2 * time.Second

// shellRun is how a shell command ended.
type shellRun struct {
	exitCode int // -1 when killed by a signal or the timeout
	timedOut bool
	duration time.Duration
}

// errStart is a shell that could not be started.
type errStart struct{ err error }

func (e *errStart) Error() string { return "start " + shellPath + ": " + e.err.Error() }
func (e *errStart) Unwrap() error { return e.err }

// runShell runs `/bin/sh -c command` in dir, in a process group of its own,
// with a scrubbed environment (plus extraEnv) and no standard input. When
// the timeout passes or ctx is done, the whole group is killed; when the
// shell exits, whatever it left running in its group is killed too, so no
// command outlives its call. A cancelled ctx returns ctx's error.
func runShell(ctx context.Context, dir, command string, timeout time.Duration, extraEnv []string, stdout, stderr io.Writer) (shellRun, error) {
	cmd := exec.Command(shellPath, "-c", command)
	cmd.Dir = dir
	cmd.Env = append(scrubEnv(os.Environ()), extraEnv...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}

	var readers []*os.File
	var copying sync.WaitGroup
	pipe := func(w io.Writer) (*os.File, error) {
		r, wf, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		readers = append(readers, r)
		copying.Add(1)
		go func() {
			defer copying.Done()
			_, _ = io.Copy(w, r)
		}()
		return wf, nil
	}
	closeReaders := func() {
		for _, r := range readers {
			r.Close()
		}
	}
	outW, err := pipe(stdout)
	if err != nil {
		return shellRun{}, err
	}
	errW := outW
	if stderr != stdout {
		if errW, err = pipe(stderr); err != nil {
			outW.Close()
			closeReaders()
			return shellRun{}, err
		}
	}
	cmd.Stdout, cmd.Stderr = outW, errW

	t0 := time.Now()
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		closeReaders()
		copying.Wait()
		return shellRun{}, &errStart{err}
	}
	pgid := cmd.Process.Pid
	killGroup := func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) }

	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var res shellRun
	var waitErr error
	select {
	case waitErr = <-exited:
	case <-timer.C:
		killGroup()
		res.timedOut = true
		waitErr = <-exited
	case <-ctx.Done():
		killGroup()
		<-exited
		killGroup()
		finishPipes(&copying, closeReaders)
		return shellRun{}, ctx.Err()
	}
	res.duration = time.Since(t0)
	killGroup() // what the command left running in the background
	finishPipes(&copying, closeReaders)

	res.exitCode = cmd.ProcessState.ExitCode()
	if res.timedOut {
		res.exitCode = -1
	}
	var ee *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &ee) {
		return res, fmt.Errorf("wait for %s: %w", shellPath, waitErr)
	}
	return res, nil
}

// finishPipes waits for the output to be read to its end, but no longer than
// pipeGrace: a process that left the group may hold the pipes open.
func finishPipes(copying *sync.WaitGroup, closeReaders func()) {
	done := make(chan struct{})
	go func() {
		copying.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(pipeGrace):
	}
	closeReaders()
	<-done
}

// secretWords mark environment variables that must not reach commands: a
// name containing one, in any case, is dropped.
var secretWords = []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "PRIVATE", "COOKIE"}

// secretEnv are variables that name no secret word but hold credentials or
// grant them (provider keys such as OPENAI_API_KEY and ANTHROPIC_API_KEY
// already contain KEY).
var secretEnv = map[string]bool{
	"SSH_AUTH_SOCK":  true, // an SSH agent signs with the user's keys
	"GPG_AGENT_INFO": true,
	"DATABASE_URL":   true, // usually holds a password
	"NETRC":          true,
}

// isSecretName reports whether an environment variable name looks like it
// holds a secret.
func isSecretName(name string) bool {
	up := strings.ToUpper(name)
	if secretEnv[up] {
		return true
	}
	for _, w := range secretWords {
		if strings.Contains(up, w) {
			return true
		}
	}
	return false
}

// scrubEnv drops the variables whose names look like secrets.
func scrubEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !isSecretName(name) {
			out = append(out, kv)
		}
	}
	return out
}
