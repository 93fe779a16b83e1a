package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/specloop/specloop/cmd/internal/cli"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/trace"
)

// TestRunRemote runs the 12 × 7 script on a `specloop serve` through
// `run --remote`: the run as its transcript shows it (what show --follow
// prints), the result as a local run prints it once, the same exit
// status, and the streamed trace in --trace.
func TestRunRemote(t *testing.T) {
	const token = "remote-test-token"
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	url, logs := startServe(t, "--token-file", tokenFile)

	tracePath := filepath.Join(t.TempDir(), "remote.jsonl")
	code, stdout, stderr := specloop(t, "run", "--remote", url, "--token-file", tokenFile, "--script", "testdata/calculator.script", "--trace", tracePath, prompt)
	if code != exitOK {
		t.Fatalf("exit %d: %s\n%s", code, stderr, stdout)
	}
	for _, want := range []string{
		// From the transcript: the task, the call's arguments and output.
		"task: Compute 12 x 7",
		"step 1\n  → calculator {\"left\":12,\"operation\":\"multiply\",\"right\":7}\n  ← 84\n",
		"step 2\n  finish: 12 * 7 = 84, and 84 > 80.",
		"result: finished after 2 steps",
		"answer: 12 * 7 = 84, and 84 > 80.",
		"trace:  " + tracePath,
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	// The local trace holds the run's events as the server recorded them.
	f, err := os.Open(tracePath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	log, err := trace.Read(f)
	if err != nil || len(log.Events) != 5 || log.Events[4].EventType != gen.TraceEventTypeRunFinished {
		t.Fatalf("trace: %v %+v", err, log)
	}

	// --json prints the RunResult alone, as locally.
	code, stdout, _ = specloop(t, "run", "--remote", url, "--token-file", tokenFile, "--script", "testdata/calculator.script", "--json", prompt)
	var res gen.RunResult
	if code != exitOK || json.Unmarshal([]byte(stdout), &res) != nil || res.Answer == nil || *res.Answer != "12 * 7 = 84, and 84 > 80." {
		t.Fatalf("--json: exit %d: %s", code, stdout)
	}

	// A run that ends otherwise exits with its status.
	code, stdout, _ = specloop(t, "run", "--remote", url, "--token-file", tokenFile, "--script", "testdata/calculator.script", "--max-steps", "1", prompt)
	if code != exitMaxSteps || !strings.Contains(stdout, "result: max_steps_exceeded after 1 step\nerror:  the step budget of 1 ran out (--max-steps raises it)") {
		t.Errorf("max steps: exit %d:\n%s", code, stdout)
	}

	// Errors: a wrong token, a workspace the server does not have.
	code, _, stderr = specloop(t, "run", "--remote", url, "--script", "testdata/calculator.script", prompt)
	if code != exitUsage || !strings.Contains(stderr, "401") {
		t.Errorf("without the token: exit %d: %s", code, stderr)
	}
	code, _, stderr = specloop(t, "run", "--remote", url, "--token-file", tokenFile, "--workspace", "no-such-dir", "--script", "testdata/calculator.script", prompt)
	if code != exitUsage || !strings.Contains(stderr, "workspace") {
		t.Errorf("unknown workspace: exit %d: %s", code, stderr)
	}
	code, _, stderr = specloop(t, "run", "--remote", url, "--token-file", tokenFile, "--record-raw", "--script", "testdata/calculator.script", prompt)
	if code != exitUsage || !strings.Contains(stderr, "--record-raw") {
		t.Errorf("--record-raw: exit %d: %s", code, stderr)
	}
	if strings.Contains(logs.String(), token) {
		t.Errorf("the server's log shows the token")
	}
}

// TestRunRemoteInterrupted: an interrupt cancels the run on the server and
// reports it cancelled, with exit status 130, like a local run.
func TestRunRemoteInterrupted(t *testing.T) {
	t.Setenv(cli.TokenEnv, "")
	url, _ := startServe(t, "--allow-commands")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The completion check keeps the run busy after the model finished.
	stdout := &watchWriter{want: "→ finish", seen: make(chan struct{})}
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		// Without a transcript the progress lines come from the trace,
		// which shows the finish before its check has run.
		done <- run(ctx, []string{"run", "--remote", url, "--no-transcript", "--script", "testdata/calculator.script", "--check", "sleep 30", prompt}, strings.NewReader(""), stdout, &stderr)
	}()
	select {
	case <-stdout.seen:
	case <-time.After(20 * time.Second):
		t.Fatalf("the run did not reach its finish: %s", stdout)
	}
	cancel()
	select {
	case code := <-done:
		if code != exitCancelled || !strings.Contains(stdout.String(), "result: cancelled") {
			t.Fatalf("exit %d:\n%s\n%s", code, stdout, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("run --remote did not end after the interrupt")
	}
}

// watchWriter collects output and closes seen once it contains want.
type watchWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
	once sync.Once
}

func (w *watchWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return n, err
}

func (w *watchWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
