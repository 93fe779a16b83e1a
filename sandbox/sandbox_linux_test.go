package sandbox_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/specloop/specloop/sandbox"
)

// TestMain lets the test binary serve as its own probe inside sandboxes
// (copied into a workspace, where sandboxed commands may execute it) and
// as a parent process that the crash test kills. The sandbox helper itself
// runs from the sandbox package's init.
func TestMain(m *testing.M) {
	if len(os.Args) > 2 {
		switch os.Args[1] {
		case "probe":
			os.Exit(probe(os.Args[2], os.Args[3:]))
		case "crashparent":
			os.Exit(crashParent(os.Args[2:]))
		}
	}
	os.Exit(m.Run())
}

// probe tries one network action and exits 0 when it worked.
func probe(kind string, args []string) int {
	var err error
	switch kind {
	case "tcp":
		var c net.Conn
		if c, err = net.DialTimeout("tcp", args[0], 5*time.Second); err == nil {
			_, err = c.Write([]byte("probe"))
			c.Close()
		}
	case "udp":
		var c net.Conn
		if c, err = net.Dial("udp", args[0]); err == nil {
			_, err = c.Write([]byte("probe"))
			c.Close()
		}
	default:
		err = fmt.Errorf("unknown probe %q", kind)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "probe:", err)
		return 1
	}
	fmt.Println("probe: sent")
	return 0
}

// crashParent runs a command that leaves a grandchild in a new session and
// then hangs, so that the test can kill this process with SIGKILL.
func crashParent(args []string) int {
	backend, dir, marker := sandbox.Backend(args[0]), args[1], args[2]
	sb, err := sandbox.New(sandbox.Policy{Backend: backend})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	d, err := os.Open(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	script := grandchildren(marker) + "; touch started; sleep 300"
	_, err = sb.Run(context.Background(), sandbox.Command{Args: []string{"/bin/sh", "-c", script}, Dir: d, DirPath: dir, Stdout: io.Discard, Stderr: io.Discard, Timeout: time.Hour})
	fmt.Fprintln(os.Stderr, "crashparent: the command ended:", err)
	return 1
}

// confining lists the backends that must confine, and fails the test when
// one is missing on CI (CI=true installs bubblewrap and has Landlock).
func confining(t *testing.T) []sandbox.Backend {
	t.Helper()
	var out []sandbox.Backend
	for _, b := range []sandbox.Backend{sandbox.Landlock, sandbox.Bwrap} {
		if err := sandbox.Available(b); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("backend %s must be available on CI: %v", b, err)
			}
			t.Logf("backend %s not available here: %v", b, err)
			continue
		}
		out = append(out, b)
	}
	if len(out) == 0 {
		t.Skip("no confining backend on this machine")
	}
	return out
}

// withControl adds None to the backends: under None each attack must
// succeed, which proves the probe would catch a sandbox that lets it.
func withControl(t *testing.T) []sandbox.Backend {
	return append(confining(t), sandbox.None)
}

// shortTurn skips, under -short, the i-th case of an attack unless b is
// the confining backend whose turn it is (they take the cases in turn) or
// the control of the first case: every case still meets a sandbox, and
// every backend runs every case without -short.
func shortTurn(t *testing.T, i int, b sandbox.Backend, conf []sandbox.Backend) {
	t.Helper()
	if testing.Short() && b != conf[i%len(conf)] && (b != sandbox.None || i > 0) {
		t.Skipf("-short runs this case under %s; every backend runs it without -short", conf[i%len(conf)])
	}
}

type ran struct {
	res            sandbox.Result
	stdout, stderr string
}

func runPolicy(t *testing.T, p sandbox.Policy, dir, script string, timeout time.Duration) ran {
	t.Helper()
	r, err := runScript(t, p, dir, script, timeout)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return r
}

// runScript runs script with /bin/sh in dir under p and returns how it
// ended and the error of sandbox.Run.
func runScript(t *testing.T, p sandbox.Policy, dir, script string, timeout time.Duration) (ran, error) {
	t.Helper()
	sb, err := sandbox.New(p)
	if err != nil {
		t.Fatal(err)
	}
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var out, errb bytes.Buffer
	res, err := sb.Run(context.Background(), sandbox.Command{
		Args: []string{"/bin/sh", "-c", script}, Dir: d, DirPath: dir,
		Stdout: &out, Stderr: &errb, Timeout: timeout,
	})
	return ran{res, out.String(), errb.String()}, err
}

func run(t *testing.T, b sandbox.Backend, dir, script string) ran {
	t.Helper()
	return runPolicy(t, sandbox.Policy{Backend: b}, dir, script, time.Minute)
}

// withProbe copies the test binary into dir as ./probe.
func withProbe(t *testing.T, dir string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "probe"), b, 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestBasics(t *testing.T) {
	t.Parallel()
	for _, b := range withControl(t) {
		t.Run(string(b), func(t *testing.T) {
			dir := t.TempDir()
			tests := []struct {
				script, stdout, stderr string
				exit                   int
			}{
				{"echo out; echo err >&2", "out\n", "err\n", 0},
				{"exit 3", "", "", 3},
				{"kill -9 $$", "", "", -1},
				{"pwd", dir + "\n", "", 0},
				{"cat", "", "", 0},
				{"echo hi > f && cat f && rm f", "hi\n", "", 0},
				{`test "$HOME" != "` + os.Getenv("HOME") + `" && touch "$HOME/x" "$TMPDIR/y" && echo ok`, "ok\n", "", 0},
			}
			for _, tt := range tests {
				r := run(t, b, dir, tt.script)
				if r.res.ExitCode != tt.exit || r.stdout != tt.stdout || r.stderr != tt.stderr || r.res.TimedOut {
					t.Errorf("%q: %+v", tt.script, r)
				}
			}
		})
	}
}

// The Go toolchain works inside the sandbox: the completion check of the
// demo is `go test`.
func TestGoToolchain(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds a Go test")
	}
	for _, b := range confining(t) {
		t.Run(string(b), func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module m\n\ngo 1.21\n"), 0o644)
			os.WriteFile(filepath.Join(dir, "m_test.go"), []byte("package m\n\nimport \"testing\"\n\nfunc TestX(t *testing.T) {}\n"), 0o644)
			r := run(t, b, dir, "go test ./... 2>&1")
			if r.res.ExitCode != 0 || !strings.Contains(r.stdout, "ok") {
				t.Fatalf("go test in the sandbox: %+v", r)
			}
		})
	}
}

func TestInfo(t *testing.T) {
	t.Parallel()
	for _, b := range confining(t) {
		sb, err := sandbox.New(sandbox.Policy{Backend: b, AllowNetwork: true})
		if err != nil {
			t.Fatal(err)
		}
		info := sb.Info()
		if info.Backend != b || !info.AllowNetwork || (b == sandbox.Landlock) != (info.LandlockABI > 0) {
			t.Errorf("%s: info %+v", b, info)
		}
	}
	sb, err := sandbox.New(sandbox.Policy{})
	if err != nil {
		t.Fatal(err)
	}
	if b := sb.Info().Backend; b != sandbox.Bwrap && b != sandbox.Landlock {
		t.Fatalf("auto resolved to %q", b)
	}
	// Unconfined commands can reach the network and write .git whatever
	// the policy says, and the record must not claim otherwise.
	if sb, err := sandbox.New(sandbox.Policy{Backend: sandbox.None}); err != nil {
		t.Fatal(err)
	} else if info := sb.Info(); !info.AllowNetwork || !info.AllowGitWrites {
		t.Fatalf("none recorded as %+v: network and git writes must be true", info)
	}
	if _, err := sandbox.ParseBackend("chroot"); err == nil {
		t.Fatal("an unknown backend was accepted")
	}
}

// A command cannot read the environment of other processes (the agent,
// the server: API keys and tokens) through /proc. /proc/PID/environ shows
// a process's initial environment, so the victim is a process started with
// the secret, standing in for the server; the command's own parent is read
// too.
func TestParentEnvironInvisible(t *testing.T) {
	t.Parallel()
	const secret = "sk-specloop-test-secret-4711"
	victim, err := os.StartProcess("/bin/sleep", []string{"sleep", "300"}, &os.ProcAttr{Env: []string{"SPECLOOP_TEST_API_KEY=" + secret}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { victim.Kill(); victim.Wait() }()
	for _, b := range withControl(t) {
		t.Run(string(b), func(t *testing.T) {
			r := run(t, b, t.TempDir(), fmt.Sprintf("cat /proc/%d/environ; cat /proc/$PPID/environ; env", victim.Pid))
			leaked := strings.Contains(r.stdout, secret)
			if b == sandbox.None {
				if !leaked {
					t.Fatalf("control: the unconfined command should read the victim's environ: %+v", r)
				}
				return
			}
			if leaked {
				t.Fatalf("another process's environment reached the command")
			}
		})
	}
}

// A command cannot signal processes outside its sandbox (the server, other
// runs' commands).
func TestCannotSignalOthers(t *testing.T) {
	t.Parallel()
	for _, b := range withControl(t) {
		t.Run(string(b), func(t *testing.T) {
			victim, err := os.StartProcess("/bin/sleep", []string{"sleep", "300"}, &os.ProcAttr{})
			if err != nil {
				t.Fatal(err)
			}
			defer victim.Kill()
			r := run(t, b, t.TempDir(), fmt.Sprintf("kill -9 %d", victim.Pid))
			victim.Kill()
			st, err := victim.Wait()
			if err != nil {
				t.Fatal(err)
			}
			// Killed by the command: SIGKILL before our Kill; the
			// command's exit code tells which (kill fails in a sandbox).
			killedByCommand := r.res.ExitCode == 0
			if b == sandbox.None {
				if !killedByCommand {
					t.Fatalf("control: %+v (%v)", r, st)
				}
				return
			}
			if killedByCommand {
				t.Fatalf("the command signalled a process outside its sandbox: %+v", r)
			}
		})
	}
}

func TestNoTCP(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	for _, b := range withControl(t) {
		t.Run(string(b), func(t *testing.T) {
			dir := t.TempDir()
			withProbe(t, dir)
			before := accepted.Load()
			r := run(t, b, dir, "./probe probe tcp "+ln.Addr().String())
			got := accepted.Load() - before
			if b == sandbox.None {
				if r.res.ExitCode != 0 {
					t.Fatalf("control: %+v", r)
				}
				return
			}
			if r.res.ExitCode == 0 || got != 0 {
				t.Fatalf("a TCP connection was made: %+v", r)
			}
			// Allowed per policy.
			r = runPolicy(t, sandbox.Policy{Backend: b, AllowNetwork: true}, dir, "./probe probe tcp "+ln.Addr().String(), time.Minute)
			if r.res.ExitCode != 0 {
				t.Fatalf("AllowNetwork: %+v", r)
			}
		})
	}
}

func TestNoUDP(t *testing.T) {
	t.Parallel()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	addr := pc.LocalAddr().String()
	for _, b := range withControl(t) {
		t.Run(string(b), func(t *testing.T) {
			dir := t.TempDir()
			withProbe(t, dir)
			r := run(t, b, dir, "./probe probe udp "+addr)
			// The test's own packet goes after whatever the command sent;
			// the first packet read tells whether the command got one out.
			marker := "marker-" + string(b)
			c, err := net.Dial("udp", addr)
			if err != nil {
				t.Fatal(err)
			}
			c.Write([]byte(marker))
			c.Close()
			buf := make([]byte, 64)
			pc.SetReadDeadline(time.Now().Add(10 * time.Second))
			n, _, err := pc.ReadFrom(buf)
			if err != nil {
				t.Fatal(err)
			}
			first := string(buf[:n])
			if b == sandbox.None {
				if first != "probe" {
					t.Fatalf("control: first packet %q, run %+v", first, r)
				}
				_, _, _ = pc.ReadFrom(buf) // the marker
				return
			}
			// Under bwrap the packet goes to the sandbox's own loopback.
			if first != marker || (b == sandbox.Landlock && r.res.ExitCode == 0) {
				t.Fatalf("a UDP packet was sent: first packet %q, run %+v", first, r)
			}
		})
	}
}

// A command can neither read nor write outside its workspace (another
// workspace, the home directory).
func TestFilesOutsideWorkspace(t *testing.T) {
	t.Parallel()
	for _, b := range withControl(t) {
		t.Run(string(b), func(t *testing.T) {
			other := t.TempDir()
			os.WriteFile(filepath.Join(other, "secret.txt"), []byte("other-workspace-secret"), 0o644)
			script := fmt.Sprintf("cat %[1]s/secret.txt; echo pwned > %[1]s/new.txt; echo pwned >> %[1]s/secret.txt; ls %[2]s", other, os.Getenv("HOME"))
			r := run(t, b, t.TempDir(), script)
			content, _ := os.ReadFile(filepath.Join(other, "secret.txt"))
			_, newErr := os.Stat(filepath.Join(other, "new.txt"))
			escaped := strings.Contains(r.stdout, "other-workspace-secret") || newErr == nil || string(content) != "other-workspace-secret"
			if b == sandbox.None {
				if !escaped {
					t.Fatalf("control: %+v", r)
				}
				return
			}
			if escaped {
				t.Fatalf("the command reached another directory: %+v", r)
			}
		})
	}
}

// .git is read-only to commands unless git writes are allowed: a command
// must not plant a filter or fsmonitor that the runtime's git would run.
func TestGitReadOnly(t *testing.T) {
	t.Parallel()
	for _, b := range confining(t) {
		for _, allow := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/allow=%v", b, allow), func(t *testing.T) {
				dir := t.TempDir()
				os.MkdirAll(filepath.Join(dir, ".git", "hooks"), 0o755)
				cfg := filepath.Join(dir, ".git", "config")
				os.WriteFile(cfg, []byte("[core]\n"), 0o644)
				// As root, first try to undo the read-only mount.
				script := "umount .git; mount -o remount,rw,bind .git; " +
					"echo '[core] fsmonitor = ./evil' >> .git/config; echo x > .git/hooks/pre-commit; echo ok > file"
				r := runPolicy(t, sandbox.Policy{Backend: b, AllowGitWrites: allow}, dir, script, time.Minute)
				content, _ := os.ReadFile(cfg)
				_, hookErr := os.Stat(filepath.Join(dir, ".git", "hooks", "pre-commit"))
				changed := string(content) != "[core]\n" || hookErr == nil
				if changed != allow {
					t.Fatalf("git writes allowed=%v, changed=%v: %+v", allow, changed, r)
				}
				if got, _ := os.ReadFile(filepath.Join(dir, "file")); string(got) != "ok\n" {
					t.Fatalf("the workspace must stay writable: %+v", r)
				}
			})
		}
	}
}

// grandchildren is a script that starts two processes carrying marker m
// that leave the command's process group: one in a new session, one
// double-forked into a new session; it returns once both run.
func grandchildren(m string) string {
	// The sleeps hold no output open: a command whose background does
	// (the unconfined control's) would keep Run reading for the grace.
	return "setsid sh -c 'echo $$ > g1; exec sleep " + m + " >/dev/null 2>&1' & (setsid sh -c 'echo $$ > g2; exec sleep " + m + " >/dev/null 2>&1' &); " +
		"while [ ! -s g1 ] || [ ! -s g2 ]; do sleep 0.01; done"
}

// The unprivileged path to a read-only .git under Landlock (a user
// namespace that owns the helper's mount namespace) works too; as root it
// is forced.
func TestGitReadOnlyUserNamespace(t *testing.T) {
	if err := sandbox.Available(sandbox.Landlock); err != nil {
		t.Skip(err)
	}
	sandbox.ForceUserNS(true)
	defer sandbox.ForceUserNS(false)
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, ".git"), 0o755)
	cfg := filepath.Join(dir, ".git", "config")
	os.WriteFile(cfg, []byte("[core]\n"), 0o644)
	r := run(t, sandbox.Landlock, dir, "umount .git; echo evil >> .git/config; echo ok > file; cat /proc/self/status | grep CapEff; cat /proc/self/uid_map")
	if content, _ := os.ReadFile(cfg); string(content) != "[core]\n" {
		t.Fatalf(".git/config changed: %+v", r)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "file")); string(got) != "ok\n" || !strings.Contains(r.stdout, "CapEff:\t0000000000000000") {
		t.Fatalf("run %+v", r)
	}
	// The command is in the user namespace that maps one id.
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if f := strings.Fields(lines[len(lines)-1]); len(f) != 3 || f[2] != "1" {
		t.Fatalf("run %+v", r)
	}
}

// marker returns a unique sleep duration to find a test's processes by.
func marker() string {
	return fmt.Sprintf("3000.%d", rand.IntN(1e9))
}

// procsWith lists the processes whose command line contains s.
func procsWith(s string) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.Contains(cmdline, []byte(s)) {
			continue
		}
		if stat, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil {
			if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
				continue
			}
		}
		out = append(out, pid)
	}
	return out
}

// killAll kills the processes that carry m at once and returns them.
func killAll(m string) []int {
	left := procsWith(m)
	for _, p := range left {
		syscall.Kill(p, syscall.SIGKILL)
	}
	return left
}

// survivors waits (up to 30 s, a hang guard: the kernel delivers kills
// asynchronously) until no process carries m, and returns those still
// there; they are killed.
func survivors(m string) []int {
	deadline := time.Now().Add(30 * time.Second)
	for {
		left := procsWith(m)
		if len(left) == 0 || time.Now().After(deadline) {
			for _, p := range left {
				syscall.Kill(p, syscall.SIGKILL)
			}
			return left
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Processes a command starts in a new session, or double-forked, are gone
// when it ends and when it times out.
func TestNoSurvivors(t *testing.T) {
	t.Parallel()
	for _, b := range withControl(t) {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel() // each case finds its processes by its own marker
			m := marker()
			r := run(t, b, t.TempDir(), grandchildren(m)+"; echo started")
			if b == sandbox.None {
				if len(killAll(m)) == 0 {
					t.Fatalf("control: nothing survived: %+v", r)
				}
				return
			}
			left := survivors(m)
			if r.stdout != "started\n" || len(left) != 0 {
				t.Fatalf("survivors %v after %+v", left, r)
			}
			m = marker()
			r = runPolicy(t, sandbox.Policy{Backend: b}, t.TempDir(), grandchildren(m)+"; echo started; sleep 300", time.Second)
			if !r.res.TimedOut || r.res.ExitCode != -1 {
				t.Fatalf("timeout: %+v", r)
			}
			if left := survivors(m); len(left) != 0 {
				t.Fatalf("survivors %v after the timeout", left)
			}
		})
	}
}

// A cancelled context ends a command and everything it started, and Run
// returns the context's error.
func TestCancelEndsTree(t *testing.T) {
	t.Parallel()
	for _, b := range confining(t) {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			dir, m := t.TempDir(), marker()
			sb, err := sandbox.New(sandbox.Policy{Backend: b})
			if err != nil {
				t.Fatal(err)
			}
			d, err := os.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				defer cancel()
				for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
					g1, _ := os.ReadFile(filepath.Join(dir, "g1"))
					g2, _ := os.ReadFile(filepath.Join(dir, "g2"))
					if len(g1) > 0 && len(g2) > 0 {
						return
					}
				}
			}()
			_, err = sb.Run(ctx, sandbox.Command{
				Args: []string{"/bin/sh", "-c", grandchildren(m) + "; sleep 300"}, Dir: d, DirPath: dir,
				Timeout: time.Minute,
			})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
			if left := survivors(m); len(left) != 0 {
				t.Fatalf("survivors %v of the cancellation", left)
			}
		})
	}
}

// When the process that ran a command dies (a server crash, kill -9), the
// command and everything it started die too.
func TestNoSurvivorsOfParentCrash(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range withControl(t) {
		t.Run(string(b), func(t *testing.T) {
			dir, m := t.TempDir(), marker()
			parent, err := os.StartProcess(exe, []string{exe, "crashparent", string(b), dir, m}, &os.ProcAttr{Files: []*os.File{nil, os.Stderr, os.Stderr}})
			if err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(30 * time.Second)
			for {
				if _, err := os.Stat(filepath.Join(dir, "started")); err == nil {
					break
				}
				if time.Now().After(deadline) {
					parent.Kill()
					t.Fatal("the command did not start")
				}
				time.Sleep(10 * time.Millisecond)
			}
			if len(procsWith(m)) == 0 {
				t.Fatal("the grandchildren are not running")
			}
			parent.Kill()
			parent.Wait()
			if b == sandbox.None {
				if len(killAll(m)) == 0 {
					t.Fatal("control: nothing survived the parent")
				}
				return
			}
			left := survivors(m)
			if len(left) != 0 {
				t.Fatalf("survivors %v of the parent's death", left)
			}
		})
	}
}

// The environment is an allowlist: variables that name no secret word
// (proxies with credentials, database passwords) do not pass either.
func TestEnvironmentAllowlist(t *testing.T) {
	leaky := map[string]string{
		"HTTP_PROXY":         "http://user:pw@proxy",
		"PGPASS":             "pg-secret",
		"MYSQL_PWD":          "mysql-secret",
		"SENTRY_DSN":         "https://key@sentry",
		"DOCKER_AUTH_CONFIG": "docker-secret",
		"OPENAI_BASE_URL":    "https://internal",
	}
	for k, v := range leaky {
		t.Setenv(k, v)
	}
	t.Setenv("SPECLOOP_PASSED", "passed-value")
	for _, b := range withControl(t) {
		t.Run(string(b), func(t *testing.T) {
			r := runPolicy(t, sandbox.Policy{Backend: b, PassEnv: []string{"SPECLOOP_PASSED"}}, t.TempDir(), "env", time.Minute)
			for k, v := range leaky {
				if strings.Contains(r.stdout, v) || strings.Contains(r.stdout, k+"=") {
					t.Errorf("%s reached the command", k)
				}
			}
			if !strings.Contains(r.stdout, "SPECLOOP_PASSED=passed-value") || !strings.Contains(r.stdout, "PATH=") {
				t.Errorf("allowlisted variables missing: %s", r.stdout)
			}
		})
	}
}

// The command runs in the directory it was given as it was when opened:
// replacing the path with a symbolic link afterwards changes nothing.
func TestDirectoryFromHandle(t *testing.T) {
	t.Parallel()
	for _, b := range withControl(t) {
		t.Run(string(b), func(t *testing.T) {
			base := t.TempDir()
			ws, elsewhere := filepath.Join(base, "ws"), filepath.Join(base, "elsewhere")
			os.Mkdir(ws, 0o755)
			os.Mkdir(elsewhere, 0o755)
			os.WriteFile(filepath.Join(ws, "mine"), []byte("mine"), 0o644)
			sb, err := sandbox.New(sandbox.Policy{Backend: b})
			if err != nil {
				t.Fatal(err)
			}
			d, err := os.Open(ws)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			os.Rename(ws, filepath.Join(base, "moved"))
			os.Symlink(elsewhere, ws)
			var out bytes.Buffer
			res, err := sb.Run(context.Background(), sandbox.Command{Args: []string{"/bin/sh", "-c", "cat mine; echo x > written"}, Dir: d, DirPath: ws, Stdout: &out, Stderr: &out, Timeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(elsewhere, "written")); err == nil || out.String() != "mine" || res.ExitCode != 0 {
				t.Fatalf("the command ran elsewhere: %q %+v", out.String(), res)
			}
		})
	}
}

func BenchmarkTrue(b *testing.B) {
	for _, backend := range []sandbox.Backend{sandbox.None, sandbox.Landlock, sandbox.Bwrap} {
		b.Run(string(backend), func(b *testing.B) {
			sb, err := sandbox.New(sandbox.Policy{Backend: backend})
			if err != nil {
				b.Skip(err)
			}
			dir := b.TempDir()
			d, err := os.Open(dir)
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			c := sandbox.Command{Args: []string{"true"}, Dir: d, DirPath: dir, Stdout: io.Discard, Stderr: io.Discard, Timeout: time.Minute}
			for b.Loop() {
				if res, err := sb.Run(context.Background(), c); err != nil || res.ExitCode != 0 {
					b.Fatal(res, err)
				}
			}
		})
	}
}

// A command cannot plant entries in the user's own Go build cache, which
// the user's later builds outside any sandbox would link: sandboxed
// commands get a build cache of their own.
func TestUserGoCacheUntouched(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		t.Fatalf("go env GOCACHE: %v", err)
	}
	userCache := strings.TrimSpace(string(out))
	if err := os.MkdirAll(userCache, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, b := range withControl(t) {
		t.Run(string(b), func(t *testing.T) {
			planted := filepath.Join(userCache, "specloop-planted-"+marker())
			t.Cleanup(func() { os.Remove(planted) })
			r := run(t, b, t.TempDir(), fmt.Sprintf(`echo "$GOCACHE"; echo poison > %q`, planted))
			if got := strings.TrimSpace(r.stdout); got == "" || got == userCache {
				t.Fatalf("the sandbox's GOCACHE is %q, the user's is %q: they must differ", got, userCache)
			}
			_, statErr := os.Stat(planted)
			if b == sandbox.None {
				if statErr != nil {
					t.Fatalf("control: the unconfined command could not write the user's cache: %+v", r)
				}
				return
			}
			if statErr == nil {
				t.Fatalf("the command wrote into the user's build cache %s", userCache)
			}
		})
	}
}
