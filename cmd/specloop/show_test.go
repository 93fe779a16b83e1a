package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/specloop/specloop/cmd/internal/cli"
)

func writeScript(t *testing.T, lines ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "script.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A run keeps its transcript in the state directory, redacted; `specloop
// show RUN_ID` prints what it did.
func TestRunKeepsATranscriptThatShowPrints(t *testing.T) {
	const secret = "sk-proj-Qe5vN2xK8mR3tY7wL1pZ9cB4"
	t.Setenv("SHOWTEST_API_KEY", secret)
	script := writeScript(t,
		`{"type":"tool_call","tool_name":"calculator","arguments":{"left":12,"operation":"multiply","right":7}}`,
		`{"type":"finish","answer":"84"}`)
	code, stdout, stderr := specloop(t, "run", "--script", script, "--no-commands", "--workspace", t.TempDir(), "Compute 12 x 7; my key is "+secret)
	if code != exitOK {
		t.Fatalf("run: exit %d\n%s%s", code, stdout, stderr)
	}
	m := regexp.MustCompile(`transcript: specloop show ([0-9a-f]{16})`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("the run does not say where its transcript is:\n%s", stdout)
	}
	path := filepath.Join(os.Getenv(cli.StateHomeEnv), "specloop", "runs", m[1], "transcript.jsonl")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), secret) {
		t.Fatalf("the transcript holds the key:\n%s", data)
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("transcript mode %v, want 0600", fi.Mode().Perm())
	}
	code, shown, stderr := specloop(t, "show", m[1])
	if code != exitOK {
		t.Fatalf("show: exit %d\n%s", code, stderr)
	}
	for _, want := range []string{"task: Compute 12 x 7; my key is [REDACTED]", `→ calculator {"left":12,"operation":"multiply","right":7}`, "← 84", "finished after 2 steps"} {
		if !strings.Contains(shown, want) {
			t.Errorf("show lacks %q:\n%s", want, shown)
		}
	}
	if code, same, _ := specloop(t, "show", path); code != exitOK || same != shown {
		t.Errorf("show FILE differs from show RUN_ID (exit %d)", code)
	}
}

func TestNoTranscript(t *testing.T) {
	state := t.TempDir()
	t.Setenv(cli.StateHomeEnv, state)
	script := writeScript(t, `{"type":"finish","answer":"done"}`)
	code, stdout, stderr := specloop(t, "run", "--script", script, "--no-commands", "--no-transcript", "--workspace", t.TempDir(), "say done")
	if code != exitOK || strings.Contains(stdout, "transcript:") {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	if kept, _ := filepath.Glob(filepath.Join(state, "specloop", "runs", "*", "transcript.jsonl")); len(kept) > 0 {
		t.Fatalf("--no-transcript kept %d transcripts", len(kept))
	}
}

// The state directory inside the workspace would put the transcript where
// the model reads and the patch records: refused.
func TestTranscriptNeverInsideTheWorkspace(t *testing.T) {
	ws := t.TempDir()
	t.Setenv(cli.StateHomeEnv, filepath.Join(ws, ".state"))
	script := writeScript(t, `{"type":"finish","answer":"done"}`)
	code, _, stderr := specloop(t, "run", "--script", script, "--no-commands", "--workspace", ws, "say done")
	if code != exitUsage || !strings.Contains(stderr, "inside the workspace") || !strings.Contains(stderr, "--no-transcript") {
		t.Fatalf("exit %d, stderr %q; want a usage error naming the workspace and --no-transcript", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(ws, ".state")); err == nil {
		t.Fatal("a refused transcript left its directory in the workspace")
	}
}

func TestShowOfNothing(t *testing.T) {
	code, _, stderr := specloop(t, "show", "0123456789abcdef")
	if code != exitUsage || !strings.Contains(stderr, "no transcript of a run 0123456789abcdef") {
		t.Fatalf("exit %d, %q", code, stderr)
	}
}

// show --remote reads a server's run: the run made with run --remote.
func TestShowRemote(t *testing.T) {
	url := remoteURL(t) // sets $SPECLOOP_TOKEN to the server's
	code, stdout, stderr := specloop(t, "run", "--remote", url, "--script", "testdata/calculator.script", "Compute 12 x 7 and say whether it is greater than 80.")
	if code != exitOK {
		t.Fatalf("run --remote: exit %d\n%s%s", code, stdout, stderr)
	}
	m := regexp.MustCompile(`remote run ([0-9a-f]{16})`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no run id in %q", stderr)
	}
	code, shown, stderr := specloop(t, "show", "--remote", url, m[1])
	if code != exitOK || !strings.Contains(shown, "task: Compute 12 x 7") || !strings.Contains(shown, `→ calculator {"left":12`) {
		t.Fatalf("show --remote: exit %d\n%s%s", code, shown, stderr)
	}
	// --follow reads the run from its event stream with content: the same
	// transcript, up to the run's end.
	code, followed, stderr := specloop(t, "show", "--follow", "--remote", url, m[1])
	if code != exitOK || followed != shown {
		t.Fatalf("show --follow --remote: exit %d\n%s%s\nwant what show --remote printed:\n%s", code, followed, stderr, shown)
	}
	for _, follow := range [][]string{nil, {"--follow"}} {
		args := append(append([]string{"show"}, follow...), "--remote", url, "0123456789abcdef")
		if code, _, stderr := specloop(t, args...); code != exitUsage || !strings.Contains(stderr, "no run has this id") {
			t.Fatalf("%v of no run: exit %d, %q", args, code, stderr)
		}
	}
}
