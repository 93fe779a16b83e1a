package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/contract"
	"github.com/specloop/specloop/spec"
	"github.com/specloop/specloop/trace"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

const prompt = "Compute 12 x 7 and say whether it is greater than 80."

// specloop runs the command in-process and returns its exit status and output.
func specloop(t testing.TB, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

var (
	durations = regexp.MustCompile(`\d+\.\d+ ms|=\d+\.\d{3}\b`)
	clockTime = regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d\.\d\d\d`)
	runIDs    = regexp.MustCompile(`run=[0-9a-f]{16}`)
	showIDs   = regexp.MustCompile(`show [0-9a-f]{16}`)
)

// normalize removes what differs between runs: durations, clock times, run ids
// and temporary paths.
func normalize(s, tmp string) string {
	s = strings.ReplaceAll(s, tmp, "$TMP")
	s = durations.ReplaceAllStringFunc(s, func(d string) string {
		if strings.HasPrefix(d, "=") {
			return "=D"
		}
		return "D ms"
	})
	s = clockTime.ReplaceAllString(s, "HH:MM:SS")
	s = showIDs.ReplaceAllString(s, "show RUNID")
	// A transcript's first line: "run ID, started TIME" (compiled here:
	// TestInitParsesNothing counts what package variables cost).
	s = regexp.MustCompile(`run [0-9a-f]+, started [0-9-]+ [0-9:]+ UTC`).ReplaceAllString(s, "run RUNID, started TIME")
	return runIDs.ReplaceAllString(s, "run=RUNID")
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/specloop -update)", err)
	}
	if got != string(want) {
		t.Fatalf("output differs from %s (run with -update after checking):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestRunCalculatorJSON(t *testing.T) {
	tmp := t.TempDir()
	tracePath := filepath.Join(tmp, "run.jsonl")
	code, stdout, stderr := specloop(t, "run", "--script", "testdata/calculator.script", "--trace", tracePath, "--json", "--workspace", t.TempDir(), prompt)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res gen.RunResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("stdout is not a RunResult: %v\n%s", err, stdout)
	}
	validateAgainst(t, "RunResult", []byte(stdout))
	if res.ExitReason != gen.ExitReasonFinished || res.StepsUsed != 2 || *res.Answer != "12 * 7 = 84, and 84 > 80." {
		t.Fatalf("result %+v", res)
	}
	f, err := os.Open(tracePath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	log, err := trace.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, ev := range log.Events {
		types = append(types, string(ev.EventType))
	}
	if got := strings.Join(types, " "); got != "run_started model_action observation model_action run_finished" {
		t.Fatalf("trace events: %s", got)
	}

	code, stdout, _ = specloop(t, "trace", "show", tracePath)
	if code != 0 {
		t.Fatalf("trace show exit %d", code)
	}
	golden(t, "trace_show", normalize(stdout, tmp))
}

func TestRunProgressOutput(t *testing.T) {
	tmp := t.TempDir()
	code, stdout, stderr := specloop(t, "run", "--script", "testdata/feedback.script", "--workspace", tmp, prompt)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	golden(t, "run_feedback", normalize(stdout, tmp))
}

func TestRunExitStatuses(t *testing.T) {
	tmp := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	loop := write("loop.script", strings.Repeat(`{"type":"tool_call","tool_name":"calculator","arguments":{"left":1,"operation":"add","right":1}}`+"\n", 3))
	garbage := write("garbage.script", "nope\nnope\nnope\n")
	short := write("short.script", `{"type":"tool_call","tool_name":"calculator","arguments":{"left":1,"operation":"add","right":1}}`+"\n")
	empty := write("empty.script", "\n\n")
	tests := []struct {
		name string
		args []string
		code int
		err  string
	}{
		{"max steps", []string{"run", "--script", loop, "--max-steps", "3", "-json", "p"}, exitMaxSteps, ""},
		{"invalid output", []string{"run", "--script", garbage, "--max-steps", "3", "p"}, exitInvalidModelOutput, ""},
		{"script exhausted", []string{"run", "--script", short, "p"}, exitModelError, ""},
		{"flags after the prompt", []string{"run", "p", "--script", loop, "--max-steps", "1"}, exitMaxSteps, ""},
		{"no prompt", []string{"run", "--script", loop}, exitUsage, "PROMPT is required"},
		{"two prompts", []string{"run", "--script", loop, "a", "b"}, exitUsage, "expected one PROMPT"},
		{"no script", []string{"run", "p"}, exitUsage, "--script"},
		{"missing script", []string{"run", "--script", filepath.Join(tmp, "nope"), "p"}, exitUsage, "no such file"},
		{"empty script", []string{"run", "--script", empty, "p"}, exitUsage, "holds no responses"},
		{"bad max steps", []string{"run", "--script", loop, "--max-steps", "0", "p"}, exitUsage, "--max-steps"},
		{"bad sync", []string{"run", "--script", loop, "--sync", "sometimes", "p"}, exitUsage, "sync"},
		{"unknown flag", []string{"run", "--bogus", "p"}, exitUsage, "bogus"},
		{"unknown command", []string{"fly"}, exitUsage, `unknown command "fly"`},
		{"no command", nil, exitUsage, "Usage: specloop COMMAND"},
		{"trace of a missing file", []string{"trace", "show", filepath.Join(tmp, "nope")}, exitUsage, "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := specloop(t, append(tt.args[:len(tt.args):len(tt.args)], []string{}...)...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tt.code, stderr)
			}
			if !strings.Contains(stderr, tt.err) {
				t.Fatalf("stderr %q lacks %q", stderr, tt.err)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	code, stdout, _ := specloop(t, "help")
	if code != 0 || !strings.Contains(stdout, "run ") || !strings.Contains(stdout, "Exit status") {
		t.Fatalf("help: %d %s", code, stdout)
	}
	code, _, stderr := specloop(t, "run", "-h")
	if code != 0 || !strings.Contains(stderr, "--script") && !strings.Contains(stderr, "-script") {
		t.Fatalf("run -h: %d %s", code, stderr)
	}
}

func TestToolsAndSpec(t *testing.T) {
	code, stdout, _ := specloop(t, "tools", "--json", "--workspace", t.TempDir())
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	validateAgainst(t, "ToolList", []byte(stdout))
	var list gen.ToolList
	if err := json.Unmarshal([]byte(stdout), &list); err != nil || len(list.Tools) == 0 {
		t.Fatalf("tools --json: %v", err)
	}
	code, stdout, _ = specloop(t, "spec")
	if code != 0 || stdout != string(spec.YAML()) {
		t.Fatal("spec must print the embedded document unchanged")
	}
}

// validateAgainst checks a JSON document against a schema of the spec.
func validateAgainst(t *testing.T, schemaName string, data []byte) {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	s := contract.MustSpec().Components.Schemas[schemaName].Value
	if err := s.VisitJSON(v); err != nil {
		t.Fatalf("output does not validate against %s: %v", schemaName, err)
	}
}
