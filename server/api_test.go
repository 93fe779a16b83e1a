package server_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/server"
	"github.com/specloop/specloop/trace"
)

// TestCalculatorRun creates the 12 × 7 script run through the generated
// client, streams its events and reads its result.
func TestCalculatorRun(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, server.Config{})
	ctx := context.Background()
	created := decodeReply[gen.Run](t, ts.answer(ts.raw.CreateRun(ctx, calcRequest())), http.StatusAccepted)
	if created.Id == "" || created.CreatedAt.IsZero() || created.Status == gen.RunStatusFinished && created.Result == nil {
		t.Fatalf("created run: %+v", created)
	}

	events, err := ts.raw.GetRunEvents(ctx, created.Id, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer events.Body.Close()
	if events.StatusCode != http.StatusOK || events.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %d %s", events.StatusCode, events.Header.Get("Content-Type"))
	}
	got := readSSE(t, events.Body)
	var types []string
	for i, ev := range got {
		if ev.ID != strconv.Itoa(i+1) {
			t.Errorf("event %d has id %q", i+1, ev.ID)
		}
		if ev.Event != string(ev.Data.EventType) {
			t.Errorf("event %d: event name %q, data event_type %q", i+1, ev.Event, ev.Data.EventType)
		}
		if ev.Data.RunId != created.Id {
			t.Errorf("event %d belongs to run %q", i+1, ev.Data.RunId)
		}
		types = append(types, ev.Event)
	}
	want := []string{"run_started", "model_action", "observation", "model_action", "run_finished"}
	if diff := cmp.Diff(want, types); diff != "" {
		t.Fatalf("event types (-want +got):\n%s", diff)
	}

	r := decodeReply[gen.Run](t, ts.answer(ts.raw.GetRun(ctx, created.Id)), http.StatusOK)
	if r.Status != gen.RunStatusFinished || r.Result == nil || r.StartedAt == nil || r.FinishedAt == nil {
		t.Fatalf("run: %+v", r)
	}
	if r.Result.ExitReason != gen.ExitReasonFinished || r.Result.StepsUsed != 2 || r.Result.Answer == nil || *r.Result.Answer != calcAnswer {
		t.Fatalf("result: %+v", r.Result)
	}

	// The stream is the trace file, event for event.
	f, err := os.Open(filepath.Join(ts.cfg.DataDir, "traces", created.Id+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	log, err := trace.Read(f)
	if err != nil || log.Torn != nil {
		t.Fatalf("trace: %v %+v", err, log.Torn)
	}
	var fromStream []gen.TraceEvent
	for _, ev := range got {
		fromStream = append(fromStream, ev.Data)
	}
	if diff := cmp.Diff(log.Events, fromStream); diff != "" {
		t.Errorf("stream differs from the trace file (-file +stream):\n%s", diff)
	}
}
