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
	"slices"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// resolve picks the backend for p on this machine: Auto is bwrap when it
// works, else Landlock.
func resolve(p Policy) (Info, error) {
	if p.Backend == None {
		return Info{Backend: None}, nil
	}
	var err error
	if p.Backend != Landlock {
		if _, err = bwrapUsable(); err == nil {
			return Info{Backend: Bwrap}, nil
		}
		err = fmt.Errorf("%w: bwrap: %v", ErrUnavailable, err)
	}
	if p.Backend != Bwrap {
		abi, lerr := landlockUsable(p)
		if lerr == nil {
			return Info{Backend: Landlock, LandlockABI: abi}, nil
		}
		err = fmt.Errorf("%w: landlock: %v", ErrUnavailable, lerr)
	}
	if p.Backend == Auto {
		return Info{}, fmt.Errorf("%w: neither bwrap nor landlock works here; install bubblewrap or pass --sandbox none to run commands unconfined", ErrUnavailable)
	}
	return Info{}, err
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
		return s.unconfined(ctx, c) // unconfined: it could write any repository anyway
	}
	g, root, err := startGuard(c)
	if err != nil {
		return Result{}, &StartError{err}
	}
	res, err := s.confined(ctx, c)
	// Every process of the command has ended (the helper is a subreaper
	// and kills what is left): what it did to git directories is undone.
	if gerr := g.finish(root, s.policy.AllowGitWrites); gerr != nil && err == nil {
		return res, gerr
	}
	return res, err
}

// unconfinedIn makes an unconfined command enter its directory through
// the descriptor, in a process group of its own that dies with this
// process and that the timeout, ctx and the command's end kill.
func unconfinedIn(cmd *exec.Cmd, c Command) {
	cmd.Dir = "/proc/self/fd/" + strconv.Itoa(int(c.Dir.Fd()))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { killGroup(cmd); return nil }
}

// killGroup kills what is left in the command's process group.
func killGroup(cmd *exec.Cmd) { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }

// confined runs c through the helper, directly (Landlock) or inside bwrap,
// which both confine it as one helperConfig says, and reads how it ended
// from the helper's status pipe.
func (s *Sandbox) confined(ctx context.Context, c Command) (Result, error) {
	exe, err := os.Executable()
	if err != nil {
		return Result{}, &StartError{fmt.Errorf("the helper executable: %w", err)}
	}
	status, statusW, err := os.Pipe()
	if err != nil {
		return Result{}, &StartError{err}
	}
	defer status.Close()
	defer statusW.Close()
	tctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	tc := s.toolchain()
	cfg := helperConfig{
		Backend: s.info.Backend, Args: c.Args, ParentPID: os.Getpid(),
		RODirs: append(slices.Clip(systemRODirs), tc.ro...),
		RWDirs: slices.Clip(tc.rw), ROFiles: []string{exe},
		Network: s.policy.AllowNetwork, GitRO: !s.policy.AllowGitWrites,
	}
	var cmd *exec.Cmd
	files := []*os.File{statusW, c.Dir}
	objects := s.objectDirsFor(c.Dir, c.DirPath)
	defer func() {
		for _, f := range objects {
			f.Close()
		}
	}()
	if s.info.Backend == Landlock {
		scratch, err := os.MkdirTemp("", "specloop-cmd-")
		if err != nil {
			return Result{}, &StartError{err}
		}
		defer os.RemoveAll(scratch)
		cfg.RWDirs = append(cfg.RWDirs, scratch)
		cfg.DropCaps = os.Geteuid() == 0
		// Without root, the read-only .git needs a user namespace that
		// owns the helper's mount namespace (see userNamespace).
		userns := false
		if cfg.GitRO && (os.Geteuid() != 0 || forceUserNS) {
			if g, err := openAt(c.Dir, ".git"); err == nil {
				g.Close()
				userns, cfg.DropCaps = true, true
			}
		}
		for _, f := range objects {
			cfg.ObjectFDs = append(cfg.ObjectFDs, 3+len(files))
			files = append(files, f)
		}
		arg, _ := json.Marshal(cfg)
		cmd = exec.CommandContext(tctx, exe, helperArg, string(arg))
		cmd.Env = append(s.environment(scratch, c.DirPath, tc, exe, c.Env), helperEnv+"=1")
		// The helper gets SIGTERM when this process dies, or the timeout
		// or ctx ends the command, and then kills the command's tree (its
		// process is killed grace later).
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
		if userns {
			userNamespace(cmd.SysProcAttr)
		}
		cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	} else {
		const inside = "/.specloop-sandbox-exec"
		args := []string{"--die-with-parent", "--unshare-pid", "--unshare-ipc", "--new-session", "--cap-drop", "ALL",
			"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"}
		if !cfg.Network {
			args = append(args, "--unshare-net")
		}
		for _, d := range cfg.RODirs {
			if target, err := os.Readlink(d); err == nil {
				args = append(args, "--symlink", target, d)
			} else if d != "/proc" {
				args = append(args, "--ro-bind-try", d, d)
			}
		}
		for _, d := range cfg.RWDirs {
			args = append(args, "--bind-try", d, d)
		}
		args = append(args, "--bind-fd", strconv.Itoa(dirFD), c.DirPath)
		if cfg.GitRO {
			// .git as it is inside the directory held open, not a path
			// looked up again.
			if git, err := openAt(c.Dir, ".git"); err == nil {
				defer git.Close()
				files = append(files, git)
				args = append(args, "--ro-bind-fd", strconv.Itoa(gitFD), filepath.Join(c.DirPath, ".git"))
			}
		}
		// The borrowed object directories, read-only at their paths,
		// from the descriptors opened following no symbolic link.
		for _, f := range objects {
			args = append(args, "--ro-bind-fd", strconv.Itoa(3+len(files)), f.Name())
			files = append(files, f)
		}
		// The helper's configuration: the command; bwrap confines it, and
		// the helper cannot see this process from its PID namespace.
		arg, _ := json.Marshal(helperConfig{Backend: Bwrap, Args: c.Args})
		args = append(args, "--ro-bind", exe, inside, "--chdir", c.DirPath, "--", inside, helperArg, string(arg))
		bwrap, _ := bwrapUsable() // resolve found it usable
		cmd = exec.CommandContext(tctx, bwrap, args...)
		// bwrap hands its own environment, the allowlist, to the helper.
		cmd.Env = append(s.environment("/tmp", c.DirPath, tc, inside, c.Env), helperEnv+"=1")
		// bwrap kills its namespace when it dies.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		cmd.Cancel = func() error { killGroup(cmd); return nil }
	}
	cmd.ExtraFiles = files
	res, err := execute(ctx, cmd, c)
	if err != nil {
		return res, err
	}
	statusW.Close() // the helper's report ends when it does
	st, ok := readStatus(status)
	switch {
	case ok && st.Error != "":
		return Result{}, &StartError{errors.New(st.Error)}
	case res.TimedOut: // ExitCode is -1
	case ok && st.Exit != nil:
		res.ExitCode = *st.Exit
	case s.info.Backend == Bwrap && !ok && res.ExitCode != 0:
		// bwrap itself failed before the helper ran.
		return Result{}, &StartError{fmt.Errorf("bwrap exited with code %d", res.ExitCode)}
	default:
		res.ExitCode = -1 // a signal killed the command
	}
	return res, nil
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
