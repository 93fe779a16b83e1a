package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// grace is how long the Landlock helper has to kill its tree after
// SIGTERM before it is killed, and how long output is still read after a
// command ended, from processes that escaped the kill (only possible with
// None).
const grace = 2 * time.Second

// resolve picks the backend for p on this machine.
func resolve(p Policy) (Info, error) {
	switch p.Backend {
	case None:
		return Info{Backend: None}, nil
	case Bwrap:
		if _, err := bwrapUsable(); err != nil {
			return Info{}, fmt.Errorf("%w: bwrap: %v", ErrUnavailable, err)
		}
		return Info{Backend: Bwrap}, nil
	case Landlock:
		abi, err := landlockUsable(p)
		if err != nil {
			return Info{}, fmt.Errorf("%w: landlock: %v", ErrUnavailable, err)
		}
		return Info{Backend: Landlock, LandlockABI: abi}, nil
	default: // Auto
		if _, err := bwrapUsable(); err == nil {
			return Info{Backend: Bwrap}, nil
		}
		if abi, err := landlockUsable(p); err == nil {
			return Info{Backend: Landlock, LandlockABI: abi}, nil
		}
		return Info{}, fmt.Errorf("%w: neither bwrap nor landlock works here; install bubblewrap or pass --sandbox none to run commands unconfined", ErrUnavailable)
	}
}

func landlockUsable(p Policy) (int, error) {
	abi := landlockABI()
	if abi == 0 {
		return 0, errors.New("the kernel does not offer landlock")
	}
	if !p.AllowNetwork && auditArch == 0 {
		return 0, errors.New("no seccomp network filter for this architecture; allow the network or use bwrap")
	}
	if _, err := os.Executable(); err != nil {
		return 0, fmt.Errorf("the helper executable: %w", err)
	}
	return abi, nil
}

// run runs c; under a confining backend, inside the guard of git
// directories (see Run).
func (s *Sandbox) run(ctx context.Context, c Command) (Result, error) {
	if s.info.Backend == None {
		return s.start(ctx, c) // unconfined: it could write any repository anyway
	}
	g, root, err := startGuard(c)
	if err != nil {
		return Result{}, &StartError{err}
	}
	res, err := s.start(ctx, c)
	// Every process of the command has ended (the helper is a subreaper
	// and kills what is left): what it did to git directories is undone.
	if gerr := g.finish(root, s.policy.AllowGitWrites); gerr != nil && err == nil {
		return res, gerr
	}
	return res, err
}

// start starts c under the sandbox's backend and waits for it.
func (s *Sandbox) start(ctx context.Context, c Command) (Result, error) {
	tctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	tc := goToolchain()
	var (
		cmd     *exec.Cmd
		status  *os.File // the helper's report, nil for None
		cleanup = func() {}
	)
	if s.info.Backend == None {
		scratch, err := os.MkdirTemp("", "specloop-cmd-")
		if err != nil {
			return Result{}, &StartError{err}
		}
		cleanup = func() { os.RemoveAll(scratch) }
		cmd = exec.CommandContext(tctx, c.Args[0], c.Args[1:]...)
		// The child enters the directory through its descriptor.
		cmd.Dir = "/proc/self/fd/" + strconv.Itoa(int(c.Dir.Fd()))
		cmd.Env = s.environment(scratch, c.DirPath, tc, c.Env)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	} else {
		var err error
		if cmd, status, cleanup, err = s.helperCommand(tctx, c, tc); err != nil {
			return Result{}, &StartError{err}
		}
	}
	defer cleanup()
	return s.execute(ctx, cmd, status, c)
}

// helperCommand builds the command that starts the helper, directly
// (Landlock) or inside bwrap, and the read end of its status pipe, which
// cleanup closes.
func (s *Sandbox) helperCommand(ctx context.Context, c Command, tc toolchain) (*exec.Cmd, *os.File, func(), error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("the helper executable: %w", err)
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return nil, nil, nil, err
	}
	files := []*os.File{statusW, c.Dir}
	var closers []*os.File
	cleanup := func() {
		statusR.Close()
		statusW.Close()
		for _, f := range closers {
			f.Close()
		}
	}
	fail := func(err error) (*exec.Cmd, *os.File, func(), error) {
		cleanup()
		return nil, nil, nil, err
	}
	cfg := helperConfig{Backend: s.info.Backend, Args: c.Args, ParentPID: os.Getpid()}
	userns := false
	gitRO := !s.policy.AllowGitWrites
	var cmd *exec.Cmd
	switch s.info.Backend {
	case Landlock:
		scratch, err := os.MkdirTemp("", "specloop-cmd-")
		if err != nil {
			return fail(err)
		}
		prev := cleanup
		cleanup = func() { prev(); os.RemoveAll(scratch) }
		cfg.RODirs = append(append([]string{}, systemRODirs...), nonEmpty(tc.goroot, tc.gomodcache)...)
		cfg.RWDirs = append([]string{scratch}, nonEmpty(tc.gocache)...)
		cfg.Network = s.policy.AllowNetwork
		cfg.GitRO = gitRO
		cfg.DropCaps = os.Geteuid() == 0
		// Without root, the read-only .git needs a user namespace that
		// owns the helper's mount namespace (see userNamespace).
		if gitRO && (os.Geteuid() != 0 || forceUserNS) {
			if g, err := openAt(c.Dir, ".git"); err == nil {
				g.Close()
				userns = true
				cfg.DropCaps = true
			}
		}
		arg, _ := json.Marshal(cfg)
		cmd = exec.CommandContext(ctx, exe, helperArg, string(arg))
		cmd.Env = append(s.environment(scratch, c.DirPath, tc, c.Env), helperEnv+"=1")
	case Bwrap:
		const inside = "/.specloop-sandbox-exec"
		cfg.ParentPID = 0 // the helper cannot see this process from its PID namespace
		args := []string{"--die-with-parent", "--unshare-pid", "--unshare-ipc", "--new-session", "--cap-drop", "ALL"}
		if !s.policy.AllowNetwork {
			args = append(args, "--unshare-net")
		}
		for _, d := range systemRODirs {
			if d == "/proc" {
				continue
			}
			if target, err := os.Readlink(d); err == nil {
				args = append(args, "--symlink", target, d)
			} else {
				args = append(args, "--ro-bind-try", d, d)
			}
		}
		args = append(args, "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp")
		for _, d := range nonEmpty(tc.goroot, tc.gomodcache) {
			args = append(args, "--ro-bind-try", d, d)
		}
		for _, d := range nonEmpty(tc.gocache) {
			args = append(args, "--bind-try", d, d)
		}
		args = append(args, "--bind-fd", strconv.Itoa(dirFD), c.DirPath)
		if gitRO {
			// .git as it is inside the directory held open, not a path
			// looked up again.
			if git, err := openAt(c.Dir, ".git"); err == nil {
				closers = append(closers, git)
				files = append(files, git)
				args = append(args, "--ro-bind-fd", strconv.Itoa(gitFD), filepath.Join(c.DirPath, ".git"))
			}
		}
		args = append(args, "--ro-bind", exe, inside, "--chdir", c.DirPath)
		arg, _ := json.Marshal(cfg)
		args = append(args, "--", inside, helperArg, string(arg))
		bwrap, _ := bwrapUsable() // resolve found it usable
		cmd = exec.CommandContext(ctx, bwrap, args...)
		// bwrap hands its own environment, the allowlist, to the helper.
		cmd.Env = append(s.environment("/tmp", c.DirPath, tc, c.Env), helperEnv+"=1")
	}
	cmd.ExtraFiles = files
	// The helper gets SIGTERM when this process dies and then kills the
	// command's tree; bwrap kills its namespace itself.
	sig := syscall.SIGTERM
	if s.info.Backend == Bwrap {
		sig = syscall.SIGKILL
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: sig}
	if userns {
		userNamespace(cmd.SysProcAttr)
	}
	return cmd, statusR, cleanup, nil
}

// forceUserNS makes root use the user namespace path too (for tests).
var forceUserNS = false

// userNamespace starts the helper in a user namespace of its own that maps
// only the caller's uid and gid to themselves, with CAP_SYS_ADMIN (in that
// namespace only) kept across exec as an ambient capability, so that it
// can make its own mount namespace and bind .git read-only; it drops the
// capability before starting the command. Needs unprivileged user
// namespaces (most distributions allow them).
func userNamespace(attr *syscall.SysProcAttr) {
	uid, gid := os.Getuid(), os.Getgid()
	attr.Cloneflags = syscall.CLONE_NEWUSER
	attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
	attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
	attr.GidMappingsEnableSetgroups = false
	attr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN}
}

// openAt opens name inside dir without following a symbolic link at name.
func openAt(dir *os.File, name string) (*os.File, error) {
	fd, err := unix.Openat(int(dir.Fd()), name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT == unix.S_IFLNK {
		unix.Close(fd)
		return nil, errors.New("not a file or directory")
	}
	return os.NewFile(uintptr(fd), name), nil
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// execute runs cmd, made with exec.CommandContext of a context with c's
// timeout, and reads the helper's status (when status is set).
func (s *Sandbox) execute(ctx context.Context, cmd *exec.Cmd, status *os.File, c Command) (Result, error) {
	cmd.Stdin, cmd.Stdout, cmd.Stderr = c.Stdin, c.Stdout, c.Stderr
	killGroup := func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// The timeout or ctx ends the command and everything it started: the
	// Landlock helper kills its tree on SIGTERM (its process is killed
	// grace later); bwrap's namespace dies with it.
	stopped := false
	cmd.Cancel = func() error {
		stopped = true
		if s.info.Backend == Landlock {
			return cmd.Process.Signal(syscall.SIGTERM)
		}
		killGroup()
		return nil
	}
	cmd.WaitDelay = grace
	t0 := time.Now()
	err := cmd.Start()
	if len(cmd.ExtraFiles) > 0 {
		cmd.ExtraFiles[0].Close() // the status pipe's write end
	}
	if err != nil {
		return Result{}, &StartError{err}
	}
	waitErr := cmd.Wait()
	res := Result{Duration: time.Since(t0), TimedOut: stopped}
	killGroup() // what is left in the group (None: the background)
	if stopped && ctx.Err() != nil {
		return Result{}, ctx.Err()
	}
	// Not failures: a command that ended with an error status or a signal,
	// or exited 0 once stopped or leaving its output open past grace.
	var ee *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &ee) && !stopped && !errors.Is(waitErr, exec.ErrWaitDelay) {
		return res, fmt.Errorf("wait for the command: %w", waitErr)
	}
	res.ExitCode = cmd.ProcessState.ExitCode()
	if status != nil {
		st, ok := readStatus(status)
		switch {
		case ok && st.Error != "":
			return Result{}, &StartError{errors.New(st.Error)}
		case ok && st.Exit != nil:
			res.ExitCode = *st.Exit
		case s.info.Backend == Bwrap && !ok && !res.TimedOut && res.ExitCode != 0:
			// bwrap itself failed before the helper ran.
			return Result{}, &StartError{fmt.Errorf("bwrap exited with code %d", res.ExitCode)}
		default:
			res.ExitCode = -1
		}
	}
	if res.TimedOut {
		res.ExitCode = -1
	}
	return res, nil
}

func readStatus(f *os.File) (helperStatus, bool) {
	line, err := bufio.NewReader(io.LimitReader(f, 64<<10)).ReadBytes('\n')
	if err != nil && len(line) == 0 {
		return helperStatus{}, false
	}
	var st helperStatus
	if json.Unmarshal(line, &st) != nil {
		return helperStatus{}, false
	}
	return st, true
}
