package transcript_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/trace"
	"github.com/specloop/specloop/transcript"
)

const (
	apiKey   = "sk-proj-Zq81vK3mP0xLw7Rt5Yb2Nc9Hd4Fg6Js"
	password = "correct horse battery"
	passed   = "pass-env-value-42"
)

var env = []string{
	"OPENAI_API_KEY=" + apiKey,
	"DB_PASSWORD=" + password,
	"FEATURE_KEY=1", // too short to redact
	"HOME=/home/someone",
}

func ptr[T any](v T) *T { return &v }

func toolCall(name string, args map[string]any) *gen.Action {
	var a gen.Action
	if err := a.FromToolCall(gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: name, Arguments: args}); err != nil {
		panic(err)
	}
	return &a
}

// a run with secrets in the task, the arguments, a tool's output (after a
// newline and a tab) and an approval's reason.
func entries() []gen.TranscriptEntry {
	t0 := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	return []gen.TranscriptEntry{
		{RunId: "r1", EventType: gen.TraceEventTypeRunStarted, Time: t0, Task: ptr("Fix the test; the key is " + apiKey), ToolNames: &[]string{"read_file", "run_command"}},
		{RunId: "r1", Step: 1, EventType: gen.TraceEventTypeModelAction, Time: t0, Text: ptr("I suspect the comparison is inverted."),
			Action: toolCall("run_command", map[string]any{"command": "env | grep KEY", "env": map[string]any{"X": passed}})},
		{RunId: "r1", Step: 1, EventType: gen.TraceEventTypeObservation, Time: t0,
			Observation: &gen.Observation{Type: gen.ObservationTypeObservation, ToolName: "run_command", Content: "exit 0"},
			Output:      ptr("OPENAI_API_KEY=" + apiKey + "\n\tghp_abcdefghijklmnopqrstuvwxyz0123456789\nthe file's own text stays\nFEATURE_KEY=1\nDB=" + password + "\n")},
		{RunId: "r1", Step: 2, EventType: gen.TraceEventTypeApprovalDecided, Time: t0, ToolName: ptr("run_command"), Decision: ptr(gen.ApprovalDecisionDeny), Reason: ptr("not with " + passed)},
		{RunId: "r1", Step: 2, EventType: gen.TraceEventTypeRunFinished, Time: t0,
			Result: &gen.RunResult{ExitReason: gen.ExitReasonFinished, StepsUsed: 2, Answer: ptr("fixed"), Patch: ptr("--- a/x.go\n+++ b/x.go\n")}},
	}
}

// readLog reads the transcript at path, which must be valid.
func readLog(t *testing.T, path string) *transcript.Log {
	t.Helper()
	f, err := os.Open(path)
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

func write(t *testing.T, path string, es []gen.TranscriptEntry) {
	t.Helper()
	w, err := transcript.Open(path, transcript.NewRedactor(env, passed), trace.SyncAtRunEnd)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestSecretsNeverReachTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs", "r1", transcript.FileName)
	write(t, path, entries())
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{apiKey, password, passed, "ghp_abcdefghijklmnopqrstuvwxyz0123456789"} {
		if bytes.Contains(data, []byte(secret)) {
			t.Errorf("the transcript holds the secret %q", secret)
		}
	}
	for _, kept := range []string{"the file's own text stays", "I suspect the comparison is inverted.", "FEATURE_KEY=1", "env | grep KEY", "OPENAI_API_KEY=[REDACTED]"} {
		if !bytes.Contains(data, []byte(kept)) && !strings.Contains(string(data), strings.ReplaceAll(kept, "\n", `\n`)) {
			t.Errorf("the transcript lost %q", kept)
		}
	}
	log, err := transcript.Read(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(log.Entries) != 5 {
		t.Fatalf("read %d entries, want 5", len(log.Entries))
	}
	want := map[int]int{1: 1, 2: 1, 3: 3, 4: 1} // by seq: the replacements in that entry
	for _, e := range log.Entries {
		got := 0
		if e.Redacted != nil {
			got = *e.Redacted
		}
		if got != want[e.Seq] {
			t.Errorf("entry %d: redacted = %d, want %d", e.Seq, got, want[e.Seq])
		}
	}
}

func TestFilesAreTheOwnersOnly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "runs", "r1")
	path := filepath.Join(dir, transcript.FileName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, nil, 0o644); err != nil { // made under a loose umask
		t.Fatal(err)
	}
	write(t, path, entries()[:1])
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v, want 0600", fi.Mode().Perm())
	}
	fresh := filepath.Join(t.TempDir(), "state", "runs", "r2", transcript.FileName)
	write(t, fresh, entries()[:1])
	di, err := os.Stat(filepath.Dir(fresh))
	if err != nil {
		t.Fatal(err)
	}
	if di.Mode().Perm() != 0o700 {
		t.Errorf("directory mode %v, want 0700", di.Mode().Perm())
	}
}

func TestOpenContinuesTheSequence(t *testing.T) {
	path := filepath.Join(t.TempDir(), transcript.FileName)
	es := entries()
	write(t, path, es[:2])
	// A crash cut the next line short: the run going on writes after the
	// entries, not after the fragment.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"run_id":"r1","seq":3,"st`)
	f.Close()
	write(t, path, es[2:])
	if log := readLog(t, path); len(log.Entries) != len(es) || log.Torn != 0 {
		t.Fatalf("after a torn line: %d entries (torn %d), want %d", len(log.Entries), log.Torn, len(es))
	}
	log := readLog(t, path)
	for i, e := range log.Entries {
		if e.Seq != i+1 {
			t.Fatalf("entry %d has seq %d", i, e.Seq)
		}
	}
}

func TestReadSkipsATornLastLineOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), transcript.FileName)
	write(t, path, entries()[:2])
	data, _ := os.ReadFile(path)
	torn := append(bytes.Clone(data), `{"run_id":"r1","seq":3,"st`...)
	log, err := transcript.Read(bytes.NewReader(torn))
	if err != nil || len(log.Entries) != 2 || log.Torn != 3 {
		t.Fatalf("torn last line: %d entries, torn %d, err %v; want 2, 3, nil", len(log.Entries), log.Torn, err)
	}
	bad := append(bytes.Clone(data), "{\"run_id\":\"r1\",\"seq\":3}\n"...)
	_, err = transcript.Read(bytes.NewReader(bad))
	var le *trace.LineError
	if !errors.As(err, &le) || le.Line != 3 {
		t.Fatalf("an invalid complete line: %v, want a LineError of line 3", err)
	}
	gap := bytes.Replace(data, []byte(`"seq":2`), []byte(`"seq":7`), 1)
	if _, err := transcript.Read(bytes.NewReader(gap)); !errors.As(err, &le) || !strings.Contains(err.Error(), "seq") {
		t.Fatalf("a gap in seq: %v, want a LineError naming seq", err)
	}
}

func TestOutputIsCutAtTheCapWithoutSplittingACharacter(t *testing.T) {
	path := filepath.Join(t.TempDir(), transcript.FileName)
	w, err := transcript.Open(path, transcript.NewRedactor(nil), trace.SyncNone)
	if err != nil {
		t.Fatal(err)
	}
	e := entries()[2]
	e.Output = ptr(strings.Repeat("x", transcript.DefaultMaxOutputBytes-1) + "éé") // a character across the cap
	if err := w.Write(e); err != nil {
		t.Fatal(err)
	}
	w.Close()
	log := readLog(t, path)
	got := log.Entries[0]
	if *got.Output != (*e.Output)[:transcript.DefaultMaxOutputBytes-1] || got.OutputTruncatedBytes == nil || *got.OutputTruncatedBytes != 4 {
		t.Fatalf("output of %d bytes, truncated %v; want %d bytes kept and 4 cut", len(*got.Output), got.OutputTruncatedBytes, transcript.DefaultMaxOutputBytes-1)
	}
}

func TestRenderShowsWhatARunDid(t *testing.T) {
	path := filepath.Join(t.TempDir(), transcript.FileName)
	write(t, path, entries())
	log := readLog(t, path)
	var out bytes.Buffer
	if err := transcript.Render(&out, log); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"task: Fix the test; the key is [REDACTED]",
		"step 1",
		"model: I suspect the comparison is inverted.",
		`→ run_command {"command":"env | grep KEY","env":{"X":"[REDACTED]"}}`,
		"      the file's own text stays",
		"approval: deny run_command: not with [REDACTED]",
		"finished after 2 steps",
		"answer: fixed",
		"      +++ b/x.go",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the rendering lacks %q:\n%s", want, out.String())
		}
	}
}

func TestRedactorKeepsJSONValid(t *testing.T) {
	r := transcript.NewRedactor([]string{"PIN_PASSWORD=12345678", `QUOTE_SECRET=a"b\c<d>ef`})
	line := []byte(`{"n":12345678,"s":"pin 12345678 and a\"b\\c<d>ef","k":"12345678"}`)
	out, n := r.Line(line)
	if !json.Valid(out) {
		t.Fatalf("not JSON after redaction: %s", out)
	}
	if n != 3 || !bytes.Contains(out, []byte(`"n":12345678`)) {
		t.Fatalf("got %s (%d replacements); want the number kept and 3 strings' secrets replaced", out, n)
	}
}

// The shortest texts that are replaced still are: a known secret of
// MinSecretLen bytes (with a longer one beside it), and the shortest
// credential shape, each a whole string, a key or escaped.
func TestRedactorReplacesTheShortest(t *testing.T) {
	shape := "xoxa-0123456789" // secretshape.MinLen bytes
	for _, c := range []struct {
		env  []string
		line string
		n    int
	}{
		{[]string{"A_TOKEN=abcdefgh", "B_TOKEN=a-much-longer-secret"}, `{"k":"abcdefgh","abcdefgh":1,"e":"\u0061bcdefgh"}`, 3},
		{nil, `{"k":"` + shape + `","` + shape + `":1,"e":"\u0078oxa-0123456789"}`, 3},
		{[]string{"A_TOKEN=abcdefghijklmnopqrstuvwxyz"}, `{"k":"` + shape + `"}`, 1},
	} {
		r := transcript.NewRedactor(c.env)
		out, n := r.Line([]byte(c.line))
		if n != c.n || bytes.Contains(out, []byte("abcdefgh")) || bytes.Contains(out, []byte("0123456789")) {
			t.Errorf("%s: got %s (%d replacements), want %d", c.line, out, n, c.n)
		}
	}
}

func FuzzRedactorLine(f *testing.F) {
	f.Add("sk-ant-api03-abcdefghijklmnopqrstuvwxyz", "plain text\nsk-ant-api03-abcdefghijklmnopqrstuvwxyz\n")
	f.Add("12345678", `he said "12345678"`)
	f.Fuzz(func(t *testing.T, secret, text string) {
		r := transcript.NewRedactor([]string{"X_TOKEN=" + secret})
		line, _ := json.Marshal(map[string]any{"a": text, "n": 1, "b": []string{text, secret}})
		out, _ := r.Line(line)
		if !json.Valid(out) {
			t.Fatalf("not JSON after redaction: %s", out)
		}
		var back map[string]any
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatal(err)
		}
		if len(secret) >= transcript.MinSecretLen && strings.Contains(back["a"].(string), secret) {
			t.Fatalf("the secret %q survived in %q", secret, back["a"])
		}
	})
}

func FuzzRead(f *testing.F) {
	path := filepath.Join(f.TempDir(), transcript.FileName)
	w, err := transcript.Open(path, transcript.NewRedactor(nil), trace.SyncNone)
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries() {
		if err := w.Write(e); err != nil {
			f.Fatal(err)
		}
	}
	w.Close()
	data, _ := os.ReadFile(path)
	f.Add(data)
	f.Add([]byte("{}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		log, err := transcript.Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := transcript.Render(&out, log); err != nil {
			t.Fatal(err)
		}
	})
}

func BenchmarkWrite(b *testing.B) {
	path := filepath.Join(b.TempDir(), transcript.FileName)
	w, err := transcript.Open(path, transcript.NewRedactor(env, passed), trace.SyncNone)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	step := entries()[1:3] // a model action and its observation: one step
	b.ReportAllocs()
	for b.Loop() {
		for _, e := range step {
			if err := w.Write(e); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func TestFollowSeesEntriesAsTheyAreWritten(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r1", transcript.FileName)
	es := entries()
	got := make(chan gen.TranscriptEntry)
	done := make(chan error, 1)
	go func() {
		done <- transcript.Follow(context.Background(), path, func(e gen.TranscriptEntry) error { got <- e; return nil })
	}()
	w, err := transcript.Open(path, transcript.NewRedactor(nil), trace.SyncNone)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	// A step's action is written with the observation that answers it;
	// every other entry at once.
	seen := 0
	for i, e := range es {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
		if e.EventType == gen.TraceEventTypeModelAction {
			continue
		}
		for ; seen <= i; seen++ {
			if f := <-got; f.Seq != seen+1 || f.EventType != es[seen].EventType {
				t.Fatalf("followed entry %d: seq %d, %s; want %d, %s", seen, f.Seq, f.EventType, seen+1, es[seen].EventType)
			}
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("Follow after run_finished: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := transcript.Follow(ctx, filepath.Join(t.TempDir(), "none.jsonl"), nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Follow of a transcript never written, cancelled: %v", err)
	}
}

// Secrets as argument names, redacted alike, would be duplicate keys a
// strict reader refuses: the line stays readable.
func TestRedactedKeysKeepTheLineReadable(t *testing.T) {
	path := filepath.Join(t.TempDir(), transcript.FileName)
	e := entries()[1]
	e.Action = toolCall("run_command", map[string]any{apiKey: 1, "ghp_abcdefghijklmnopqrstuvwxyz0123456789": 2, "command": "ls"})
	write(t, path, []gen.TranscriptEntry{entries()[0], e})
	data, _ := os.ReadFile(path)
	log, err := transcript.Read(bytes.NewReader(data))
	if err != nil || len(log.Entries) != 2 {
		t.Fatalf("read %d entries, %v:\n%s", len(log.Entries), err, data)
	}
	if bytes.Contains(data, []byte(apiKey)) {
		t.Fatal("a secret argument name reached the file")
	}
}

// A reasoning block's signature and encrypted data are the provider's own
// tokens, wanted back unchanged by a resumed or continued run: they stay as
// they are although they look like credentials, while the same shape
// elsewhere, and a known secret anywhere, are redacted.
func TestReasoningTokensAreKept(t *testing.T) {
	const sig = "EqQBCkgIAxABGAIiQLfQYhh2l4vFgZQ1Wq0vGQ0vM2a7Yc8XkR9d0y5Vw3n1uKq0bL2c=="
	const data = "ErUBCkYIBRgCIkBxq9Zr3KfTq0p8WmN2bV7cX4yL1oE6hS5uJ9dA0gR3wQ=="
	const key = "sk-live-secretvalue-0123456789"
	const token = "ghp_Zq8nW2xV5bT1cR7yU3iO9pA4sD6fG0hJkL2m"
	path := filepath.Join(t.TempDir(), transcript.FileName)
	w, err := transcript.Open(path, transcript.NewRedactor([]string{"SOME_API_KEY=" + key}), trace.SyncNone)
	if err != nil {
		t.Fatal(err)
	}
	call := gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: "read_file", Arguments: map[string]any{"path": token},
		Reasoning: &[]gen.ReasoningBlock{
			{Type: gen.ReasoningBlockTypeThinking, Thinking: ptr("the key " + key + " and " + sig), Signature: ptr(sig)},
			{Type: gen.ReasoningBlockTypeRedactedThinking, Data: ptr(data)},
		}}
	var a gen.Action
	if err := a.FromToolCall(call); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(gen.TranscriptEntry{RunId: "r", Step: 1, EventType: gen.TraceEventTypeModelAction, Action: &a}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	e := readLog(t, path).Entries[0]
	got, err := e.Action.AsToolCall()
	if err != nil {
		t.Fatal(err)
	}
	blocks := *got.Reasoning
	if *blocks[0].Signature != sig || *blocks[1].Data != data {
		t.Errorf("the reasoning tokens changed: %q, %q", *blocks[0].Signature, *blocks[1].Data)
	}
	if th := *blocks[0].Thinking; strings.Contains(th, key) || strings.Contains(th, sig) {
		t.Errorf("the thinking text kept a secret or a credential's shape: %q", th)
	}
	if p := got.Arguments["path"]; p != transcript.Redacted {
		t.Errorf("a credential's shape in an argument was kept: %v", p)
	}
}

// TestWriterWritesAFinishedStep: the entries of a step whose calls are all
// answered are in the file before the next model call (no Close), and
// Close writes what a step in flight left.
func TestWriterWritesAFinishedStep(t *testing.T) {
	path := filepath.Join(t.TempDir(), transcript.FileName)
	w, err := transcript.Open(path, transcript.NewRedactor(nil), trace.SyncNone)
	if err != nil {
		t.Fatal(err)
	}
	lines := func() int {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return bytes.Count(data, []byte("\n"))
	}
	obs := &gen.Observation{Type: gen.ObservationTypeObservation, ToolName: "calculator", Content: "2"}
	for _, e := range []gen.TranscriptEntry{
		{RunId: "r1", EventType: gen.TraceEventTypeRunStarted},
		{RunId: "r1", Step: 1, EventType: gen.TraceEventTypeModelAction},
		{RunId: "r1", Step: 1, EventType: gen.TraceEventTypeModelAction},
		{RunId: "r1", Step: 1, EventType: gen.TraceEventTypeObservation, Observation: obs},
		{RunId: "r1", Step: 1, EventType: gen.TraceEventTypeObservation, Observation: obs},
		{RunId: "r1", Step: 2, EventType: gen.TraceEventTypeModelAction},
	} {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	if n := lines(); n != 5 {
		t.Fatalf("%d lines on disk after step 1, want 5", n)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if n := lines(); n != 6 {
		t.Fatalf("%d lines on disk after Close, want 6", n)
	}
}
