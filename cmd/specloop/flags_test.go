package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// cliIn runs the command in-process with stdin.
func cliIn(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(stdin), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// Flag values that make no sense are usage errors that name the flag,
// before anything runs.
func TestNonsenseFlagValuesAreRefused(t *testing.T) {
	tests := []struct {
		args []string
		flag string
	}{
		{[]string{"run", "--script", "testdata/calculator.script", "--token-budget", "-5", "p"}, "--token-budget"},
		{[]string{"run", "--script", "testdata/calculator.script", "--max-steps", "0", "p"}, "--max-steps"},
		{[]string{"run", "--script", "testdata/calculator.script", "--max-steps", "-2", "p"}, "--max-steps"},
		{[]string{"run", "--script", "testdata/calculator.script", "--max-observation-bytes", "100", "p"}, "--max-observation-bytes"},
		{[]string{"run", "--script", "testdata/calculator.script", "--max-observation-lines", "0", "p"}, "--max-observation-lines"},
		{[]string{"serve", "--addr", "127.0.0.1:0", "--queue", "-1"}, "--queue"},
		{[]string{"serve", "--addr", "127.0.0.1:0", "--max-concurrent", "-3"}, "--max-concurrent"},
		{[]string{"serve", "--addr", "127.0.0.1:0", "--max-concurrent", "0"}, "--max-concurrent"},
		{[]string{"serve", "--addr", "127.0.0.1:0", "--body-limit", "0"}, "--body-limit"},
		{[]string{"serve", "--addr", "127.0.0.1:0", "--transcript-retention", "-1h"}, "--transcript-retention"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "data")
			args := tt.args
			if args[0] == "serve" {
				args = append(args, "--data", data, "--workspace-root", t.TempDir())
			} else {
				args = append(args, "--workspace", t.TempDir())
			}
			code, stdout, stderr := specloop(t, args...)
			if code != exitUsage {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, exitUsage, stdout, stderr)
			}
			if !strings.Contains(stderr, tt.flag) {
				t.Fatalf("stderr %q does not name %s", stderr, tt.flag)
			}
			if _, err := os.Stat(data); err == nil {
				t.Fatal("serve created its data directory before refusing the flags")
			}
		})
	}
}

// --trace appends to a trace, but never to a file that holds something
// else: a mistyped path must not get JSON lines appended to it.
func TestRunTraceRefusesAForeignFile(t *testing.T) {
	tmp := t.TempDir()
	foreign := filepath.Join(tmp, "main.go")
	const src = "package main\n\nfunc main() {}\n"
	if err := os.WriteFile(foreign, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := specloop(t, "run", "--script", "testdata/calculator.script", "--workspace", t.TempDir(), "--trace", foreign, prompt)
	if code != exitUsage || !strings.Contains(stderr, "not a specloop trace") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if got, _ := os.ReadFile(foreign); string(got) != src {
		t.Fatalf("the file was changed:\n%s", got)
	}
	// A one-line file without a newline that is not a trace either.
	oneLine := filepath.Join(tmp, "notes.txt")
	os.WriteFile(oneLine, []byte(`{"hello":"world"}`), 0o644)
	if code, _, stderr := specloop(t, "run", "--script", "testdata/calculator.script", "--workspace", tmp, "--trace", oneLine, prompt); code != exitUsage {
		t.Fatalf("a JSON line that is not a trace event: exit %d, stderr %q", code, stderr)
	}
	// The demo's --trace is refused the same way (before it runs anything).
	if code, _, stderr := specloop(t, "demo", "--trace", foreign); code != exitUsage || !strings.Contains(stderr, "not a specloop trace") {
		t.Fatalf("demo: exit %d, stderr %q", code, stderr)
	}

	// A device is written as it is (and never read: that would block on a
	// terminal).
	if code, _, stderr := specloop(t, "run", "--script", "testdata/calculator.script", "--workspace", tmp, "--trace", os.DevNull, "--sync", "none", prompt); code != exitOK {
		t.Fatalf("--trace %s: exit %d: %s", os.DevNull, code, stderr)
	}

	// An empty file and an existing trace are appended to.
	tr := filepath.Join(tmp, "run.jsonl")
	os.WriteFile(tr, nil, 0o644)
	for i := range 2 {
		code, _, stderr := specloop(t, "run", "--script", "testdata/calculator.script", "--workspace", t.TempDir(), "--trace", tr, prompt)
		if code != exitOK {
			t.Fatalf("run %d: exit %d: %s", i, code, stderr)
		}
	}
	data, _ := os.ReadFile(tr)
	if n := strings.Count(string(data), `"event_type":"run_started"`); n != 2 {
		t.Fatalf("the trace holds %d runs, want 2", n)
	}
}

// Help is asked for in every way a person tries, exits 0, and does not
// suggest that --script is required.
func TestHelpForEveryCommand(t *testing.T) {
	for _, c := range commands() {
		t.Run(c.Name, func(t *testing.T) {
			code, stdout, stderr := specloop(t, "help", c.Name)
			if code != exitOK {
				t.Fatalf("help %s: exit %d: %s", c.Name, code, stderr)
			}
			if !strings.Contains(stdout, "Usage: specloop "+c.Name) {
				t.Fatalf("help %s printed:\n%s", c.Name, stdout)
			}
			code, _, stderr = specloop(t, c.Name, "--help")
			if code != exitOK || !strings.Contains(stderr, "Usage: specloop "+c.Name) {
				t.Fatalf("%s --help: exit %d:\n%s", c.Name, code, stderr)
			}
		})
	}
	if code, _, stderr := specloop(t, "help", "fly"); code != exitUsage || !strings.Contains(stderr, `unknown command "fly"`) {
		t.Fatalf("help fly: exit %d: %s", code, stderr)
	}
	_, stdout, _ := specloop(t, "help", "run")
	if !strings.Contains(stdout, "Usage: specloop run (--script FILE | --model PROVIDER:NAME)") {
		t.Fatalf("run's usage line must offer --script or --model:\n%s", stdout)
	}
	if code, _, _ := specloop(t, "trace", "show", "-h"); code != exitOK {
		t.Fatalf("trace show -h: exit %d", code)
	}
	if code, _, _ := specloop(t, "trace", "bogus"); code != exitUsage {
		t.Fatalf("trace bogus: exit %d", code)
	}
}

// Prompts longer than the shell's argument limit come from a file or from
// standard input.
func TestRunPromptFile(t *testing.T) {
	tmp := t.TempDir()
	long := strings.Repeat("Compute 12 x 7 & say whether it is > 80. ", 20000) // ~800 KB, over ARG_MAX's per-argument limit
	pf := filepath.Join(tmp, "prompt.txt")
	if err := os.WriteFile(pf, []byte(long), 0o644); err != nil {
		t.Fatal(err)
	}
	tr := filepath.Join(tmp, "t.jsonl")
	code, _, stderr := specloop(t, "run", "--script", "testdata/calculator.script", "--workspace", t.TempDir(), "--trace", tr, "--prompt-file", pf)
	if code != exitOK {
		t.Fatalf("--prompt-file: exit %d: %s", code, stderr)
	}
	data, _ := os.ReadFile(tr)
	if want := `"input_summary":"chars=` + strconv.Itoa(len(long)) + `;`; !strings.Contains(string(data), want) {
		t.Fatalf("the run's task is not the file's text: trace lacks %s", want)
	}
	code, stdout, stderr := cliIn(t, "What is 12 x 7?\n", "run", "--script", "testdata/calculator.script", "--workspace", tmp, "--json", "--prompt-file", "-")
	if code != exitOK || !strings.Contains(stdout, `"exit_reason": "finished"`) {
		t.Fatalf("--prompt-file -: exit %d: %s %s", code, stdout, stderr)
	}
	for _, tt := range []struct {
		name, stdin string
		args        []string
		err         string
	}{
		{"both", "", []string{"--prompt-file", pf, "p"}, "not both"},
		{"missing file", "", []string{"--prompt-file", filepath.Join(tmp, "nope")}, "no such file"},
		{"empty stdin", "  \n", []string{"--prompt-file", "-"}, "empty"},
		{"too long", strings.Repeat("x", maxPromptChars+1), []string{"--prompt-file", "-"}, "longer than"},
		{"neither", "", nil, "PROMPT"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"run", "--script", "testdata/calculator.script", "--workspace", tmp}, tt.args...)
			code, _, stderr := cliIn(t, tt.stdin, args...)
			if code != exitUsage || !strings.Contains(stderr, tt.err) {
				t.Fatalf("exit %d, stderr %q, want %q", code, stderr, tt.err)
			}
		})
	}
}

// Progress lines show arguments as they are, not HTML-escaped.
func TestProgressDoesNotEscapeHTML(t *testing.T) {
	tmp := t.TempDir()
	script := filepath.Join(tmp, "s.script")
	os.WriteFile(script, []byte(`{"type":"tool_call","tool_name":"search","arguments":{"pattern":"a && b <c>"}}`+"\n"+
		`{"type":"finish","answer":"x < y && y > z"}`+"\n"), 0o644)
	code, stdout, stderr := specloop(t, "run", "--script", script, "--workspace", tmp, "p")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, `→ search {"pattern":"a && b <c>"}`) || strings.Contains(stdout, `\u00`) {
		t.Fatalf("progress escapes the arguments:\n%s", stdout)
	}
}
