package tools_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/sandbox"
	"github.com/specloop/specloop/tools"
)

// running lists the live processes whose command line contains marker
// (a sandboxed command's pids are not the host's, so tests find processes
// by a unique argument).
func running(marker string) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !strings.Contains(string(cmdline), marker) {
			continue
		}
		// A zombie waiting for a reaper that is not us runs nothing.
		if stat, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil {
			s := string(stat)
			if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) && s[i+2] == 'Z' {
				continue
			}
		}
		out = append(out, pid)
	}
	return out
}

// waitGone waits until no process carries marker (the kernel delivers
// kills asynchronously; 30 s is a hang guard for a loaded machine).
func waitGone(t *testing.T, marker string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		left := running(marker)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, p := range left {
				syscall.Kill(p, syscall.SIGKILL)
			}
			t.Fatalf("processes %v still run", left)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// sleepMarker is a unique `sleep` duration to find a test's processes by.
func sleepMarker() string { return fmt.Sprintf("3000.%d", rand.IntN(1e9)) }

// backends are the sandboxes available here (failing on CI when one is
// missing), plus none. With -short (the race run) only auto's choice: the
// full table runs without -short.
func backends(t *testing.T) []sandbox.Backend {
	t.Helper()
	if testing.Short() {
		return []sandbox.Backend{sandbox.Auto}
	}
	out := []sandbox.Backend{sandbox.None}
	for _, b := range []sandbox.Backend{sandbox.Landlock, sandbox.Bwrap} {
		if err := sandbox.Available(b); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("backend %s must be available on CI: %v", b, err)
			}
			t.Logf("backend %s not available: %v", b, err)
			continue
		}
		out = append(out, b)
	}
	return out
}

func sandboxRuntime(t *testing.T, dir string, p sandbox.Policy) *tools.Runtime {
	t.Helper()
	rt, err := tools.New(tools.Config{Workspace: mustWorkspace(t, dir), Sandbox: p})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

func TestRunCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rt := wsRuntime(t, dir)
	tests := []struct {
		command        string
		exit           float64
		stdout, stderr string
	}{
		{"echo out; echo err >&2", 0, "out\n", "err\n"},
		{"exit 3", 3, "", ""},
		{"kill -9 $$", -1, "", ""},
		{"pwd", 0, dir + "\n", ""},
		{"cat", 0, "", ""}, // no standard input: reads EOF at once
	}
	for _, tt := range tests {
		t.Run(tt.command, func(t *testing.T) {
			d := data(mustSucceed(t, callTool(t, rt, "run_command", map[string]any{"command": tt.command})))
			if d["exit_code"] != tt.exit || d["stdout"] != tt.stdout || d["stderr"] != tt.stderr || d["timed_out"] != false {
				t.Fatalf("result %v", d)
			}
		})
	}
}

// A command that hangs is killed at its timeout with everything it
// started, including what left its process group.
func TestRunCommandTimeoutKillsTheGroup(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			m := sleepMarker()
			rt := sandboxRuntime(t, t.TempDir(), sandbox.Policy{Backend: b})
			obs := mustSucceed(t, callTool(t, rt, "run_command", map[string]any{
				"command":         "sleep " + m + " & echo started; sleep 300",
				"timeout_seconds": 1,
			}))
			d := data(obs)
			if d["timed_out"] != true || d["exit_code"] != -1.0 || d["stdout"] != "started\n" {
				t.Fatalf("result %v", d)
			}
			if !strings.Contains(obs.Content, "timed out") {
				t.Fatalf("content %q", obs.Content)
			}
			waitGone(t, m)
		})
	}
}

// What a command leaves running in the background is killed when it ends,
// and does not hold the call up.
func TestRunCommandKillsBackgroundProcesses(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			m := sleepMarker()
			rt := sandboxRuntime(t, t.TempDir(), sandbox.Policy{Backend: b})
			d := data(mustSucceed(t, callTool(t, rt, "run_command", map[string]any{"command": "sleep " + m + " &"})))
			if d["exit_code"] != 0.0 {
				t.Fatalf("result %v", d)
			}
			waitGone(t, m)
		})
	}
}

// Under a sandbox even a process in a new session is killed with the
// command (it survives only with none, which the control case shows).
func TestRunCommandKillsNewSessions(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(string(b), func(t *testing.T) {
			t.Parallel()
			m := sleepMarker()
			rt := sandboxRuntime(t, t.TempDir(), sandbox.Policy{Backend: b})
			mustSucceed(t, callTool(t, rt, "run_command", map[string]any{
				"command": "setsid sh -c 'echo > g; exec sleep " + m + "' & while [ ! -s g ]; do sleep 0.01; done",
			}))
			if b == sandbox.None {
				left := running(m)
				for _, p := range left {
					syscall.Kill(p, syscall.SIGKILL)
				}
				if len(left) == 0 {
					t.Fatal("control: the new session died without a sandbox")
				}
				return
			}
			waitGone(t, m)
		})
	}
}

func TestRunCommandCancelled(t *testing.T) {
	t.Parallel()
	for _, b := range backends(t) {
		t.Run(string(b), func(t *testing.T) {
			dir, m := t.TempDir(), sleepMarker()
			rt := sandboxRuntime(t, dir, sandbox.Policy{Backend: b})
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				for {
					if _, err := os.Stat(filepath.Join(dir, "started")); err == nil {
						cancel()
						return
					}
					time.Sleep(5 * time.Millisecond)
				}
			}()
			obs, err := rt.Call(ctx, &gen.ToolCall{ToolName: "run_command", Arguments: map[string]any{"command": "sleep " + m + " & touch started; wait"}})
			if err != nil {
				t.Fatal(err)
			}
			if code(obs) != string(gen.ErrorCodeCancelled) {
				t.Fatalf("observation %+v", obs)
			}
			waitGone(t, m)
		})
	}
}

// A command's environment is an allowlist: no secret of the agent's
// environment reaches it, named like one or not (proxies with
// credentials, database passwords, DSNs), and --pass-env adds names.
func TestRunCommandEnvironmentAllowlist(t *testing.T) {
	secrets := map[string]string{
		"OPENAI_API_KEY":          "sk-openai-secret",
		"ANTHROPIC_API_KEY":       "sk-ant-secret",
		"SPECLOOP_TOKEN":          "bearer-secret",
		"Github_Token":            "gh-secret",
		"db_password":             "pw-secret",
		"AWS_SECRET_ACCESS_KEY":   "aws-secret",
		"GOOGLE_CREDENTIALS_JSON": "cred-secret",
		"SSH_AUTH_SOCK":           "/tmp/agent-secret.sock",
		"HTTP_PROXY":              "http://user:proxy-secret@proxy",
		"PGPASS":                  "pgpass-secret",
		"MYSQL_PWD":               "mysql-secret",
		"SENTRY_DSN":              "https://sentry-secret@sentry",
		"DOCKER_AUTH_CONFIG":      "docker-secret",
		"OPENAI_BASE_URL":         "https://internal-secret",
	}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	t.Setenv("SPECLOOP_TEST_PLAIN", "visible-value")
	for _, b := range backends(t) {
		t.Run(string(b), func(t *testing.T) {
			p := sandbox.Policy{Backend: b, PassEnv: []string{"SPECLOOP_TEST_PLAIN"}}
			rt := sandboxRuntime(t, t.TempDir(), p)
			obs := mustSucceed(t, callTool(t, rt, "run_command", map[string]any{"command": "env"}))
			out := data(obs)["stdout"].(string)
			if !strings.Contains(out, "SPECLOOP_TEST_PLAIN=visible-value") || !strings.Contains(out, "PATH=") {
				t.Fatalf("passed and allowlisted variables must pass: %s", out)
			}
			for k, v := range secrets {
				if strings.Contains(out, v) || strings.Contains(out, k+"=") {
					t.Errorf("%s reached the command", k)
				}
			}
			sb, err := sandbox.New(sandbox.Policy{Backend: b})
			if err != nil {
				t.Fatal(err)
			}
			check := tools.NewCommandCheck(mustWorkspace(t, t.TempDir()), "env; exit 1")
			check.Sandbox = sb
			res, err := check.Check(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range secrets {
				if strings.Contains(*res.OutputTail, v) {
					t.Errorf("a secret reached the completion check")
				}
			}
			if strings.Contains(*res.OutputTail, "visible-value") {
				t.Errorf("a variable that was not passed reached the check")
			}
		})
	}
}

// Huge outputs keep their head and tail and say how much was cut.
func TestRunCommandCapsOutput(t *testing.T) {
	t.Parallel()
	rt := wsRuntime(t, t.TempDir())
	obs := mustSucceed(t, callTool(t, rt, "run_command", map[string]any{
		"command": "echo FIRST; head -c 200000 /dev/zero | tr '\\0' x; echo; echo LAST; echo ERR >&2",
	}))
	d := data(obs)
	out := d["stdout"].(string)
	omitted, _ := d["stdout_omitted_bytes"].(float64)
	total := len("FIRST\n") + 200000 + len("\nLAST\n")
	if !strings.HasPrefix(out, "FIRST\n") || !strings.HasSuffix(out, "\nLAST\n") || !strings.Contains(out, "bytes omitted") {
		t.Fatalf("stdout head %q tail %q", out[:20], out[len(out)-20:])
	}
	if int(omitted)+32<<10 != total || len(out) > 32<<10+100 {
		t.Fatalf("omitted %v of %d, kept %d", omitted, total, len(out))
	}
	if d["stderr"] != "ERR\n" || d["stderr_omitted_bytes"] != nil {
		t.Fatalf("stderr %v", d)
	}
}

func TestCommandsCanBeDisabled(t *testing.T) {
	t.Parallel()
	ws := mustWorkspace(t, t.TempDir())
	rt, err := tools.New(tools.Config{Workspace: ws, DisableCommands: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range rt.Specs() {
		if s.Name == "run_command" {
			t.Fatal("run_command is offered with commands disabled")
		}
	}
	if obs := callTool(t, rt, "run_command", map[string]any{"command": "true"}); code(obs) != string(gen.ErrorCodeUnknownTool) {
		t.Fatalf("observation %+v", obs)
	}
}

func mustWorkspace(t testing.TB, dir string) *tools.Workspace {
	t.Helper()
	ws, err := tools.OpenWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws
}
