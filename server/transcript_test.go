package server_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/sdk"
	"github.com/specloop/specloop/server"
)

// GET /v1/runs/{id}/transcript returns what the run did, with the
// arguments and the results the event stream only summarizes, and the
// server's token redacted; a run with transcript false has none.
func TestRunTranscriptOverHTTP(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, server.Config{})
	ctx := context.Background()
	req := calcRequest()
	req.Task.Prompt = "Compute 12 x 7. The token is " + testToken
	run, err := ts.sdk.CreateRun(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ts.sdk.Wait(ctx, run.Id); err != nil {
		t.Fatal(err)
	}
	entries, err := ts.sdk.Transcript(ctx, run.Id)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) < 3 || entries[0].EventType != gen.TraceEventTypeRunStarted || entries[len(entries)-1].EventType != gen.TraceEventTypeRunFinished {
		t.Fatalf("entries: %+v", entries)
	}
	if task := *entries[0].Task; strings.Contains(task, testToken) || !strings.Contains(task, "[REDACTED]") {
		t.Fatalf("the task as kept: %q", task)
	}
	var sawArgs bool
	for _, e := range entries {
		if e.Action != nil {
			if call, err := e.Action.AsToolCall(); err == nil && call.ToolName == "calculator" && call.Arguments["left"] != nil {
				sawArgs = true
			}
		}
	}
	if !sawArgs {
		t.Error("the transcript has no calculator call with its arguments")
	}
	later := decodeReply[gen.Transcript](t, ts.answer(ts.raw.GetRunTranscript(ctx, run.Id, &gen.GetRunTranscriptParams{After: &entries[1].Seq})), http.StatusOK)
	if len(later.Entries) != len(entries)-2 {
		t.Fatalf("after seq %d: %+v", entries[1].Seq, later)
	}

	off := calcRequest()
	off.Transcript = new(bool)
	none, err := ts.sdk.CreateRun(ctx, off)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ts.sdk.Wait(ctx, none.Id); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.sdk.Transcript(ctx, none.Id); !errors.Is(err, sdk.ErrNotFound) {
		t.Fatalf("a run with transcript false: %v, want ErrNotFound", err)
	}
}
