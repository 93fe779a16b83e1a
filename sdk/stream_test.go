package sdk_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/sdk"
	"github.com/specloop/specloop/server"
)

// Stream yields a run's trace events and its transcript's entries, each
// once, across a dropped connection (it resumes after the last id, "P:S",
// with Last-Event-ID), including the entries the server sends after
// run_finished: those of the run's end.
func TestStreamWithContentResumesAfterDrop(t *testing.T) {
	t.Parallel()
	url := newServer(t, server.Config{})
	plain, _ := sdk.New(url, sdk.Config{})
	ctx := context.Background()
	run, err := plain.CreateRun(ctx, gen.CreateRunRequest{Task: gen.Task{Prompt: "Compute 12 x 7."}, Model: sdk.Script(calc...)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Wait(ctx, run.Id); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(url + "/v1/runs/" + run.Id + "/events?content=true")
	if err != nil {
		t.Fatal(err)
	}
	all, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	first := strings.Index(string(all), "event: transcript\n")
	if first < 0 {
		t.Fatalf("no transcript entry in %s", all)
	}
	d := &dropTransport{cut: first + 40} // into the first entry
	c, _ := sdk.New(url, sdk.Config{HTTPClient: &http.Client{Transport: d}})
	var events, entries []string
	seq := 0
	for it, err := range c.Stream(ctx, run.Id, 0) {
		if err != nil {
			t.Fatalf("%v (streams %q, Last-Event-ID %q)", err, d.streams, d.lastIDs)
		}
		switch {
		case it.Event != nil:
			events = append(events, string(it.Event.EventType))
		case it.Entry != nil:
			if it.Entry.Seq <= seq {
				t.Fatalf("entry %d after entry %d", it.Entry.Seq, seq)
			}
			seq = it.Entry.Seq
			entries = append(entries, string(it.Entry.EventType))
			if it.Entry.EventType == gen.TraceEventTypeRunStarted && (it.Entry.Task == nil || *it.Entry.Task != "Compute 12 x 7.") {
				t.Errorf("the run_started entry lacks the task: %+v", it.Entry)
			}
		}
	}
	want := "run_started model_action observation model_action run_finished"
	if got := strings.Join(events, " "); got != want {
		t.Errorf("events %q, want %q", got, want)
	}
	if len(entries) == 0 || entries[len(entries)-1] != string(gen.TraceEventTypeRunFinished) {
		t.Errorf("entries %q, want them to end with the run's end", entries)
	}
	if len(d.streams) != 2 || d.lastIDs[0] != "" || !strings.Contains(d.lastIDs[1], ":") || !strings.Contains(d.streams[1], "content=true") || strings.Contains(d.streams[1], "after=") {
		t.Errorf("streams requested %q with Last-Event-ID %q, want a second one resuming after the first's last id", d.streams, d.lastIDs)
	}
}

// A server (or something posing as one) that sends an event stream line
// without end does not make the client buffer it without bound: the
// stream fails once the line passes the client's bound.
func TestEventStreamLinesAreBounded(t *testing.T) {
	t.Parallel()
	chunk := []byte(strings.Repeat("x", 1<<20))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: ")
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	c, _ := sdk.New(srv.URL, sdk.Config{})
	for _, err := range c.Events(context.Background(), "r1", 0) {
		if err == nil || !strings.Contains(err.Error(), "longer than") {
			t.Fatalf("got %v, want the line bound's error", err)
		}
		return
	}
	t.Fatal("the stream ended without an error")
}
