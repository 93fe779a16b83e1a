package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/server"
)

// terminal is a pseudo-terminal a command runs on: the test reads what
// it prints and types answers, as a person would.
type terminal struct {
	t    *testing.T
	ptmx *os.File // the test's side
	tty  *os.File // the command's stdin, stdout and stderr

	mu     sync.Mutex
	out    bytes.Buffer
	off    int           // where the next expect looks from
	closed chan struct{} // closed when the test's side reads no more
}

func newTerminal(t *testing.T) *terminal {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	term := &terminal{t: t, ptmx: ptmx, tty: tty, closed: make(chan struct{})}
	go func() {
		defer close(term.closed)
		buf := make([]byte, 4096)
		for {
			n, err := ptmx.Read(buf)
			term.mu.Lock()
			term.out.Write(buf[:n])
			term.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		tty.Close()
		ptmx.Close()
	})
	return term
}

// run runs the command on the terminal; the exit status arrives on the
// channel.
func (term *terminal) run(ctx context.Context, args ...string) <-chan int {
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, term.tty, term.tty, term.tty) }()
	return done
}

// expect waits (at most 20 s) until the terminal shows s after what the
// previous expect matched.
func (term *terminal) expect(s string) {
	term.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		term.mu.Lock()
		out := term.out.String()
		i := strings.Index(out[term.off:], s)
		if i >= 0 {
			term.off += i + len(s)
		}
		term.mu.Unlock()
		if i >= 0 {
			return
		}
		if time.Now().After(deadline) {
			term.t.Fatalf("the terminal does not show %q after 20 s; it shows:\n%s", s, out)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// answer types a line.
func (term *terminal) answer(line string) {
	term.t.Helper()
	if _, err := term.ptmx.Write([]byte(line + "\n")); err != nil {
		term.t.Fatal(err)
	}
}

// drain closes the command's side once the command ended and returns
// every byte the terminal received.
func (term *terminal) drain() []byte {
	term.t.Helper()
	term.tty.Close()
	select {
	case <-term.closed:
	case <-time.After(30 * time.Second):
		term.t.Fatalf("the terminal was not drained in 30 s; it shows:\n%s", term)
	}
	term.mu.Lock()
	defer term.mu.Unlock()
	return bytes.Clone(term.out.Bytes())
}

func (term *terminal) String() string {
	term.mu.Lock()
	defer term.mu.Unlock()
	return term.out.String()
}

// exit waits (at most 20 s) for the command's exit status.
func (term *terminal) exit(done <-chan int) int {
	term.t.Helper()
	select {
	case code := <-done:
		return code
	case <-time.After(20 * time.Second):
		term.t.Fatalf("the command did not end in 20 s; the terminal shows:\n%s", term)
		return 0
	}
}

func writeAction(id, path, content string) string {
	b, _ := json.Marshal(map[string]any{"type": "tool_call", "tool_name": "write_file", "call_id": id,
		"arguments": map[string]any{"path": path, "content": content}})
	return string(b)
}

// scriptFile writes a script of responses and returns its path.
func scriptFile(t *testing.T, responses ...string) string {
	path := filepath.Join(t.TempDir(), "approve.script")
	if err := os.WriteFile(path, []byte(strings.Join(responses, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const secretContent = "password=hunter2-9f8e7d"

// approvalScript: two writes in one turn, a write of a secret, one more
// write, finish.
func approvalScript(t *testing.T) string {
	return scriptFile(t, `{"actions":[`+writeAction("w1", "a.txt", "a")+","+writeAction("w2", "b.txt", "b")+`]}`,
		writeAction("w3", "c.txt", secretContent), writeAction("w4", "d.txt", "d"), `{"type":"finish","answer":"done"}`)
}

// answerApprovalScript answers approvalScript's questions: y to w1, n with
// a reason to w2, a(lways) to w3; w4 is not asked about.
func answerApprovalScript(term *terminal) {
	term.expect("approval needed: step 1 calls write_file (call w1)")
	term.expect("path: a.txt")
	term.expect("run it? [y]es, [n]o, [a]lways for this tool in this run: ")
	term.answer("y")
	term.expect("(call w2)")
	term.expect("run it?")
	term.answer("n")
	term.expect("reason, told to the model (optional): ")
	term.answer("b is generated")
	term.expect("(call w3)")
	term.expect("content: " + secretContent)
	term.expect("run it?")
	term.answer("a")
	term.expect("result: finished after 4 steps")
}

func checkApprovalScriptFiles(t *testing.T, dir string) {
	t.Helper()
	for name, want := range map[string]bool{"a.txt": true, "b.txt": false, "c.txt": true, "d.txt": true} {
		if _, err := os.Stat(filepath.Join(dir, name)); (err == nil) != want {
			t.Errorf("%s exists: %v, want %v", name, err == nil, want)
		}
	}
}

// `specloop run --approval writes` asks on the terminal: it shows the
// tool and the arguments, y runs the call, n denies it with a typed
// reason (the model is told, the run goes on), a approves the tool for
// the rest of the run; the two calls of one turn are asked in order, and
// the trace holds neither argument values nor the reason.
func TestTerminalApproval(t *testing.T) {
	term := newTerminal(t)
	ws := t.TempDir()
	tracePath := filepath.Join(t.TempDir(), "trace.jsonl")
	done := term.run(context.Background(), "run", "--script", approvalScript(t), "--workspace", ws, "--no-commands",
		"--approval", "writes", "--trace", tracePath, "--max-steps", "10", "write the files")
	answerApprovalScript(term)
	if code := term.exit(done); code != exitOK {
		t.Fatalf("exit %d:\n%s", code, term)
	}
	if strings.Contains(term.String(), "(call w4)") {
		t.Error("asked about w4 after write_file was approved for the run")
	}
	if !strings.Contains(term.String(), "✗ write_file: error: a person denied this call of write_file; it was not run. Reason: b is generated") {
		t.Errorf("the denial is not shown:\n%s", term)
	}
	checkApprovalScriptFiles(t, ws)
	data, err := os.ReadFile(tracePath)
	if err != nil || !bytes.Contains(data, []byte(`"approval_decided"`)) {
		t.Fatalf("trace: %v\n%s", err, data)
	}
	for _, s := range []string{secretContent, "b is generated", "c.txt"} {
		if bytes.Contains(data, []byte(s)) {
			t.Errorf("the trace holds %q", s)
		}
	}
}

// A run_command question shows the command as it will run.
func TestTerminalApprovalShowsTheCommand(t *testing.T) {
	term := newTerminal(t)
	script := scriptFile(t, `{"type":"tool_call","tool_name":"run_command","call_id":"c1","arguments":{"command":"echo approved-$((6*7))"}}`,
		`{"type":"finish","answer":"done"}`)
	done := term.run(context.Background(), "run", "--script", script, "--workspace", t.TempDir(), "--approval", "commands", "run it")
	term.expect("calls run_command (call c1)")
	term.expect("command: echo approved-$((6*7))")
	term.expect("run it?")
	term.answer("yes")
	term.expect("approved-42")
	if code := term.exit(done); code != exitOK {
		t.Fatalf("exit %d:\n%s", code, term)
	}
}

// No answer within --approval-timeout denies the call and the run goes
// on; an interrupt while the question waits ends the run cancelled.
func TestTerminalApprovalTimeoutAndCancel(t *testing.T) {
	script := scriptFile(t, writeAction("w1", "a.txt", "a"), `{"type":"finish","answer":"done"}`)
	t.Run("timeout", func(t *testing.T) {
		term := newTerminal(t)
		ws := t.TempDir()
		done := term.run(context.Background(), "run", "--script", script, "--workspace", ws, "--no-commands", "--approval", "writes", "--approval-timeout", "20ms", "write")
		term.expect("run it?")
		term.expect("no answer in time: the call is denied")
		term.expect("Reason: timeout: no decision within")
		if code := term.exit(done); code != exitOK {
			t.Fatalf("exit %d:\n%s", code, term)
		}
		if _, err := os.Stat(filepath.Join(ws, "a.txt")); err == nil {
			t.Error("the timed-out write happened")
		}
	})
	t.Run("cancel", func(t *testing.T) {
		term := newTerminal(t)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := term.run(ctx, "run", "--script", script, "--workspace", t.TempDir(), "--no-commands", "--approval", "always", "write")
		term.expect("run it?")
		cancel()
		if code := term.exit(done); code != exitCancelled {
			t.Fatalf("exit %d, want %d:\n%s", code, exitCancelled, term)
		}
		term.expect("result: cancelled after 1 step")
	})
}

// Without a terminal on standard input a policy that asks fails at once,
// saying why, instead of waiting for an answer nobody can give.
func TestApprovalNeedsATerminal(t *testing.T) {
	script := scriptFile(t, writeAction("w1", "a.txt", "a"), `{"type":"finish","answer":"done"}`)
	for _, args := range [][]string{
		{"run", "--script", script, "--workspace", t.TempDir(), "--approval", "commands", "write"},
		{"run", "--remote", "http://127.0.0.1:1", "--script", script, "--approval", "writes", "write"},
	} {
		code, stdout, stderr := specloop(t, args...)
		if code != exitUsage || !strings.Contains(stderr, "standard input is not a terminal") || stdout != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout %q", args, code, stderr, stdout)
		}
	}
	code, _, stderr := specloop(t, "run", "--script", script, "--approval", "sometimes", "write")
	if code != exitUsage || !strings.Contains(stderr, "--approval must be one of never, commands, writes and always") {
		t.Errorf("an unknown policy: exit %d, %q", code, stderr)
	}
}

// `run --remote --approval writes` asks the same questions on the
// terminal and sends the answers to the server; a server that stops while
// a question waits ends the run interrupted (exit 8).
func TestTerminalApprovalRemote(t *testing.T) {
	t.Run("answers", func(t *testing.T) {
		root := t.TempDir()
		url, _ := startServe(t, "--workspace-root", root)
		term := newTerminal(t)
		done := term.run(context.Background(), "run", "--remote", url, "--script", approvalScript(t), "--approval", "writes", "--max-steps", "10", "write the files")
		answerApprovalScript(term)
		if code := term.exit(done); code != exitOK {
			t.Fatalf("exit %d:\n%s", code, term)
		}
		checkApprovalScriptFiles(t, root)
	})
	t.Run("server stops", func(t *testing.T) {
		srv, err := server.New(server.Config{Config: runner.Config{DataDir: t.TempDir(), WorkspaceRoot: t.TempDir()}})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(srv.Handler())
		defer hs.Close()
		term := newTerminal(t)
		done := term.run(context.Background(), "run", "--remote", hs.URL, "--script", approvalScript(t), "--approval", "writes", "write the files")
		term.expect("run it?")
		stopped := make(chan error, 1)
		go func() { stopped <- srv.Shutdown(context.Background()) }()
		term.expect("the call no longer waits")
		if code := term.exit(done); code != exitInterrupted {
			t.Fatalf("exit %d, want %d:\n%s", code, exitInterrupted, term)
		}
		if err := <-stopped; err != nil {
			t.Fatal(err)
		}
	})
}

// "Always" for run_command holds until the model writes a file: then the
// next command is asked about again, and the question says why.
func TestTerminalApprovalAlwaysLapsesAfterAWrite(t *testing.T) {
	term := newTerminal(t)
	script := scriptFile(t,
		`{"type":"tool_call","tool_name":"run_command","call_id":"c1","arguments":{"command":"echo first"}}`,
		`{"type":"tool_call","tool_name":"run_command","call_id":"c2","arguments":{"command":"echo second"}}`,
		writeAction("w1", "build.sh", "echo rewritten"),
		`{"type":"tool_call","tool_name":"run_command","call_id":"c3","arguments":{"command":"sh build.sh"}}`,
		`{"type":"finish","answer":"done"}`)
	done := term.run(context.Background(), "run", "--script", script, "--workspace", t.TempDir(), "--approval", "commands", "--max-steps", "10", "run it")
	term.expect("calls run_command (call c1)")
	term.expect("run it?")
	term.answer("a")
	term.expect("calls run_command (call c3)")
	term.expect("note: files in the workspace changed since run_command was last approved")
	term.expect("run it?")
	term.answer("y")
	term.expect("rewritten")
	if code := term.exit(done); code != exitOK {
		t.Fatalf("exit %d:\n%s", code, term)
	}
	if strings.Contains(term.String(), "(call c2)") {
		t.Errorf("asked about c2 although run_command was approved for the run and nothing was written:\n%s", term)
	}
}
