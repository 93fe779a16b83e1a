package runner_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/trace"
	"github.com/specloop/specloop/transcript"
)

// A turn that ended before the model answered (a chat stopped during its
// first model call) does not stop its conversation from going on: the
// rebuilt history holds the turns before it and the person's message.
func TestHistoryKeepsATurnTheModelNeverAnswered(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	rn := newRunner(t, data, t.TempDir())
	req := script(t, `{"type":"finish","answer":"first answer"}`)
	first, err := rn.Create(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, rn, first.Id, finished)

	// The second turn's transcript: asked, then stopped.
	second := filepath.Join(t.TempDir(), "second.jsonl")
	w, err := transcript.Open(second, transcript.NewRedactor(nil), trace.SyncNone)
	if err != nil {
		t.Fatal(err)
	}
	msg := "and now the tests"
	for _, e := range []gen.TranscriptEntry{
		{RunId: "second", EventType: gen.TraceEventTypeRunStarted, Task: &msg},
		{RunId: "second", EventType: gen.TraceEventTypeRunFinished, Result: &gen.RunResult{ExitReason: gen.ExitReasonCancelled}},
	} {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	spec := runner.Spec{CreateRunRequest: req}
	turns := []runner.Turn{{Transcript: filepath.Join(data, "transcripts", first.Id+".jsonl"), Spec: spec}, {Transcript: second, Spec: spec}}
	task, h, err := runner.History(context.Background(), turns, agent.Options{})
	if err != nil {
		t.Fatalf("History: %v", err)
	}
	if task.Prompt != "p" || len(h) < 2 {
		t.Fatalf("task %q, history %+v", task.Prompt, h)
	}
	last := h[len(h)-1]
	if last.UserMessage == nil || last.UserMessage.Text != msg {
		t.Errorf("the history ends with %+v, want the person's message", last)
	}
	if !slices.ContainsFunc(h, func(it agent.Item) bool { return it.Finish != nil && it.Finish.Answer == "first answer" }) {
		t.Errorf("the first turn's finish is not in the history: %+v", h)
	}
}
