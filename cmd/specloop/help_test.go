package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/specloop/specloop/cmd/internal/readmetest"
	"github.com/specloop/specloop/gen"
)

// Every help page opens with two or three examples, each a command line
// of that command whose flags parse (with --help after them, as the docs'
// examples are checked); it names the environment variables the command
// reads; and its flags are spelled --flag, each with a name and an
// argument word the flag package took from the usage (never a garbled
// phrase of it).
func TestHelpPagesOpenWithExamplesThatParse(t *testing.T) {
	flagLine := regexp.MustCompile(`^  --[a-z0-9-]+( [a-zA-Z0-9]+)?$`)
	for _, c := range commands() {
		t.Run(c.Name, func(t *testing.T) {
			_, page, _ := specloop(t, "help", c.Name)
			usage, rest, _ := strings.Cut(page, "\n\n")
			if !strings.HasPrefix(usage, "Usage: specloop "+c.Name) || !strings.HasPrefix(rest, "Examples:\n") {
				t.Fatalf("help %s does not open with its usage and examples:\n%s", c.Name, page)
			}
			block, _, _ := strings.Cut(strings.TrimPrefix(rest, "Examples:\n"), "\n\n")
			examples := strings.Split(block, "\n")
			if len(examples) < 2 || len(examples) > 3 {
				t.Errorf("help %s shows %d examples, want 2 or 3", c.Name, len(examples))
			}
			for _, ex := range examples {
				w, complete := readmetest.ShellWords(strings.TrimPrefix(ex, "  "))
				if !complete {
					t.Fatalf("the example %q is not a complete command line", ex)
				}
				if i := slices.IndexFunc(w, func(s string) bool { return s == "|" || s == ">" }); i >= 0 {
					w = w[:i]
				}
				if len(w) < 2 || w[0] != "specloop" || w[1] != c.Name && !(c.Name == "version" && w[1] == "--version") {
					t.Fatalf("the example %q is not a command line of specloop %s", ex, c.Name)
				}
				if code, stdout, stderr := specloop(t, append(w[1:], "--help")...); code != exitOK || !strings.Contains(stdout+stderr, "Usage: specloop "+c.Name) {
					t.Errorf("the example %q does not parse: exit %d\n%s%s", ex, code, stdout, stderr)
				}
			}
			for _, l := range strings.Split(page, "\n") {
				if strings.HasPrefix(l, "  -") && !flagLine.MatchString(l) {
					t.Errorf("help %s: the flag line %q is not --flag [ARG]", c.Name, l)
				}
			}
			for _, v := range c.Env {
				if !regexp.MustCompile(`(?m)^  ` + v + ` +\S`).MatchString(page) {
					t.Errorf("help %s does not describe $%s", c.Name, v)
				}
			}
		})
	}
	_, page, _ := specloop(t, "help", "run")
	for _, v := range []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "SPECLOOP_TOKEN", "XDG_STATE_HOME", "XDG_CONFIG_HOME"} {
		if !strings.Contains(page, "\n  "+v+" ") {
			t.Errorf("help run does not name $%s:\n%s", v, page)
		}
	}
	if _, page, _ := specloop(t, "help", "serve"); !strings.Contains(page, "\n  --engine value\n") {
		t.Errorf("help serve shows --engine garbled:\n%s", page)
	}
}

// A usage error of run is two lines that name the flag and the help page.
func TestRunUsageErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--script", "testdata/calculator.script", "--max-step", "3", "p"}, "specloop: run: unknown flag --max-step; did you mean --max-steps?"},
		{[]string{"run", "--script", "testdata/calculator.script", "--max-steps", "0", "p"}, "specloop: run: --max-steps must be at least 1 (left out: 100 for a provider model, 5 for --script)"},
		{[]string{"run", "--script", "testdata/calculator.script"}, "specloop: run: the task PROMPT is required (or --prompt-file FILE)"},
		{[]string{"run", "--script", "testdata/calculator.script", "a", "b"}, "specloop: run: expected one PROMPT argument, got 2 (quote the prompt)"},
		{[]string{"demo", "extra"}, `specloop: demo: unexpected argument "extra"`},
		{[]string{"show"}, "specloop: show: expected one RUN_ID or FILE, got 0 arguments"},
		{[]string{"rn"}, `specloop: unknown command "rn"; did you mean "run"?`},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, stdout, stderr := specloop(t, tt.args...)
			hint := "\nrun 'specloop help " + tt.args[0] + "' for usage\n"
			if tt.args[0] == "rn" {
				hint = "\nrun 'specloop help' for usage\n"
			}
			if code != exitUsage || stderr != tt.want+hint || stdout != "" {
				t.Fatalf("exit %d\nstderr: %s\nwant:   %s", code, stderr, tt.want+hint)
			}
		})
	}
}

// --patch FILE writes the run's patch, 0600, and a path inside the
// workspace is refused before the run starts.
func TestRunPatchFile(t *testing.T) {
	script := scriptFile(t, writeAction("w1", "a.txt", "hello\n"), `{"type":"finish","answer":"done"}`)
	ws := t.TempDir()
	out := filepath.Join(t.TempDir(), "run.diff")
	os.WriteFile(out, []byte("old and longer than the patch "+strings.Repeat("x", 4096)), 0o644)
	code, stdout, stderr := specloop(t, "run", "--script", script, "--workspace", ws, "--no-commands", "--json", "--patch", out, "write it")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res gen.RunResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || res.Patch == nil || !strings.Contains(*res.Patch, "+hello") {
		t.Fatalf("%v: %s", err, stdout)
	}
	data, err := os.ReadFile(out)
	if err != nil || string(data) != *res.Patch {
		t.Fatalf("the file holds %q (%v), the result's patch is %q", data, err, *res.Patch)
	}
	if st, _ := os.Stat(out); st.Mode().Perm() != 0o600 {
		t.Errorf("the patch file is %v, want 0600", st.Mode().Perm())
	}

	// Inside the workspace, however it is spelled: refused, nothing written.
	link := filepath.Join(t.TempDir(), "ws")
	if err := os.Symlink(ws, link); err != nil {
		t.Skip(err)
	}
	for _, p := range []string{filepath.Join(ws, "run.diff"), filepath.Join(link, "sub", "..", "run.diff"), filepath.Join(ws, "new-dir", "run.diff")} {
		code, _, stderr := specloop(t, "run", "--script", script, "--workspace", ws, "--patch", p, "write it")
		if code != exitUsage || !strings.Contains(stderr, "--patch "+p+" is inside the workspace") {
			t.Errorf("--patch %s: exit %d: %s", p, code, stderr)
		}
		if _, err := os.Stat(p); err == nil {
			t.Errorf("--patch %s was written", p)
		}
	}
}

// The end of a run prints each message once, names the flag that raises
// the budget it ran out of and says "1 step".
func TestRunEndMessages(t *testing.T) {
	tmp := t.TempDir()
	call := `{"type":"tool_call","tool_name":"calculator","arguments":{"left":1,"operation":"add","right":1}}`
	short := scriptFile(t, call)
	code, stdout, stderr := specloop(t, "run", "--script", short, "--workspace", tmp, "p")
	if code != exitModelError || strings.Count(stdout+stderr, "script exhausted") != 1 {
		t.Errorf("the model's error is not printed exactly once: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	code, stdout, _ = specloop(t, "run", "--script", scriptFile(t, call, call), "--workspace", tmp, "--max-steps", "1", "p")
	if code != exitMaxSteps || !strings.Contains(stdout, "result: max_steps_exceeded after 1 step\nerror:  the step budget of 1 ran out (--max-steps raises it)\n") {
		t.Errorf("exit %d:\n%s", code, stdout)
	}
}

// A prompt that names a file is the task's text, with a hint on standard
// error that --prompt-file reads the file.
func TestPromptThatNamesAFile(t *testing.T) {
	script, err := filepath.Abs("testdata/calculator.script")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	os.WriteFile("task.md", []byte("Compute 12 x 7"), 0o644)
	code, stdout, stderr := specloop(t, "run", "--script", script, "--workspace", dir, "--json", "task.md")
	if code != exitOK || !strings.Contains(stdout, `"exit_reason": "finished"`) {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	if want := "specloop: run: the task is the text \"task.md\", which is also a file's name; --prompt-file task.md makes its contents the task\n"; stderr != want {
		t.Fatalf("stderr %q, want %q", stderr, want)
	}
	if _, _, stderr := specloop(t, "run", "--script", script, "--workspace", dir, "--json", "Compute 12 x 7"); stderr != "" {
		t.Fatalf("a plain prompt got a hint: %q", stderr)
	}
}

// A server that refuses a completion check names the flag it needs.
func TestRemoteCheckNamesAllowCommands(t *testing.T) {
	url := remoteURL(t)
	code, _, stderr := specloop(t, "run", "--remote", url, "--script", "testdata/calculator.script", "--check", "go test ./...", "p")
	if code != exitUsage || !strings.Contains(stderr, "--allow-commands") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}
