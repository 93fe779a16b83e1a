package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/sdk"
	"github.com/specloop/specloop/server"
	"github.com/specloop/specloop/telemetry"
	"github.com/specloop/specloop/trace"
	"github.com/specloop/specloop/transcript"
)

// fakeEngine hands back a fixed trace and result, or, with block, waits
// for the run's cancellation.
type fakeEngine struct {
	block     bool
	got       chan runner.Spec
	cancelled chan bool // whether the stop was a client's cancellation
}

func (e *fakeEngine) Follow(context.Context, string, int, func(*gen.TraceEvent, []byte)) (gen.RunResult, error) {
	return gen.RunResult{}, runner.ErrNoEngineRun
}

func (e *fakeEngine) Execute(ctx context.Context, r runner.Spec, event func(*gen.TraceEvent, []byte)) (gen.RunResult, error) {
	e.got <- r
	if e.block {
		<-ctx.Done()
		e.cancelled <- runner.CancelRequested(ctx)
		return gen.RunResult{RunId: &r.ID, ExitReason: gen.ExitReasonCancelled}, nil
	}
	steps := 1
	reason := gen.ExitReasonFinished
	for _, ev := range []gen.TraceEvent{
		{RunId: r.ID, EventType: gen.TraceEventTypeRunStarted, Time: time.Unix(1, 0).UTC()},
		{RunId: r.ID, Step: 1, EventType: gen.TraceEventTypeModelAction, Time: time.Unix(2, 0).UTC()},
		{RunId: r.ID, Step: 1, EventType: gen.TraceEventTypeRunFinished, ExitReason: &reason, StepsUsed: &steps, Time: time.Unix(3, 0).UTC()},
	} {
		line, err := json.Marshal(&ev)
		if err != nil {
			return gen.RunResult{}, err
		}
		event(&ev, line)
	}
	answer := "from the engine"
	return gen.RunResult{RunId: &r.ID, ExitReason: gen.ExitReasonFinished, StepsUsed: 1, Answer: &answer}, nil
}

// A server with an Engine hands it the run as accepted and serves the
// engine's result and events through the API, as it does its own.
func TestEngineRunsAreServedLikeEmbeddedOnes(t *testing.T) {
	t.Parallel()
	e := &fakeEngine{got: make(chan runner.Spec, 1)}
	ts := newTestServer(t, server.Config{Config: runner.Config{Engine: e}})
	req := calcRequest()
	req.MaxSteps = ptr(7)
	run := ts.create(req)
	fin := ts.wait(run.Id)
	got := <-e.got
	if got.ID != run.Id || got.MaxSteps == nil || *got.MaxSteps != 7 || got.Task.Prompt != calcPrompt {
		t.Fatalf("the engine got %+v", got)
	}
	if fin.Result == nil || fin.Result.Answer == nil || *fin.Result.Answer != "from the engine" {
		t.Fatalf("result %+v", fin.Result)
	}
	resp, err := ts.raw.GetRunEvents(context.Background(), run.Id, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	evs := readSSE(t, resp.Body)
	var types []gen.TraceEventType
	for _, ev := range evs {
		types = append(types, ev.Data.EventType)
	}
	want := []gen.TraceEventType{gen.TraceEventTypeRunStarted, gen.TraceEventTypeModelAction, gen.TraceEventTypeRunFinished}
	if len(types) != len(want) || types[0] != want[0] || types[1] != want[1] || types[2] != want[2] {
		t.Fatalf("events %v, want %v", types, want)
	}
}

// A client's cancellation reaches the engine as one (CancelRequested), so
// the engine cancels the run rather than only stop following it.
func TestEngineSeesCancelRequested(t *testing.T) {
	t.Parallel()
	e := &fakeEngine{block: true, got: make(chan runner.Spec, 1), cancelled: make(chan bool, 1)}
	ts := newTestServer(t, server.Config{Config: runner.Config{Engine: e}})
	run := ts.create(calcRequest())
	<-e.got
	if _, err := ts.sdk.Cancel(context.Background(), run.Id); err != nil {
		t.Fatal(err)
	}
	if !<-e.cancelled {
		t.Fatal("the engine was stopped without CancelRequested")
	}
	if fin := ts.wait(run.Id); fin.Result.ExitReason != gen.ExitReasonCancelled {
		t.Fatalf("result %+v", fin.Result)
	}
}

// An engine's runs are counted in the server's metrics from the events the
// engine hands back, as embedded runs are from theirs.
func TestEngineRunsAreCounted(t *testing.T) {
	t.Parallel()
	m, err := telemetry.NewMetrics()
	if err != nil {
		t.Fatal(err)
	}
	e := &fakeEngine{got: make(chan runner.Spec, 1)}
	ts := newTestServer(t, server.Config{Config: runner.Config{Engine: e, Telemetry: &telemetry.Telemetry{Metrics: m}}})
	ts.wait(ts.create(calcRequest()).Id)
	got := ts.scrapeMetrics()
	for k, v := range map[string]float64{
		`specloop_runs_total{exit_reason="finished"}`: 1,
		`specloop_run_steps_count`:                    1,
	} {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
}

// An engine's workers hold the workspaces: the API server validates the
// name only, so a workspace that exists on the workers alone is accepted,
// and a name that leaves the root is still refused.
func TestEngineWorkspaceIsNamedOnly(t *testing.T) {
	t.Parallel()
	e := &fakeEngine{got: make(chan runner.Spec, 1)}
	ts := newTestServer(t, server.Config{Config: runner.Config{Engine: e}})
	req := calcRequest()
	req.Workspace = ptr("on/the/workers")
	run := ts.create(req)
	if got := <-e.got; got.Workspace == nil || *got.Workspace != "on/the/workers" {
		t.Fatalf("the engine got workspace %v", got.Workspace)
	}
	ts.wait(run.Id)
	req.Workspace = ptr("../outside")
	body, _ := json.Marshal(req)
	if code, _, _ := ts.do(http.MethodPost, "/v1/runs", "application/json", bytes.NewReader(body)); code != http.StatusBadRequest {
		t.Fatalf("a workspace outside the root: %d, want 400", code)
	}
}

// transcriptEngine is a fakeEngine whose runs keep their transcripts in
// its own directory (as the Temporal store does).
type transcriptEngine struct {
	fakeEngine
	dir string
}

func (e *transcriptEngine) RemoveTranscript(id string) error {
	return os.Remove(filepath.Join(e.dir, id+".jsonl"))
}

func (e *transcriptEngine) TranscriptPath(id string) (string, error) {
	return filepath.Join(e.dir, id+".jsonl"), nil
}

// The transcript of an engine's run is read where the engine keeps it.
func TestEngineTranscriptIsServed(t *testing.T) {
	t.Parallel()
	e := &transcriptEngine{fakeEngine: fakeEngine{got: make(chan runner.Spec, 1)}, dir: t.TempDir()}
	ts := newTestServer(t, server.Config{Config: runner.Config{Engine: e}})
	run := ts.create(calcRequest())
	ts.wait(run.Id)
	w, err := transcript.Open(filepath.Join(e.dir, run.Id+".jsonl"), transcript.NewRedactor(nil), trace.SyncNone)
	if err != nil {
		t.Fatal(err)
	}
	task := "from the engine's store"
	if err := w.Write(gen.TranscriptEntry{RunId: run.Id, EventType: gen.TraceEventTypeRunStarted, Task: &task}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tr, err := ts.sdk.Transcript(context.Background(), run.Id)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr) != 1 || tr[0].Task == nil || *tr[0].Task != task {
		t.Fatalf("transcript %+v, want the engine's one entry", tr)
	}
}

// An engine's run is continued through the engine: the API server hands
// it the person's message and the specs of the runs the conversation
// holds (the engine's workers rebuild the history from their
// transcripts); a run whose transcript the engine lacks is a conflict.
func TestEngineRunsAreContinuedThroughTheEngine(t *testing.T) {
	t.Parallel()
	e := &transcriptEngine{fakeEngine: fakeEngine{got: make(chan runner.Spec, 2)}, dir: t.TempDir()}
	ts := newTestServer(t, server.Config{Config: runner.Config{Engine: e}})
	run := ts.create(calcRequest())
	<-e.got
	ts.wait(run.Id)
	if _, err := ts.sdk.Continue(context.Background(), run.Id, "and now?"); !errors.Is(err, sdk.ErrConflict) || !strings.Contains(err.Error(), "kept no transcript") {
		t.Fatalf("continue a run whose transcript the engine lacks: %v, want a conflict saying so", err)
	}
	w, err := transcript.Open(filepath.Join(e.dir, run.Id+".jsonl"), transcript.NewRedactor(nil), trace.SyncNone)
	if err != nil {
		t.Fatal(err)
	}
	task := "Compute 12 x 7."
	if err := w.Write(gen.TranscriptEntry{RunId: run.Id, EventType: gen.TraceEventTypeRunStarted, Task: &task}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	next, err := ts.sdk.Continue(context.Background(), run.Id, "and now?")
	if err != nil {
		t.Fatal(err)
	}
	sp := <-e.got
	if sp.ID != next.Id || sp.FollowUp == nil || sp.FollowUp.Message != "and now?" || sp.FollowUp.History != nil ||
		len(sp.Conversation) != 1 || sp.Conversation[0].Spec.ID != run.Id {
		t.Fatalf("the engine got %+v, want the message and the first run's spec", sp)
	}
	ts.wait(next.Id)
}

// A server whose runs go to an Engine hands it an isolated run as asked
// (its workers make the work tree), naming the workspace it is made of.
func TestEngineGetsIsolatedRuns(t *testing.T) {
	t.Parallel()
	e := &fakeEngine{got: make(chan runner.Spec, 1)}
	ts := newTestServer(t, server.Config{Config: runner.Config{Engine: e}})
	req := calcRequest()
	worktree := gen.CreateRunRequestIsolationWorktree
	req.Isolation, req.Commit, req.Workspace = &worktree, ptr("v1"), ptr("repo")
	run := ts.create(req)
	ts.wait(run.Id)
	got := <-e.got
	if got.Isolation == nil || *got.Isolation != worktree || got.Commit == nil || *got.Commit != "v1" || got.Workspace == nil || *got.Workspace != "repo" {
		t.Fatalf("the engine got %+v", got.CreateRunRequest)
	}
}
