package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/specloop/specloop/internal/textclip"
)

// Backend names a way of confining commands.
type Backend string

// The backends. Auto resolves to Bwrap or Landlock.
const (
	Auto     Backend = "auto"
	Landlock Backend = "landlock"
	Bwrap    Backend = "bwrap"
	None     Backend = "none"
)

// ParseBackend checks a backend name ("" means Auto).
func ParseBackend(s string) (Backend, error) {
	if s == "" {
		return Auto, nil
	}
	if b := Backend(s); slices.Contains([]Backend{Auto, Landlock, Bwrap, None}, b) {
		return b, nil
	}
	return "", fmt.Errorf("unknown sandbox %q: want one of auto, landlock, bwrap, none", textclip.Clip(s, 40))
}

// helperArg is the first argument of the re-exec helper (Linux only).
const helperArg = "sandbox-exec"

// Main reports misuse of the internal sandbox-exec command, for a command
// dispatcher that names it. The helper itself runs from this package's
// init, before main, in every program that imports the package.
func Main() {
	if len(os.Args) >= 2 && os.Args[1] == helperArg {
		fmt.Fprintln(os.Stderr, "sandbox-exec is internal: specloop starts it to run a command in a sandbox")
		os.Exit(2)
	}
}

// Policy says how commands are confined. The zero value is Auto with no
// network, a read-only .git and the default environment.
type Policy struct {
	// Backend is the confinement; "" means Auto.
	Backend Backend
	// AllowNetwork lets commands open network sockets.
	AllowNetwork bool
	// AllowGitWrites lets commands write under the workspace's .git:
	// its objects, refs, index, logs and HEAD (a commit or a checkout),
	// never its configuration or hooks, which Run's guard undoes.
	AllowGitWrites bool
	// PassEnv names variables of this process's environment that commands
	// get besides the allowlist (PATH, LANG, LC_*, TERM, the Go variables).
	PassEnv []string
	// ObjectDirs are the object directories outside the workspace that
	// its git repository borrows (the alternates of an isolated run's work
	// tree: see gitcheckout.Alternates), which commands may read and
	// never write: bound read-only at the same path (bwrap) or granted
	// read access only (Landlock). Each is absolute, with no symbolic
	// link in it, and holds a pack directory; at most MaxObjectDirs. They
	// are decided once, when the run's workspace is opened, never from
	// what a command wrote since, and each is opened again for every
	// command following no symbolic link: one that cannot be is left
	// out. A directory that holds the command's directory, or is inside
	// it, is left out too (the workspace is the command's already).
	ObjectDirs []string
}

// MaxObjectDirs bounds Policy.ObjectDirs.
const MaxObjectDirs = 8

// Info is the confinement in effect, as recorded in traces and results.
type Info struct {
	// Backend is Landlock, Bwrap or None (never Auto).
	Backend Backend
	// LandlockABI is the Landlock ABI version in effect; 0 unless Backend
	// is Landlock.
	LandlockABI int
	// AllowNetwork and AllowGitWrites say what commands could do: the
	// policy's, and both true under None, which confines nothing.
	AllowNetwork   bool
	AllowGitWrites bool
}

// checkObjectDir checks an entry of Policy.ObjectDirs.
func checkObjectDir(d string) error {
	if !filepath.IsAbs(d) || filepath.Clean(d) != d || d == string(filepath.Separator) {
		return errors.New("must be an absolute, clean path of a directory below the root")
	}
	f, err := openObjectDir(d)
	if err != nil {
		return err
	}
	return f.Close()
}

// ErrUnavailable is returned when the backend asked for cannot run on this
// machine.
var ErrUnavailable = errors.New("sandbox unavailable")

// Available reports whether backend b can run commands on this machine
// (nil when it can).
func Available(b Backend) error {
	_, err := resolve(Policy{Backend: b})
	return err
}

// Sandbox runs commands under one resolved Policy. It is safe for
// concurrent use.
type Sandbox struct {
	policy Policy
	info   Info
}

// New resolves p on this machine: Auto becomes the strongest available
// backend. It fails with ErrUnavailable when the backend cannot be used.
func New(p Policy) (*Sandbox, error) {
	b, err := ParseBackend(string(p.Backend))
	if err != nil {
		return nil, err
	}
	p.Backend = b
	for _, name := range p.PassEnv {
		if name == "" || strings.ContainsAny(name, "=\x00") {
			return nil, fmt.Errorf("pass-env: invalid variable name %q", textclip.Clip(name, 40))
		}
	}
	if len(p.ObjectDirs) > MaxObjectDirs {
		return nil, fmt.Errorf("object dirs: %d directories, at most %d", len(p.ObjectDirs), MaxObjectDirs)
	}
	for i, d := range p.ObjectDirs {
		if err := checkObjectDir(d); err != nil {
			return nil, fmt.Errorf("object dirs[%d] %q: %w", i, textclip.Clip(d, 200), err)
		}
	}
	p.ObjectDirs = slices.Clone(p.ObjectDirs)
	info, err := resolve(p)
	if err != nil {
		return nil, err
	}
	info.AllowNetwork, info.AllowGitWrites = p.AllowNetwork, p.AllowGitWrites
	if info.Backend == None {
		// Unconfined: commands can do both, whatever the policy says.
		info.AllowNetwork, info.AllowGitWrites = true, true
	}
	return &Sandbox{policy: p, info: info}, nil
}

// Info returns the confinement in effect.
func (s *Sandbox) Info() Info { return s.info }

// Policy returns the policy the sandbox was made from, with Backend
// resolved to Auto when it was empty.
func (s *Sandbox) Policy() Policy { return s.policy }

// Command is one command to run.
type Command struct {
	// Args is the program and its arguments; Args[0] is looked up in PATH
	// inside the sandbox when it has no slash.
	Args []string
	// Dir is the open directory the command runs in (and may write to);
	// DirPath is the path it was opened at, used as the command's PWD and
	// as its mount point under bwrap.
	Dir     *os.File
	DirPath string
	// Env adds NAME=value variables after the allowlisted ones.
	Env []string
	// Stdin is the command's standard input; nil means none (/dev/null).
	Stdin io.Reader
	// Stdout and Stderr receive the output; they may be the same writer.
	// A nil Stdout discards; a nil Stderr goes to Stdout.
	Stdout, Stderr io.Writer
	// Timeout kills the command and all its descendants; it must be
	// positive.
	Timeout time.Duration
}

// Result is how a command ended.
type Result struct {
	// ExitCode is -1 when the command was killed by a signal or the
	// timeout.
	ExitCode int
	TimedOut bool
	Duration time.Duration
}

// StartError is a command that could not be started, or a sandbox that
// could not be set up around it.
type StartError struct{ Err error }

func (e *StartError) Error() string { return "start sandboxed command: " + e.Err.Error() }
func (e *StartError) Unwrap() error { return e.Err }

// Run runs c and waits for it and everything it started to end. When the
// timeout passes the command is killed and Result.TimedOut is set; when ctx
// is done the command is killed and ctx's error returned. A command that
// cannot be started is a *StartError.
//
// Under a confining backend, Run guards git directories: it records the
// git directories of c's directory tree before the command (every .git
// entry, nested ones included, every directory that looks like a git
// directory, the configuration, hooks, HEAD, commondir and gitdir files
// of each, and the files of the work tree the repositories' configuration
// trusts: the hooks directory core.hooksPath names and the include.path
// and includeIf.*.path files) and, once the command ended, undoes what it
// added or changed there: new .git entries, the entries that make a
// directory look like a git directory and new files in a trusted hooks
// directory are removed, changed guarded files restored.
// It then returns the Result with a *GitError naming what was undone.
// With AllowGitWrites the top-level .git's objects, refs, index, logs and
// HEAD may change; its configuration and hooks may not.
func (s *Sandbox) Run(ctx context.Context, c Command) (Result, error) {
	if len(c.Args) == 0 || c.Dir == nil || c.Timeout <= 0 {
		return Result{}, errors.New("sandbox: a command needs Args, Dir and a positive Timeout")
	}
	if c.Stdout == nil {
		c.Stdout = io.Discard
	}
	if c.Stderr == nil {
		c.Stderr = c.Stdout
	}
	return s.run(ctx, c)
}

// Warning returns the warning to show users when the sandbox does not
// confine commands, or "".
func (s *Sandbox) Warning() string {
	if s.info.Backend == None {
		return "warning: --sandbox none: commands run unconfined, with your permissions, files and network"
	}
	return ""
}

// grace is how long the Landlock helper has to kill its tree after
// SIGTERM before it is killed, and how long output is still read after a
// command ended, from processes that escaped the kill (only possible with
// None).
const grace = 2 * time.Second

// unconfined runs c with no confinement (None), with the environment of
// a sandboxed command and a scratch HOME.
func (s *Sandbox) unconfined(ctx context.Context, c Command) (Result, error) {
	scratch, err := os.MkdirTemp("", "specloop-cmd-")
	if err != nil {
		return Result{}, &StartError{err}
	}
	defer os.RemoveAll(scratch)
	tctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	cmd := exec.CommandContext(tctx, c.Args[0], c.Args[1:]...)
	exe, _ := os.Executable()
	cmd.Env = s.environment(scratch, c.DirPath, s.toolchain(), exe, c.Env)
	unconfinedIn(cmd, c)
	return execute(ctx, cmd, c)
}

// execute runs cmd, made with exec.CommandContext of a context with c's
// timeout and the Cancel that ends it and everything it started, and
// waits for it. A command the timeout stopped has ExitCode -1.
func execute(ctx context.Context, cmd *exec.Cmd, c Command) (Result, error) {
	cmd.Stdin, cmd.Stdout, cmd.Stderr = c.Stdin, c.Stdout, c.Stderr
	stopped, stop := false, cmd.Cancel
	cmd.Cancel = func() error {
		stopped = true
		return stop()
	}
	cmd.WaitDelay = grace
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return Result{}, &StartError{err}
	}
	waitErr := cmd.Wait()
	res := Result{ExitCode: cmd.ProcessState.ExitCode(), Duration: time.Since(t0), TimedOut: stopped}
	killGroup(cmd) // what is left in the group (None: the background)
	if stopped && ctx.Err() != nil {
		return Result{}, ctx.Err()
	}
	// Not failures: a command that ended with an error status or a signal,
	// or exited 0 once stopped or leaving its output open past grace.
	var ee *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &ee) && !stopped && !errors.Is(waitErr, exec.ErrWaitDelay) {
		return res, fmt.Errorf("wait for the command: %w", waitErr)
	}
	if stopped {
		res.ExitCode = -1
	}
	return res, nil
}

// baseEnvNames are the variables a command always gets from this process
// when they are set; LC_* are added by prefix.
var baseEnvNames = []string{"PATH", "LANG", "LANGUAGE", "TERM", "TZ", "GOFLAGS", "GOTOOLCHAIN", "GOPROXY", "GONOSUMDB", "GOPRIVATE", "GOARCH", "GOOS", "CGO_ENABLED"}

// environment builds a command's environment: the allowlist and the
// policy's PassEnv from this process, HOME and TMPDIR set to scratch, the
// Go toolchain locations, the build cache program exe (see
// cacheProgEnviron) and then extra. os/exec keeps the last value of
// a name, so extra overrides everything, and this process's variables
// override neither HOME, TMPDIR and PWD nor the toolchain's.
func (s *Sandbox) environment(scratch, pwd string, tc toolchain, exe string, extra []string) []string {
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin"} // unless this process has one
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if slices.Contains(baseEnvNames, name) || strings.HasPrefix(name, "LC_") || slices.Contains(s.policy.PassEnv, name) {
			env = append(env, kv)
		}
	}
	env = append(append(env, "HOME="+scratch, "TMPDIR="+scratch, "PWD="+pwd), tc.env...)
	return append(append(env, cacheProgEnviron(exe, tc)...), extra...)
}

// GitError is a command that made or changed what git would take for a
// repository in its directory tree: a new .git entry, a directory that
// now looks like a git directory (see internal/gitshape), a changed
// configuration, hook, HEAD, commondir or gitdir file of a git directory,
// or a new or changed file in the work tree that a repository's
// configuration trusts (a hook in the directory core.hooksPath names, a
// file include.path or includeIf.*.path names: see gitshape.Trusted),
// nested repositories and the one the directory sits in included. Run
// undid every change it names before it returned; Unchecked lists what it
// could not undo or not look at.
type GitError struct {
	// Paths are the undone changes, relative to the command's directory,
	// slash-separated and sorted.
	Paths []string
	// Unchecked are paths the guard could not undo or read, with why.
	Unchecked []string
}

func (e *GitError) Error() string {
	var b strings.Builder
	b.WriteString("the command made or changed git directories, or hooks and configuration files a repository's configuration takes from the work tree (core.hooksPath, include.path), which git runs or reads for whoever uses git there")
	if len(e.Paths) > 0 {
		b.WriteString("; undone: ")
		b.WriteString(listPaths(e.Paths))
	}
	if len(e.Unchecked) > 0 {
		b.WriteString("; not undone: ")
		b.WriteString(listPaths(e.Unchecked))
	}
	return b.String()
}

// listPaths joins paths for a message, at most ten of them.
func listPaths(ps []string) string {
	const show = 10
	var q []string
	for i, p := range ps {
		if i == show {
			q = append(q, fmt.Sprintf("and %d more", len(ps)-show))
			break
		}
		q = append(q, fmt.Sprintf("%q", textclip.Clip(p, 200)))
	}
	return strings.Join(q, ", ")
}
