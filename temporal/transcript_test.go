package temporal_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/transcript"
)

// readTranscript reads the transcript at path, whole: its entries as
// JSON, without their times.
func readTranscript(t *testing.T, path string) []string {
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
	out := make([]string, len(log.Entries))
	for i, e := range log.Entries {
		e.Time = time.Time{}
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = string(b)
	}
	return out
}

// embeddedTranscript runs a script in-process, as `specloop serve` does,
// and returns its transcript.
func embeddedTranscript(t *testing.T, responses []string, check string, maxSteps int) []string {
	t.Helper()
	sp := scriptInput(nil, check, maxSteps).Spec
	host := baseSetup()
	host.Dir, host.TranscriptPath = t.TempDir(), filepath.Join(t.TempDir(), transcript.FileName)
	s, err := runner.Open(context.Background(), &sp, host)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = agent.Run(context.Background(), gen.Task{Prompt: "multiply"}, model.NewScript(responses...), s.Options)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return readTranscript(t, host.TranscriptPath)
}

// A run on Temporal keeps the transcript an in-process run keeps, entry
// for entry, in the store, also when it continues as new in the middle.
func TestEnginesWriteTheSameTranscript(t *testing.T) {
	t.Parallel()
	for _, tc := range scripts {
		for _, every := range []int{0, 2} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				want := embeddedTranscript(t, tc.responses, tc.check, tc.maxSteps)
				if len(want) < 3 {
					t.Fatalf("the embedded transcript has %d entries", len(want))
				}
				h := newHarness(t)
				in := scriptInput(tc.responses, tc.check, tc.maxSteps)
				in.ContinueAsNewSteps = every
				_, in = h.runContinued(t, in, false)
				h.result(t, in)
				path, err := h.store.TranscriptPath(in.ID)
				if err != nil {
					t.Fatal(err)
				}
				if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
					t.Fatalf("the transcript in the store: %v, %v (want mode 0600)", fi, err)
				}
				if diff := cmp.Diff(want, readTranscript(t, path)); diff != "" {
					t.Errorf("transcript differs (-embedded +temporal):\n%s", diff)
				}
			})
		}
	}
}

// The worker redacts the transcript before it reaches the store: a secret
// of its environment that a tool's output carries is not in the file.
func TestTemporalTranscriptIsRedacted(t *testing.T) {
	const secret = "sk-test-0123456789abcdefghij"
	t.Setenv("SPECLOOP_TEST_API_KEY", secret)
	h := newHarness(t)
	write := `{"type":"tool_call","tool_name":"write_file","arguments":{"path":"key.txt","content":"` + secret + `"}}`
	res, _ := h.run(t, scriptInput([]string{write, `{"type":"tool_call","tool_name":"read_file","arguments":{"path":"key.txt"}}`, finish}, "", 0))
	if res.ExitReason != gen.ExitReasonFinished {
		t.Fatalf("run: %+v", res)
	}
	path, err := h.store.TranscriptPath("run1")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), secret) {
		t.Fatalf("the secret is in the store's transcript:\n%s", data)
	}
	if !strings.Contains(string(data), transcript.Redacted) {
		t.Fatalf("nothing was redacted:\n%s", data)
	}
}

// A run whose request says transcript false keeps none on Temporal either.
func TestTemporalRunWithoutTranscript(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	in := scriptInput([]string{multiply, finish}, "", 0)
	off := false
	in.Transcript = &off
	h.run(t, in)
	path, err := h.store.TranscriptPath(in.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a transcript was written: %v", err)
	}
}
