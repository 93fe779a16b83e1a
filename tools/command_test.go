package tools_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/tools"
)

// gone reports whether process pid no longer runs (a zombie waiting for a
// reaper that is not us counts as gone: it runs nothing).
func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); err == syscall.ESRCH {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// The state follows the parenthesized command name.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !gone(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("process %d still runs", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	pid, err := strconv.Atoi(strings.TrimSpace(readFile(t, path)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func TestRunCommand(t *testing.T) {
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

// A command that hangs is killed at its timeout with everything it started.
func TestRunCommandTimeoutKillsTheGroup(t *testing.T) {
	dir := t.TempDir()
	rt := wsRuntime(t, dir)
	start := time.Now()
	obs := mustSucceed(t, callTool(t, rt, "run_command", map[string]any{
		"command":         "sleep 300 & echo $! > child.pid; echo started; sleep 300",
		"timeout_seconds": 1,
	}))
	if took := time.Since(start); took > 15*time.Second {
		t.Fatalf("took %v", took)
	}
	d := data(obs)
	if d["timed_out"] != true || d["exit_code"] != -1.0 || d["stdout"] != "started\n" {
		t.Fatalf("result %v", d)
	}
	if !strings.Contains(obs.Content, "timed out") {
		t.Fatalf("content %q", obs.Content)
	}
	waitGone(t, readPid(t, filepath.Join(dir, "child.pid")))
}

// What a command leaves running in the background is killed when it ends,
// and does not hold the call up.
func TestRunCommandKillsBackgroundProcesses(t *testing.T) {
	dir := t.TempDir()
	rt := wsRuntime(t, dir)
	start := time.Now()
	d := data(mustSucceed(t, callTool(t, rt, "run_command", map[string]any{"command": "sleep 300 & echo $! > bg.pid"})))
	if d["exit_code"] != 0.0 || time.Since(start) > 10*time.Second {
		t.Fatalf("result %v after %v", d, time.Since(start))
	}
	waitGone(t, readPid(t, filepath.Join(dir, "bg.pid")))
}

func TestRunCommandCancelled(t *testing.T) {
	dir := t.TempDir()
	rt := wsRuntime(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for {
			if _, err := os.Stat(filepath.Join(dir, "child.pid")); err == nil {
				cancel()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	obs, err := rt.Call(ctx, &gen.ToolCall{ToolName: "run_command", Arguments: map[string]any{"command": "sleep 300 & echo $! > child.pid.tmp; mv child.pid.tmp child.pid; wait"}})
	if err != nil {
		t.Fatal(err)
	}
	if code(obs) != tools.CodeCancelled {
		t.Fatalf("observation %+v", obs)
	}
	waitGone(t, readPid(t, filepath.Join(dir, "child.pid")))
}

// A secret in the agent's environment never reaches a command.
func TestRunCommandScrubsSecrets(t *testing.T) {
	secrets := map[string]string{
		"OPENAI_API_KEY":          "sk-openai-secret",
		"ANTHROPIC_API_KEY":       "sk-ant-secret",
		"SPECLOOP_TOKEN":          "bearer-secret",
		"Github_Token":            "gh-secret",
		"db_password":             "pw-secret",
		"MYSQL_PASSWD":            "passwd-secret",
		"AWS_SECRET_ACCESS_KEY":   "aws-secret",
		"GOOGLE_CREDENTIALS_JSON": "cred-secret",
		"SSH_AUTH_SOCK":           "/tmp/agent-secret.sock",
	}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	t.Setenv("SPECLOOP_TEST_PLAIN", "visible-value")
	rt := wsRuntime(t, t.TempDir())
	obs := mustSucceed(t, callTool(t, rt, "run_command", map[string]any{"command": "env"}))
	out := data(obs)["stdout"].(string)
	if !strings.Contains(out, "SPECLOOP_TEST_PLAIN=visible-value") || !strings.Contains(out, "PATH=") {
		t.Fatalf("ordinary variables must pass: %s", out)
	}
	for k, v := range secrets {
		if strings.Contains(out, v) || strings.Contains(out, k+"=") {
			t.Errorf("%s reached the command", k)
		}
	}
	check := tools.NewCommandCheck(mustWorkspace(t, t.TempDir()), "env; exit 1")
	res, err := check.Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range secrets {
		if strings.Contains(*res.OutputTail, v) {
			t.Errorf("a secret reached the completion check")
		}
	}
}

// Huge outputs keep their head and tail and say how much was cut.
func TestRunCommandCapsOutput(t *testing.T) {
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
	if obs := callTool(t, rt, "run_command", map[string]any{"command": "true"}); code(obs) != tools.CodeUnknownTool {
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
