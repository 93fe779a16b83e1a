package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/sdk"
	"github.com/specloop/specloop/server"
)

// indexedEngine is an engine shared by several API servers, as one
// Temporal cluster is: it indexes every run it was given (runner.
// EngineIndex), and any server may follow a run, decide its approval or
// cancel it. Each run asks approval for one call and finishes once it is
// decided.
type indexedEngine struct {
	mu      sync.Mutex
	order   []string // the index's order: oldest first
	runs    map[string]*indexedRun
	down    atomic.Bool   // the index answers with an outage
	hold    chan struct{} // when set, a decided run finishes once it is closed
	lookups atomic.Int32
}

type indexedRun struct {
	listed   gen.Run
	lines    [][]byte
	result   *gen.RunResult
	decision chan agent.Approval
	changed  chan struct{} // closed and replaced on each new line
}

func newIndexedEngine() *indexedEngine {
	return &indexedEngine{runs: map[string]*indexedRun{}}
}

var errIndexDown = errors.New("visibility store unavailable")

// cancelDecision stands for a client's cancellation on the engine's
// decision channel; it never reaches a trace.
const cancelDecision gen.ApprovalDecision = "test-cancel"

func (e *indexedEngine) Execute(ctx context.Context, sp runner.Spec, event func(*gen.TraceEvent, []byte)) (gen.RunResult, error) {
	if sp.Listed == nil {
		return gen.RunResult{}, errors.New("the runner gave no run as it accepted it")
	}
	r := &indexedRun{listed: *sp.Listed, decision: make(chan agent.Approval, 1), changed: make(chan struct{})}
	e.mu.Lock()
	e.runs[sp.ID], e.order = r, append(e.order, sp.ID)
	e.mu.Unlock()
	tool, call := "run_command", "c1"
	e.emit(sp.ID, r, gen.TraceEvent{EventType: gen.TraceEventTypeRunStarted}, nil)
	e.emit(sp.ID, r, gen.TraceEvent{Step: 1, EventType: gen.TraceEventTypeApprovalRequested, ToolName: &tool, CallId: &call}, nil)
	go func() { // the engine runs the run, whoever follows it
		a := <-r.decision
		steps, reason := 1, gen.ExitReasonFinished
		res := gen.RunResult{RunId: &sp.ID, StepsUsed: steps}
		if a.Decision == cancelDecision {
			reason = gen.ExitReasonCancelled
		} else {
			answer := "decided " + string(a.Decision)
			res.Answer = &answer
			e.emit(sp.ID, r, gen.TraceEvent{Step: 1, EventType: gen.TraceEventTypeApprovalDecided, CallId: &call, Decision: &a.Decision}, nil)
			if e.hold != nil {
				<-e.hold
			}
		}
		res.ExitReason = reason
		e.emit(sp.ID, r, gen.TraceEvent{Step: 1, EventType: gen.TraceEventTypeRunFinished, ExitReason: &reason, StepsUsed: &steps}, &res)
	}()
	return e.follow(ctx, sp.ID, r, 0, event)
}

// emit appends an event to run id's trace; res ends the run.
func (e *indexedEngine) emit(id string, r *indexedRun, ev gen.TraceEvent, res *gen.RunResult) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ev.RunId, ev.Time = id, time.Unix(int64(len(r.lines)+1), 0).UTC()
	line, _ := json.Marshal(&ev)
	r.lines = append(r.lines, line)
	r.result = res
	close(r.changed)
	r.changed = make(chan struct{})
}

func (e *indexedEngine) Follow(ctx context.Context, id string, seen int, event func(*gen.TraceEvent, []byte)) (gen.RunResult, error) {
	e.mu.Lock()
	r := e.runs[id]
	e.mu.Unlock()
	if r == nil {
		return gen.RunResult{}, fmt.Errorf("follow %s: %w", id, runner.ErrNoEngineRun)
	}
	return e.follow(ctx, id, r, seen, event)
}

// follow hands over run r's events after the first seen as they come,
// until it ends.
func (e *indexedEngine) follow(ctx context.Context, id string, r *indexedRun, seen int, event func(*gen.TraceEvent, []byte)) (gen.RunResult, error) {
	cancelled := false
	for {
		e.mu.Lock()
		lines, res, changed := r.lines[seen:], r.result, r.changed
		e.mu.Unlock()
		for _, line := range lines {
			var ev gen.TraceEvent
			if err := json.Unmarshal(line, &ev); err != nil {
				return gen.RunResult{}, err
			}
			event(&ev, line)
		}
		seen += len(lines)
		if res != nil {
			return *res, nil
		}
		done := ctx.Done()
		if cancelled {
			done = nil // the cancellation's end is the engine's to report
		}
		select {
		case <-changed:
		case <-done:
			if !runner.CancelRequested(ctx) {
				msg := "stopped following"
				return gen.RunResult{RunId: &id, ExitReason: gen.ExitReasonInterrupted, Error: &msg}, nil
			}
			cancelled = true
			select { // a decision made already ends the run first
			case r.decision <- agent.Approval{Decision: cancelDecision}:
			default:
			}
		}
	}
}

func (e *indexedEngine) Decide(_ context.Context, runID, callID string, a agent.Approval) error {
	e.mu.Lock()
	r := e.runs[runID]
	e.mu.Unlock()
	if r == nil || callID != "c1" {
		return fmt.Errorf("no call %s waits in run %s", callID, runID)
	}
	select {
	case r.decision <- a:
		return nil
	default:
		return errors.New("the call was decided already")
	}
}

func (e *indexedEngine) PendingCall(_ context.Context, runID, callID string) (runner.EnginePendingCall, error) {
	id := callID
	return runner.EnginePendingCall{Call: gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: "run_command", CallId: &id, Arguments: pendingArgs}}, nil
}

// view is run id as the index has it.
func (e *indexedEngine) view(id string) gen.Run {
	r := e.runs[id]
	v := r.listed
	v.Status = gen.RunStatusWaitingForApproval
	if r.result != nil {
		v.Status, v.Result = gen.RunStatusFinished, r.result
	}
	return v
}

func (e *indexedEngine) Lookup(_ context.Context, id string) (runner.EngineRun, error) {
	e.lookups.Add(1)
	if e.down.Load() {
		return runner.EngineRun{}, errIndexDown
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.runs[id] == nil {
		return runner.EngineRun{}, fmt.Errorf("lookup %s: %w", id, runner.ErrNoEngineRun)
	}
	return runner.EngineRun{Run: e.view(id), Trace: slicesClone(e.runs[id].lines)}, nil
}

func slicesClone(lines [][]byte) [][]byte { return append([][]byte(nil), lines...) }

// List pages newest first; its cursor is the position to go on from.
func (e *indexedEngine) List(_ context.Context, status *gen.RunStatus, limit int, cursor string) ([]gen.Run, string, error) {
	if e.down.Load() {
		return nil, "", errIndexDown
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	from := 0
	if cursor != "" {
		n, err := strconv.Atoi(cursor)
		if err != nil || n < 0 || n > len(e.order) {
			return nil, "", &runner.Error{Kind: runner.Invalid, Field: "cursor", Detail: "not a cursor of the index"}
		}
		from = n
	}
	var runs []gen.Run
	for i := from; i < len(e.order); i++ {
		v := e.view(e.order[len(e.order)-1-i])
		if status != nil && v.Status != *status {
			continue
		}
		if len(runs) == limit {
			return runs, strconv.Itoa(i), nil
		}
		runs = append(runs, v)
	}
	return runs, "", nil
}

// Two API servers with their own data directories share one indexed
// engine: a run the first accepted is found, listed, followed and decided
// on the second, and the first sees the decision; a run that finished
// before the second ever heard of it is shown with its result; the list
// pages over every run once; a cursor the server did not issue is a 400;
// an outage of the index is a 503 to try again, never a 404.
//
// Not parallel: it follows runs as a restart does, which another test
// holds back with runner.SetFollowHook.
func TestARunIsServedByEveryAPIServerOfAnIndexedEngine(t *testing.T) {
	e := newIndexedEngine()
	e.hold = make(chan struct{})
	release := sync.OnceFunc(func() { close(e.hold) })
	defer release() // a failed check still lets the servers stop
	root := t.TempDir()
	a := newTestServer(t, server.Config{Config: runner.Config{Engine: e, WorkspaceRoot: root}})
	b := newTestServer(t, server.Config{Config: runner.Config{Engine: e, WorkspaceRoot: root}})
	ctx := context.Background()
	req := calcRequest()
	req.ApprovalPolicy = ptr(gen.ApprovalPolicyCommands)

	// Found and decided on the other server.
	waiting := a.create(req)
	pendingOf(t, a, waiting.Id)
	got, err := b.sdk.GetRun(ctx, waiting.Id)
	if err != nil {
		t.Fatalf("the other server: %v", err)
	}
	if got.Status != gen.RunStatusWaitingForApproval || !got.CreatedAt.Equal(waiting.CreatedAt) {
		t.Fatalf("the other server shows %+v, want it waiting, created at %v", got, waiting.CreatedAt)
	}
	if p := pendingOf(t, b, waiting.Id); p.CallId != "c1" || !reflect.DeepEqual(p.Arguments, pendingArgs) {
		t.Fatalf("the other server lists %+v", p)
	}
	if _, err := b.sdk.Approve(ctx, waiting.Id, "c1", ""); err != nil {
		t.Fatalf("approve on the other server: %v", err)
	}
	// The accepting server's gate learns of the decision from its event:
	// the call is no longer listed there, the run is running again, and
	// deciding it there too is a conflict, not a second decision.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) { // a hang guard only
		v, err := a.sdk.GetRun(ctx, waiting.Id)
		if err != nil {
			t.Fatal(err)
		}
		if v.Status == gen.RunStatusRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("decided on the other server, the accepting one still shows the run %s", v.Status)
		}
	}
	if list, err := a.sdk.PendingApprovals(ctx, waiting.Id); err != nil || len(list) != 0 {
		t.Fatalf("decided on the other server, the accepting one lists %+v (%v)", list, err)
	}
	if status, body := a.decide(waiting.Id, "c1", "deny", ""); status != http.StatusConflict {
		t.Fatalf("a second decision on the accepting server: %d %s, want 409", status, body)
	}
	release()
	for _, ts := range []*testServer{a, b} {
		fin := ts.wait(waiting.Id)
		if fin.Result == nil || fin.Result.ExitReason != gen.ExitReasonFinished || fin.Result.Answer == nil || *fin.Result.Answer != "decided approve" {
			t.Fatalf("result %+v", fin.Result)
		}
		checkEventTypes(t, ts, waiting.Id, approvedEvents)
	}

	// A run that ended before the other server heard of it.
	done := a.create(req)
	pendingOf(t, a, done.Id)
	if _, err := a.sdk.Approve(ctx, done.Id, "c1", ""); err != nil {
		t.Fatal(err)
	}
	a.wait(done.Id)
	got, err = b.sdk.GetRun(ctx, done.Id)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != gen.RunStatusFinished || got.Result == nil || got.Result.Answer == nil || *got.Result.Answer != "decided approve" {
		t.Fatalf("a finished run on the other server: %+v", got)
	}

	// Cancelled from the other server.
	cancelled := a.create(req)
	pendingOf(t, a, cancelled.Id)
	if _, err := b.sdk.Cancel(ctx, cancelled.Id); err != nil {
		t.Fatalf("cancel on the other server: %v", err)
	}
	if fin := a.wait(cancelled.Id); fin.Result.ExitReason != gen.ExitReasonCancelled {
		t.Fatalf("cancelled on the other server, the accepting one has %+v", fin.Result)
	}

	// A fourth run, which the other server has never been asked about,
	// is listed there too; pages of one hold every run once.
	fourth := a.create(req)
	pendingOf(t, a, fourth.Id)
	seen := map[string]gen.RunStatus{}
	for v, err := range b.sdk.ListRuns(ctx, sdk.ListOptions{PageSize: 1}) {
		if err != nil {
			t.Fatal(err)
		}
		if _, twice := seen[v.Id]; twice {
			t.Fatalf("run %s listed twice", v.Id)
		}
		seen[v.Id] = v.Status
	}
	want := map[string]gen.RunStatus{waiting.Id: gen.RunStatusFinished, done.Id: gen.RunStatusFinished,
		cancelled.Id: gen.RunStatusFinished, fourth.Id: gen.RunStatusWaitingForApproval}
	if !reflect.DeepEqual(seen, want) {
		t.Fatalf("the other server lists %v, want %v", seen, want)
	}
	waitingOnly := gen.RunStatusWaitingForApproval
	var filtered []string
	for v, err := range b.sdk.ListRuns(ctx, sdk.ListOptions{Status: waitingOnly}) {
		if err != nil {
			t.Fatal(err)
		}
		filtered = append(filtered, v.Id)
	}
	if !reflect.DeepEqual(filtered, []string{fourth.Id}) {
		t.Fatalf("runs waiting for approval: %v, want %v", filtered, []string{fourth.Id})
	}
	for _, cursor := range []string{"1", "aS4x", "aS54", "!!"} { // raw, and "i.1" / "i.x" that the index refuses
		status, _, body := b.do(http.MethodGet, "/v1/runs?cursor="+cursor, "", nil)
		wantStatus := http.StatusBadRequest
		if cursor == "aS4x" { // "i.1": the index's own cursor, wrapped
			wantStatus = http.StatusOK
		}
		if status != wantStatus {
			t.Fatalf("cursor %q: %d %s, want %d", cursor, status, body, wantStatus)
		}
	}

	// An id no server knows is a 404; the index's outage is not.
	if status, _, body := b.do(http.MethodGet, "/v1/runs/r-nosuchrun", "", nil); status != http.StatusNotFound {
		t.Fatalf("an unknown run: %d %s", status, body)
	}
	e.down.Store(true)
	unseen := "r-unseen"
	for _, path := range []string{"/v1/runs/" + unseen, "/v1/runs", "/v1/runs/" + unseen + "/approvals"} {
		if status, h, body := b.do(http.MethodGet, path, "", nil); status != http.StatusServiceUnavailable || h.Get("Retry-After") == "" {
			t.Fatalf("GET %s while the index is down: %d %s (Retry-After %q), want 503 with Retry-After", path, status, body, h.Get("Retry-After"))
		}
	}
	e.down.Store(false)
	// A run the other server adopted is its own now: no more lookups.
	before := e.lookups.Load()
	if _, err := b.sdk.GetRun(ctx, waiting.Id); err != nil {
		t.Fatal(err)
	}
	if n := e.lookups.Load() - before; n != 0 {
		t.Fatalf("an adopted run was looked up %d more times", n)
	}
}
