package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/server"
)

// durableEngine is an engine whose runs outlive the API server that
// started them, as Temporal's do: each run asks approval for one call
// (whose arguments only the engine holds) and finishes once it is decided.
type durableEngine struct {
	mu       sync.Mutex
	runs     map[string]*durableRun
	attached chan int // the events a followed run's trace had
}

type durableRun struct {
	lines    [][]byte
	decision chan agent.Approval
}

var pendingArgs = map[string]any{"command": "echo secret-ish argument"}

func newDurableEngine() *durableEngine {
	return &durableEngine{runs: map[string]*durableRun{}, attached: make(chan int, 4)}
}

func (e *durableEngine) Execute(ctx context.Context, sp runner.Spec, event func(*gen.TraceEvent, []byte)) (gen.RunResult, error) {
	e.mu.Lock()
	dr := &durableRun{decision: make(chan agent.Approval, 1)}
	e.runs[sp.ID] = dr
	e.mu.Unlock()
	return e.execute(ctx, sp.ID, dr, false, 0, event)
}

func (e *durableEngine) Follow(ctx context.Context, id string, seen int, event func(*gen.TraceEvent, []byte)) (gen.RunResult, error) {
	e.mu.Lock()
	dr := e.runs[id]
	e.attached <- seen
	e.mu.Unlock()
	return e.execute(ctx, id, dr, true, seen, event)
}

func (e *durableEngine) execute(ctx context.Context, id string, dr *durableRun, attached bool, seen int, event func(*gen.TraceEvent, []byte)) (gen.RunResult, error) {
	r := struct{ ID string }{id}
	if dr == nil {
		return gen.RunResult{}, fmt.Errorf("follow: %w", runner.ErrNoEngineRun)
	}
	emit := func(ev gen.TraceEvent) {
		ev.RunId, ev.Time = r.ID, time.Unix(int64(len(dr.lines)+1), 0).UTC()
		line, _ := json.Marshal(&ev)
		dr.lines = append(dr.lines, line)
		event(&ev, line)
	}
	if attached {
		for _, line := range dr.lines[seen:] {
			var ev gen.TraceEvent
			if err := json.Unmarshal(line, &ev); err != nil {
				return gen.RunResult{}, err
			}
			event(&ev, line)
		}
	} else {
		tool, id := "run_command", "c1"
		emit(gen.TraceEvent{EventType: gen.TraceEventTypeRunStarted})
		emit(gen.TraceEvent{Step: 1, EventType: gen.TraceEventTypeApprovalRequested, ToolName: &tool, CallId: &id})
	}
	select {
	case a := <-dr.decision:
		id, steps, reason := "c1", 1, gen.ExitReasonFinished
		emit(gen.TraceEvent{Step: 1, EventType: gen.TraceEventTypeApprovalDecided, CallId: &id, Decision: &a.Decision})
		emit(gen.TraceEvent{Step: 1, EventType: gen.TraceEventTypeRunFinished, ExitReason: &reason, StepsUsed: &steps})
		answer := "decided " + string(a.Decision)
		return gen.RunResult{RunId: &r.ID, ExitReason: reason, StepsUsed: 1, Answer: &answer}, nil
	case <-ctx.Done():
		if runner.CancelRequested(ctx) {
			return gen.RunResult{RunId: &r.ID, ExitReason: gen.ExitReasonCancelled}, nil
		}
		msg := "stopped following"
		return gen.RunResult{RunId: &r.ID, ExitReason: gen.ExitReasonInterrupted, Error: &msg}, nil
	}
}

func (e *durableEngine) Decide(_ context.Context, runID, callID string, a agent.Approval) error {
	e.mu.Lock()
	dr := e.runs[runID]
	e.mu.Unlock()
	if dr == nil || callID != "c1" {
		return fmt.Errorf("no call %s waits in run %s", callID, runID)
	}
	dr.decision <- a
	return nil
}

// pendingExpires is when the engine's approval wait times out.
var pendingExpires = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func (e *durableEngine) PendingCall(_ context.Context, runID, callID string) (runner.EnginePendingCall, error) {
	id := callID
	return runner.EnginePendingCall{Call: gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: "run_command", CallId: &id, Arguments: pendingArgs},
		Expires: pendingExpires}, nil
}

// pendingOf waits until the run lists a call waiting for approval.
func pendingOf(t *testing.T, ts *testServer, id string) gen.PendingApproval {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second) // a hang guard only
	for time.Now().Before(deadline) {
		list, err := ts.sdk.PendingApprovals(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) == 1 {
			return list[0]
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("run %s lists no call waiting for approval", id)
	return gen.PendingApproval{}
}

// An engine's run outlives the API server: the server started on the same
// data follows it again (no interrupted result), lists the call it waits
// on with the arguments the engine holds, hands it the decision, and
// serves every event once. A run the engine never got ends interrupted.
func TestEngineRunsSurviveAnAPIServerRestart(t *testing.T) {
	t.Parallel()
	e := newDurableEngine()
	data, root := t.TempDir(), t.TempDir()
	for _, ws := range []string{"a", "b"} {
		if err := os.Mkdir(filepath.Join(root, ws), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	cfg := server.Config{Config: runner.Config{Engine: e, DataDir: data, WorkspaceRoot: root}}
	ts1 := newTestServer(t, cfg)
	req := calcRequest()
	req.ApprovalPolicy, req.Workspace = ptr(gen.ApprovalPolicyCommands), ptr("a")
	run := ts1.create(req)
	if p := pendingOf(t, ts1, run.Id); !reflect.DeepEqual(p.Arguments, pendingArgs) {
		t.Fatalf("listed arguments %v, want the engine's %v", p.Arguments, pendingArgs)
	}
	req.Workspace = ptr("b")
	lost := ts1.create(req)
	pendingOf(t, ts1, lost.Id)
	ts1.close()
	e.mu.Lock()
	delete(e.runs, lost.Id) // as if its workflow was never started
	e.mu.Unlock()

	// The goroutines that follow the attached runs wait until the status
	// and the list were read: what the restarted server reports the
	// moment it serves cannot depend on them having run.
	read := make(chan struct{})
	defer runner.SetFollowHook(func(string) {
		select {
		case <-read:
		case <-time.After(30 * time.Second): // a hang guard only
		}
	})()
	release := sync.OnceFunc(func() { close(read) })
	defer release() // a failed check still lets the server stop
	ts2 := newTestServer(t, cfg)
	got, err := ts2.sdk.GetRun(context.Background(), run.Id)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != gen.RunStatusWaitingForApproval {
		t.Fatalf("after the restart the run is %s (%+v), want waiting_for_approval", got.Status, got.Result)
	}
	list, err := ts2.sdk.PendingApprovals(context.Background(), run.Id)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 {
		t.Fatalf("after the restart the run lists %+v, want the one call it waits on", list)
	}
	if p := list[0]; p.CallId != "c1" || !reflect.DeepEqual(p.Arguments, pendingArgs) || p.ExpiresAt == nil || !p.ExpiresAt.Equal(pendingExpires) {
		t.Fatalf("after the restart the run lists %+v, want the engine's arguments and expiry", p)
	}
	release()
	if seen := <-e.attached; seen != 2 { // either run: both have 2 events
		t.Fatalf("the engine was asked to follow after %d events, want the 2 events the trace has skipped", seen)
	}
	if _, err := ts2.sdk.Approve(context.Background(), run.Id, "c1", ""); err != nil {
		t.Fatal(err)
	}
	fin := ts2.wait(run.Id)
	if fin.Result.ExitReason != gen.ExitReasonFinished || fin.Result.Answer == nil || *fin.Result.Answer != "decided approve" {
		t.Fatalf("result %+v", fin.Result)
	}
	checkEventTypes(t, ts2, run.Id, approvedEvents)

	if fin := ts2.wait(lost.Id); fin.Result.ExitReason != gen.ExitReasonInterrupted {
		t.Fatalf("the run the engine never got: %+v", fin.Result)
	}

	// A server that stopped after the trace's run_finished but before
	// logging the result: the next one settles the run from its trace
	// and does not follow it again.
	ts2.close()
	for len(e.attached) > 0 { // the other run's
		<-e.attached
	}
	dropFinished(t, filepath.Join(data, "runs.jsonl"), run.Id)
	ts3 := newTestServer(t, cfg)
	fin3 := ts3.wait(run.Id)
	if fin3.Result.ExitReason != gen.ExitReasonFinished {
		t.Fatalf("after the lost log entry: %+v", fin3.Result)
	}
	select {
	case seen := <-e.attached:
		t.Fatalf("the engine was asked to follow a finished run (after %d events)", seen)
	default:
	}
	if n := len(readRunEvents(t, ts3, run.Id)); n != len(approvedEvents) {
		t.Fatalf("%d events after the second restart, want %d", n, len(approvedEvents))
	}
}

// dropFinished removes run id's result from the run log at path.
func dropFinished(t *testing.T, path, id string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var kept []byte
	for line := range bytes.Lines(data) {
		var e struct{ Op, ID string }
		if json.Unmarshal(line, &e) == nil && e.Op == "finished" && e.ID == id {
			continue
		}
		kept = append(kept, line...)
	}
	if len(kept) == len(data) {
		t.Fatalf("the run log has no result of run %s", id)
	}
	if err := os.WriteFile(path, kept, 0o600); err != nil {
		t.Fatal(err)
	}
}

func readRunEvents(t *testing.T, ts *testServer, id string) []sseEvent {
	t.Helper()
	resp, err := ts.raw.GetRunEvents(context.Background(), id, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	return readSSE(t, resp.Body)
}

// approvedEvents are the events of a run of calcRequest that waited for
// the approval of its call and got it.
var approvedEvents = []gen.TraceEventType{gen.TraceEventTypeRunStarted, gen.TraceEventTypeApprovalRequested, gen.TraceEventTypeApprovalDecided, gen.TraceEventTypeRunFinished}

// checkEventTypes fails t unless run id's events on ts have the ids 1, 2,
// … and the types want.
func checkEventTypes(t *testing.T, ts *testServer, id string, want []gen.TraceEventType) {
	t.Helper()
	var types []gen.TraceEventType
	for i, ev := range readRunEvents(t, ts, id) {
		if ev.ID != fmt.Sprint(i+1) {
			t.Fatalf("event %d has id %s", i+1, ev.ID)
		}
		types = append(types, ev.Data.EventType)
	}
	if !reflect.DeepEqual(types, want) {
		t.Fatalf("events %v, want %v", types, want)
	}
}
