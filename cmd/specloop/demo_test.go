package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/trace"
)

// The demo end to end: the embedded module is copied, the scripted model
// fixes it through the real tools, `go test ./...` runs as a tool and as
// the completion check, and the output shows the steps, the patch, the
// result and the trace.
func TestDemo(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	tracePath := filepath.Join(t.TempDir(), "demo.jsonl")
	code, stdout, stderr := specloop(t, "demo", "--trace", tracePath)
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	var order []string
	for _, line := range strings.Split(stdout, "\n") {
		if m := regexp.MustCompile(`^step \d+ +→ (\w+)`).FindStringSubmatch(line); m != nil {
			order = append(order, m[1])
		}
	}
	if got := strings.Join(order, " "); got != "search read_file edit_file run_command finish" {
		t.Fatalf("steps %q\n%s", got, stdout)
	}
	for _, want := range []string{
		"← search: 1 match: roman.go:",
		"← edit_file: edited roman.go (+1 -0 lines)",
		"← run_command: exit code 0",
		"patch:\n--- a/roman.go\n+++ b/roman.go\n",
		"+\t{4, \"IV\"},\n",
		"the first `go test` compiles",
		"         running `go test ./...` — the first run compiles, this can take a minute\n",
		"         running the check `go test ./...`\n",
		"         the check ran for ",
		"\ntime:   ",
		"result: finished after 5 steps",
		"check:  exit code 0",
		"trace:  " + tracePath,
		"\nremoved: the temporary workspace (--keep keeps it)\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	ws := regexp.MustCompile(`(?m)^workspace: (\S+)`).FindStringSubmatch(stdout)
	if ws == nil {
		t.Fatalf("no workspace line:\n%s", stdout)
	}
	if _, err := os.Stat(ws[1]); !os.IsNotExist(err) {
		t.Errorf("the temporary workspace %s was not removed (%v)", ws[1], err)
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
	last := log.Events[len(log.Events)-1]
	if last.EventType != gen.TraceEventTypeRunFinished || last.ExitReason == nil || *last.ExitReason != gen.ExitReasonFinished {
		t.Fatalf("last trace event %+v", last)
	}
	for _, ev := range log.Events {
		if ev.IsError != nil && *ev.IsError {
			t.Errorf("a tool call failed: %+v", ev)
		}
	}
}

// The demo says what it leaves: by default nothing (the workspace and the
// trace beside it are removed, and no path of them is printed as if it
// stayed); with --keep both (TestDemoUnderEachSandbox, none).
func TestDemoCleansUpOrSaysWhatItKept(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	code, stdout, stderr := specloop(t, "demo")
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.HasSuffix(stdout, "\nremoved: the temporary workspace and its trace (--keep keeps them, --trace FILE keeps a trace)\n") || strings.Contains(stdout, "trace:  ") {
		t.Errorf("the demo's end does not say it removed the workspace and the trace:\n%s", stdout)
	}
	ws := regexp.MustCompile(`(?m)^workspace: (\S+)`).FindStringSubmatch(stdout)
	if ws == nil {
		t.Fatalf("no workspace line:\n%s", stdout)
	}
	if _, err := os.Stat(filepath.Dir(ws[1])); !os.IsNotExist(err) {
		t.Errorf("the demo left %s (%v)", filepath.Dir(ws[1]), err)
	}

}
