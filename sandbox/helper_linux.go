package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"github.com/specloop/specloop/internal/textclip"
	"golang.org/x/sys/unix"
)

// helperEnv marks the helper's environment so that a program given
// "sandbox-exec" (helperArg) as an argument by a user is not mistaken for
// it.
const helperEnv = "SPECLOOP_SANDBOX_EXEC"

// The helper's inherited descriptors.
const (
	statusFD = 3 // the helper writes one helperStatus line here
	dirFD    = 4 // the workspace directory (Landlock)
	gitFD    = 5 // the workspace's .git (bwrap, when it has one)
)

// helperConfig is what the parent tells the helper, as its one JSON
// argument (no secrets: the command's environment is the helper's own).
type helperConfig struct {
	Backend   Backend  `json:"backend"`
	Args      []string `json:"args"`
	ParentPID int      `json:"parent_pid"`
	// Landlock only.
	RODirs []string `json:"ro_dirs,omitempty"`
	RWDirs []string `json:"rw_dirs,omitempty"`
	// ROFiles: the helper executable, which the go command runs as its
	// build cache program (see cacheProgEnviron).
	ROFiles []string `json:"ro_files,omitempty"`
	// Network: no Landlock network rules and no seccomp socket filter.
	// ObjectFDs are the descriptors of the object directories the
	// command may read (Policy.ObjectDirs), opened by the parent.
	ObjectFDs []int `json:"object_fds,omitempty"`
	Network   bool  `json:"network,omitempty"`
	GitRO     bool  `json:"git_ro,omitempty"`
	DropCaps  bool  `json:"drop_caps,omitempty"`
}

// helperStatus is how the command ended (Exit is nil when a signal killed
// it), or why it could not start.
type helperStatus struct {
	Exit  *int   `json:"exit,omitempty"`
	Error string `json:"error,omitempty"`
}

func init() {
	if len(os.Args) >= 3 && os.Args[1] == helperArg && os.Getenv(helperEnv) == "1" {
		os.Exit(helperMain(os.Args[2]))
	}
}

// helperMain confines itself as cfgJSON says, runs the command, waits for
// it, kills everything it left behind and reports on statusFD.
func helperMain(cfgJSON string) int {
	status := os.NewFile(statusFD, "status")
	report := func(st helperStatus) int {
		b, _ := json.Marshal(st)
		_, _ = status.Write(append(b, '\n'))
		return 0
	}
	// Signals first: the parent's death (PR_SET_PDEATHSIG), a timeout or a
	// cancellation arrive as SIGTERM, and must not kill the helper before
	// it killed its tree.
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	var cfg helperConfig
	if err := json.Unmarshal([]byte(cfgJSON), &cfg); err != nil || len(cfg.Args) == 0 {
		return report(helperStatus{Error: "sandbox helper: bad configuration"})
	}
	if cfg.ParentPID != 0 && os.Getppid() != cfg.ParentPID {
		return 1 // the parent died before the signal handler was in place
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return report(helperStatus{Error: "sandbox helper: subreaper: " + err.Error()})
	}
	os.Unsetenv(helperEnv)

	started := make(chan int, 1)
	done := make(chan helperStatus, 1)
	go func() {
		// This thread confines itself and forks the command, which
		// inherits its Landlock domain, seccomp filter, mount namespace
		// and capabilities; the thread stays locked (and alive) until the
		// command was reaped, since it is the command's parent thread
		// (PR_SET_PDEATHSIG).
		runtime.LockOSThread()
		pid, err := confineAndStart(&cfg)
		if err != nil {
			started <- 0
			done <- helperStatus{Error: err.Error()}
			return
		}
		started <- pid
		st := waitFor(pid)
		killTree()
		done <- st
	}()
	pid := <-started
	select {
	case st := <-done:
		return report(st)
	case <-term:
		// The command ends, and then killTree kills what is left.
		if pid > 0 {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		return report(<-done)
	}
}

// confineAndStart applies the confinement to the calling (locked) thread
// and starts the command as its child.
func confineAndStart(cfg *helperConfig) (int, error) {
	// Nothing inherited beyond stdio reaches the command.
	if err := unix.CloseRange(statusFD, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return 0, fmt.Errorf("sandbox helper: close descriptors: %w", err)
	}
	if cfg.Backend == Landlock {
		if err := unix.Fchdir(dirFD); err != nil {
			return 0, fmt.Errorf("sandbox helper: enter the workspace: %w", err)
		}
		if err := confineLandlock(cfg); err != nil {
			return 0, err
		}
	}
	argv0 := cfg.Args[0]
	if !strings.Contains(argv0, "/") {
		p, err := exec.LookPath(argv0)
		if err != nil {
			return 0, fmt.Errorf("sandbox helper: %w", err)
		}
		argv0 = p
	}
	pid, err := syscall.ForkExec(argv0, cfg.Args, &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{0, 1, 2},
		Sys:   &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		return 0, fmt.Errorf("sandbox helper: start %s: %w", textclip.Clip(cfg.Args[0], 40), err)
	}
	return pid, nil
}

// waitFor reaps children until pid ended and returns how it did.
func waitFor(pid int) helperStatus {
	for {
		var ws unix.WaitStatus
		wpid, err := unix.Wait4(-1, &ws, 0, nil)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return helperStatus{Error: "sandbox helper: wait: " + err.Error()}
		case wpid != pid:
			continue // an orphan that was reparented to us
		case ws.Signaled():
			return helperStatus{}
		default:
			code := ws.ExitStatus()
			return helperStatus{Exit: &code}
		}
	}
}

// killTree kills and reaps every remaining descendant: the helper is a
// child subreaper, so what the command left running (even in a new session
// or double-forked) is its descendant, and once it has no children it has
// no descendants.
func killTree() {
	for {
		wpid, err := unix.Wait4(-1, nil, unix.WNOHANG, nil)
		if err == unix.ECHILD {
			return
		}
		if err == nil && wpid > 0 {
			continue
		}
		for _, p := range descendants(os.Getpid()) {
			_ = unix.Kill(p, unix.SIGKILL)
		}
		if _, err := unix.Wait4(-1, nil, 0, nil); err == unix.ECHILD {
			return
		}
	}
}

// descendants lists the processes below root, from /proc.
func descendants(root int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, ok := parentOf(pid); ok {
			children[ppid] = append(children[ppid], pid)
		}
	}
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// parentOf reads a process's parent from /proc/PID/stat.
func parentOf(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}

var errNoMountNS = errors.New("a read-only .git needs a private mount namespace, which needs CAP_SYS_ADMIN: use --sandbox bwrap or --allow-git-writes")
