package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// A chat session is a conversation of runs: the first line is a run, the
// next one continues it (the model's text of the first turn reaches the
// second turn's request, and a text-only reply ends it as the answer);
// /diff and /show print the last patch and what the session said and did;
// /exit ends it.
func TestChatSession(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	url, bodies := chatServer(t,
		[]string{"I will multiply first.", "calculator", `{"left":12,"operation":"multiply","right":7}`},
		[]string{"", "finish", `{"answer":"84"}`},
		[]string{"It is 85 now."},
	)
	ws := t.TempDir()
	input := "Compute 12 x 7.\n/diff\nAdd one.\n/nonsense\n/show\n/exit\nnever read\n"
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"chat", "--model", "openai:gpt-test", "--base-url", url, "--no-commands", "--workspace", ws},
		strings.NewReader(input), &stdout, &stderr)
	out := stdout.String()
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr.String())
	}
	got := bodies()
	if len(got) != 3 {
		t.Fatalf("%d model requests, want 3\n%s", len(got), out)
	}
	if !strings.Contains(got[2], "I will multiply first.") || !strings.Contains(got[2], "Add one.") {
		t.Errorf("the second turn's request lacks the first turn's text or the message:\n%s", got[2])
	}
	for _, want := range []string{
		"answer: 84",
		"the last turn changed nothing",
		"answer: It is 85 now.",
		"task: Compute 12 x 7.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the session's output lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "transcript: specloop show ") != 2 {
		t.Errorf("want two runs:\n%s", out)
	}
	if !strings.Contains(stderr.String(), "/nonsense is not a command") {
		t.Errorf("stderr:\n%s", stderr.String())
	}
}

// A session needs a model, like a run, and takes no prompt argument.
func TestChatUsage(t *testing.T) {
	if code, _, stderr := specloop(t, "chat"); code != exitUsage || !strings.Contains(stderr, "--model") {
		t.Errorf("chat without a model: exit %d, %s", code, stderr)
	}
	if code, _, stderr := specloop(t, "chat", "--script", "testdata/calculator.script", "do it"); code != exitUsage || !strings.Contains(stderr, "type the task at the prompt") {
		t.Errorf("chat with a prompt: exit %d, %s", code, stderr)
	}
}

// Ctrl-C stops the turn in progress, not the session: the run ends
// cancelled, the prompt comes back, and the session goes on to /exit.
func TestChatCtrlCStopsTheTurnOnly(t *testing.T) {
	asked, release := make(chan struct{}, 1), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case asked <- struct{}{}:
		default:
		}
		select { // the model thinks until the turn is stopped
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	cmd := exec.Command(os.Args[0], "chat", "--model", "openai:gpt-test", "--base-url", srv.URL, "--no-commands", "--workspace", t.TempDir())
	cmd.Env = append(os.Environ(), selfServerEnv+"=1", "OPENAI_API_KEY=")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { // before the server closes, on a failure
		cmd.Process.Kill()
		cmd.Wait()
		close(release)
		if t.Failed() {
			t.Logf("the session:\n%s", out.String())
		}
	}()
	io.WriteString(stdin, "Think forever.\n")
	select {
	case <-asked:
	case <-time.After(time.Minute): // a hang guard
		t.Fatalf("the model was never asked:\n%s", out.String())
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute) // a hang guard
	for !strings.Contains(out.String(), "result: cancelled") {
		if time.Now().After(deadline) {
			t.Fatalf("the turn did not end cancelled:\n%s", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	io.WriteString(stdin, "/exit\n")
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the session did not go on to /exit: %v\n%s", err, out.String())
	}
	if n := strings.Count(out.String(), "› "); n != 2 {
		t.Errorf("%d prompts, want 2 (before the turn and after it):\n%s", n, out.String())
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A turn's approval question reads its answer from the session's own
// lines, and the session's next line is the chat's again.
func TestChatApprovesInline(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	url, bodies := chatServer(t,
		[]string{"", "calculator", `{"left":12,"operation":"multiply","right":7}`},
		[]string{"", "finish", `{"answer":"84"}`},
	)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"chat", "--model", "openai:gpt-test", "--base-url", url, "--no-commands", "--approval", "always", "--workspace", t.TempDir()},
		strings.NewReader("Compute 12 x 7.\ny\n/exit\n"), &stdout, &stderr)
	if code != exitOK || len(bodies()) != 2 {
		t.Fatalf("exit %d after %d model requests\nstdout:\n%s\nstderr:\n%s", code, len(bodies()), stdout.String(), stderr.String())
	}
	if !strings.Contains(stderr.String(), "approval needed: step 1 calls calculator") || !strings.Contains(stdout.String(), "answer: 84") {
		t.Fatalf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	}
}

// chat --continue RUN_ID picks a conversation up again: its first turn
// continues that run, its next one the turn before.
func TestChatContinues(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	url, _ := chatServer(t,
		[]string{"", "finish", `{"answer":"84"}`},
		[]string{"It is 85."},
		[]string{"It is 86."},
	)
	ws := t.TempDir()
	code, stdout, stderr := specloop(t, "run", "--model", "openai:gpt-test", "--base-url", url, "--no-commands", "--workspace", ws, "Compute 12 x 7.")
	first := shownRun.FindStringSubmatch(stdout)
	if code != exitOK || first == nil {
		t.Fatalf("run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	var out, errs bytes.Buffer
	code = run(context.Background(), []string{"chat", "--continue", first[1]}, strings.NewReader("Add one.\nAdd one more.\n"), &out, &errs)
	runs := shownRun.FindAllStringSubmatch(out.String(), -1)
	if code != exitOK || len(runs) != 2 {
		t.Fatalf("chat: exit %d\n%s\n%s", code, out.String(), errs.String())
	}
	for i, want := range []string{first[1], runs[0][1]} {
		rq, _, err := loadRunRequest(runs[i][1])
		if err != nil || rq.Continues != want {
			t.Errorf("turn %d continues %+v (%v), want %s", i+1, rq, err, want)
		}
	}
}
