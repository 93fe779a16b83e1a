package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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
