package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/specloop/specloop/cmd/internal/cli"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/transcript"
)

// tinyModule writes a Go module with one passing test into a new
// workspace.
func tinyModule(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOCACHE", strings.TrimSpace(string(out)))
	t.Setenv("GOTOOLCHAIN", "local")
	ws := t.TempDir()
	for name, text := range map[string]string{
		"go.mod":       "module tiny\n\ngo 1.21\n",
		"tiny.go":      "package tiny\n\nfunc Add(a, b int) int { return a + b }\n",
		"tiny_test.go": "package tiny\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(\"2+3\")\n\t}\n}\n",
	} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

func readTranscript(t *testing.T, id string) *transcript.Log {
	t.Helper()
	f, err := os.Open(filepath.Join(os.Getenv(cli.StateHomeEnv), "specloop", "runs", id, transcript.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	log, err := transcript.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	return log
}

// observations are the observations of a transcript, as the model saw
// them.
func observations(log *transcript.Log) []string {
	var out []string
	for _, e := range log.Entries {
		if e.Observation != nil {
			out = append(out, e.Observation.Content)
		}
	}
	return out
}

// A run with real go test commands, whose output carries timings and
// (cached), replays from its transcript with no divergence: nothing is
// executed (the workspace broken since changes nothing), the observations
// are the recorded ones, and it ends where the recording did.
func TestReplayOfARunWithGoTest(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test")
	}
	ws := tinyModule(t)
	script := writeScript(t,
		`{"type":"tool_call","tool_name":"run_command","arguments":{"command":"go test -count=1 ./..."}}`,
		`{"type":"tool_call","tool_name":"run_command","arguments":{"command":"go test ./..."}}`,
		`{"type":"tool_call","tool_name":"run_command","arguments":{"command":"go test ./..."}}`,
		`{"type":"finish","answer":"the tests pass"}`)
	flags := []string{"--sandbox", "none", "--workspace", ws, "--check", "go test ./...", "--json"}
	code, recorded, stderr := specloop(t, append(append([]string{"run", "--script", script}, flags...), "Run the tests.")...)
	if code != exitOK {
		t.Fatalf("recording: exit %d\n%s%s", code, recorded, stderr)
	}
	var want gen.RunResult
	if err := json.Unmarshal([]byte(recorded), &want); err != nil {
		t.Fatal(err)
	}
	wantObs := observations(readTranscript(t, *want.RunId))
	if len(wantObs) != 3 || !strings.Contains(strings.Join(wantObs, ""), "(cached)") {
		t.Fatalf("the recorded run's observations: %q", wantObs)
	}
	// Replayed, nothing runs: a broken module changes nothing.
	if err := os.WriteFile(filepath.Join(ws, "tiny.go"), []byte("package tiny\n\nfunc Add(a, b int) int { return a - b }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, by := range []string{*want.RunId, filepath.Join(os.Getenv(cli.StateHomeEnv), "specloop", "runs", *want.RunId, transcript.FileName)} {
		code, replayed, stderr := specloop(t, append([]string{"run", "--model", "replay:" + by}, flags...)...)
		if code != exitOK {
			t.Fatalf("replay:%s: exit %d\n%s%s", by, code, replayed, stderr)
		}
		var got gen.RunResult
		if err := json.Unmarshal([]byte(replayed), &got); err != nil {
			t.Fatal(err)
		}
		if got.ExitReason != want.ExitReason || got.StepsUsed != want.StepsUsed || *got.Answer != *want.Answer || !got.Check.Passed {
			t.Fatalf("replayed %s after %d steps, recorded %s after %d", got.ExitReason, got.StepsUsed, want.ExitReason, want.StepsUsed)
		}
		if gotObs := observations(readTranscript(t, *got.RunId)); strings.Join(gotObs, "\x00") != strings.Join(wantObs, "\x00") {
			t.Fatalf("the replay saw\n%q\nthe recording\n%q", gotObs, wantObs)
		}
	}
	// A transcript cut after the first call ends the replay there, with an
	// error that names the step.
	src := filepath.Join(os.Getenv(cli.StateHomeEnv), "specloop", "runs", *want.RunId, transcript.FileName)
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	cut := filepath.Join(t.TempDir(), "cut.jsonl")
	if err := os.WriteFile(cut, []byte(lines[0]+lines[1]), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, _ := specloop(t, append([]string{"run", "--model", "replay:" + cut, "--max-steps", "3"}, flags...)...)
	if code == exitOK || !strings.Contains(out, "the replay diverged from the recorded run: step 1: a call of run_command that was not recorded") {
		t.Fatalf("a replay past the recording: exit %d, %s", code, out)
	}
}

// blockingOpenAI is an OpenAI-compatible model that answers by the number
// of tool results in the request: the calculator twice, then finish. While
// block is set, the request for the second step hangs (entered says so)
// until its client goes away, as a run killed mid-step leaves it.
type blockingOpenAI struct {
	block   atomic.Bool
	entered chan struct{}
}

func (b *blockingOpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	results := strings.Count(string(body), `"role":"tool"`)
	if results == 1 && b.block.Load() {
		b.entered <- struct{}{}
		<-r.Context().Done()
		return
	}
	call := func(id, name, args string) string {
		return `{"id":"chatcmpl-` + id + `","object":"chat.completion","created":1741570283,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,` +
			`"tool_calls":[{"id":"call_` + id + `","type":"function","function":{"name":"` + name + `","arguments":` + strconv.Quote(args) + `}}]},"finish_reason":"tool_calls"}],` +
			`"usage":{"prompt_tokens":` + strconv.Itoa(100+len(body)/100) + `,"completion_tokens":10,"total_tokens":110}}`
	}
	w.Header().Set("Content-Type", "application/json")
	switch results {
	case 0:
		io.WriteString(w, call("1", "calculator", `{"left":12,"operation":"multiply","right":7}`))
	case 1:
		io.WriteString(w, call("2", "calculator", `{"left":84,"operation":"add","right":1}`))
	default:
		io.WriteString(w, call("3", "finish", `{"answer":"84, then 85"}`))
	}
}

// A specloop run killed (SIGKILL) while its second step waits for the
// model goes on with run --resume: its first step rebuilt from the
// transcript, the second asked again, and it ends as a run that was never
// killed, each step once in its transcript.
func TestRunResumeAfterKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("runs specloop as a process")
	}
	clearProviderEnv(t)
	t.Setenv("OPENAI_API_KEY", "sk-test-resume")
	model := &blockingOpenAI{entered: make(chan struct{}, 1)}
	srv := httptest.NewServer(model)
	defer srv.Close()
	ws := t.TempDir()
	const task = "Compute 12 x 7, then add 1 (resume test)."
	flags := []string{"run", "--model", "openai:m", "--base-url", srv.URL, "--context-window", "50000", "--no-commands", "--workspace", ws, "--json", task}

	code, out, stderr := specloop(t, flags...)
	if code != exitOK {
		t.Fatalf("an uninterrupted run: exit %d\n%s%s", code, out, stderr)
	}
	var want gen.RunResult
	if err := json.Unmarshal([]byte(out), &want); err != nil {
		t.Fatal(err)
	}

	model.block.Store(true)
	cmd := exec.Command(os.Args[0], flags...)
	cmd.Env = append(os.Environ(), selfServerEnv+"=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	select {
	case <-model.entered:
	case <-time.After(60 * time.Second):
		t.Fatal("the run never reached its second step")
	}
	if err := cmd.Process.Signal(os.Kill); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	model.block.Store(false)

	// The killed run is the newest one with this task.
	runs := filepath.Join(os.Getenv(cli.StateHomeEnv), "specloop", "runs")
	dirs, err := os.ReadDir(runs)
	if err != nil {
		t.Fatal(err)
	}
	id := ""
	for _, d := range dirs {
		if d.Name() == *want.RunId {
			continue
		}
		if data, err := os.ReadFile(filepath.Join(runs, d.Name(), "request.json")); err == nil && strings.Contains(string(data), "resume test") {
			id = d.Name()
		}
	}
	if id == "" {
		t.Fatal("the killed run kept no request")
	}
	if fi, err := os.Stat(filepath.Join(runs, id, "request.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the request file: %v, %v", fi, err)
	}
	code, out, stderr = specloop(t, "run", "--resume", id)
	if code != exitOK {
		t.Fatalf("run --resume: exit %d\n%s%s", code, out, stderr)
	}
	var got gen.RunResult
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if *got.RunId != id || got.ExitReason != want.ExitReason || got.StepsUsed != want.StepsUsed || *got.Answer != *want.Answer || *got.Usage != *want.Usage {
		t.Fatalf("resumed %+v, uninterrupted %+v", got, want)
	}
	var steps []int
	for _, e := range readTranscript(t, id).Entries {
		if e.EventType == gen.TraceEventTypeModelAction {
			steps = append(steps, e.Step)
		}
	}
	if fmt.Sprint(steps) != "[1 2 3]" {
		t.Fatalf("the transcript's turns are at steps %v, want each once", steps)
	}
	// A run that ended is not resumed.
	if code, _, stderr := specloop(t, "run", "--resume", id); code != exitUsage || !strings.Contains(stderr, "the run ended") {
		t.Fatalf("--resume of a finished run: exit %d, %s", code, stderr)
	}
	if code, _, stderr := specloop(t, "run", "--resume", id, "--json"); code != exitUsage || !strings.Contains(stderr, "give nothing else") {
		t.Fatalf("--resume with flags: exit %d, %s", code, stderr)
	}
}
