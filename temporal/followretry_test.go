package temporal_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/runstore"
	"github.com/specloop/specloop/sandbox"
	"github.com/specloop/specloop/temporal"
)

// fakeCluster is one run's workflow as the Temporal cluster has it, with
// its faults: the test writes the run's trace to the store, as workers
// would, and ends the workflow; each fault counter fails that many of
// the next calls as an unreachable cluster does (after the SDK's own
// retries). The update of a run's events always fails (an older
// workflow, or the cluster's trouble): the follower polls the store.
type fakeCluster struct {
	client.Client // the calls an API server never makes: nil, they panic

	ended       chan struct{} // closed when the workflow ends
	res         gen.RunResult
	endOnce     sync.Once
	gone        atomic.Bool // the workflow is gone (NotFound) from now on
	getFaults   atomic.Int32
	descFault   atomic.Int32
	describes   atomic.Int32
	updates     atomic.Int32
	cancels     atomic.Int32
	cancelFault atomic.Int32
	onCancel    func() // called at the first cancellation that gets through
	cancelOnce  sync.Once
	polled      chan struct{} // when set, told of each update (each poll)
}

func newFakeCluster() *fakeCluster { return &fakeCluster{ended: make(chan struct{})} }

// take uses up one of n's faults, if n has one left.
func take(n *atomic.Int32) bool {
	for {
		v := n.Load()
		if v <= 0 {
			return false
		}
		if n.CompareAndSwap(v, v-1) {
			return true
		}
	}
}

var errUnreachable = serviceerror.NewUnavailable("the cluster is unreachable")

func (c *fakeCluster) end(res gen.RunResult) {
	c.endOnce.Do(func() { c.res = res; close(c.ended) })
}

func (c *fakeCluster) ExecuteWorkflow(context.Context, client.StartWorkflowOptions, any, ...any) (client.WorkflowRun, error) {
	return fakeRun{c}, nil
}

func (c *fakeCluster) GetWorkflow(context.Context, string, string) client.WorkflowRun {
	return fakeRun{c}
}

func (c *fakeCluster) DescribeWorkflow(context.Context, string, string) (*client.WorkflowExecutionDescription, error) {
	c.describes.Add(1)
	if c.gone.Load() {
		return nil, serviceerror.NewNotFound("workflow not found")
	}
	if take(&c.descFault) {
		return nil, errUnreachable
	}
	st := enums.WORKFLOW_EXECUTION_STATUS_RUNNING
	select {
	case <-c.ended:
		st = enums.WORKFLOW_EXECUTION_STATUS_COMPLETED
	default:
	}
	return &client.WorkflowExecutionDescription{WorkflowExecutionMetadata: client.WorkflowExecutionMetadata{Status: st}}, nil
}

func (c *fakeCluster) UpdateWorkflow(ctx context.Context, _ client.UpdateWorkflowOptions) (client.WorkflowUpdateHandle, error) {
	c.updates.Add(1)
	if c.polled != nil {
		select {
		case c.polled <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return nil, errUnreachable
}

func (c *fakeCluster) CancelWorkflow(context.Context, string, string) error {
	c.cancels.Add(1)
	if take(&c.cancelFault) {
		return errUnreachable
	}
	if c.onCancel != nil {
		c.cancelOnce.Do(c.onCancel)
	}
	return nil
}

// fakeRun is the handle of fakeCluster's workflow: Get waits for its end,
// then fails as many times as the cluster's getFaults say.
type fakeRun struct{ c *fakeCluster }

func (fakeRun) GetID() string                  { return "specloop-run-run1" }
func (fakeRun) GetRunID() string               { return "first" }
func (fakeRun) GetFirstExecutionRunID() string { return "first" }

func (r fakeRun) Get(ctx context.Context, v any) error {
	select {
	case <-r.c.ended:
	case <-ctx.Done():
		return ctx.Err()
	}
	if take(&r.c.getFaults) {
		return errUnreachable
	}
	*v.(*gen.RunResult) = r.c.res
	return nil
}

func (r fakeRun) GetWithOptions(ctx context.Context, v any, _ client.WorkflowRunGetOptions) error {
	return r.Get(ctx, v)
}

// records is a slog handler that keeps what is logged.
type records struct {
	mu    sync.Mutex
	msgs  []string
	first chan struct{} // closed at the first record
	once  sync.Once
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *records) WithGroup(string) slog.Handler            { return r }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	r.msgs = append(r.msgs, rec.Message)
	r.mu.Unlock()
	r.once.Do(func() { close(r.first) })
	return nil
}

func (r *records) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.msgs...)
}

// followed is an Engine on a fakeCluster whose store reads fail with
// storeErr as many times as storeFaults say, and what it logs.
type followed struct {
	e           *temporal.Engine
	c           *fakeCluster
	store       *temporal.Store
	log         *records
	storeFaults atomic.Int32
	storeErr    error
	reads       atomic.Int32
}

func newFollowed(t *testing.T) *followed {
	t.Helper()
	store, err := temporal.NewStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	f := &followed{c: newFakeCluster(), store: store, log: &records{first: make(chan struct{})}, storeErr: errors.New("the store is unreachable")}
	f.e = &temporal.Engine{Client: f.c, TaskQueue: "q", Store: store, Poll: time.Millisecond, Retry: time.Millisecond, Log: slog.New(f.log)}
	f.e.SetReadEvents(func(ctx context.Context, id string, from int) ([][]byte, error) {
		f.reads.Add(1)
		if take(&f.storeFaults) {
			return nil, f.storeErr
		}
		return f.e.ReadEvents(ctx, id, from)
	})
	return f
}

type executed struct {
	res gen.RunResult
	err error
}

// execute starts run1 on f's engine: its result comes on the first
// channel, the trace lines it hands over on the second.
func (f *followed) execute(ctx context.Context, n int) (<-chan executed, <-chan string) {
	lines := make(chan string, n+16)
	out := make(chan executed, 1)
	go func() {
		res, err := f.e.Execute(ctx, scriptInput(nil, "", 0).Spec, func(_ *gen.TraceEvent, line []byte) {
			lines <- string(line)
		})
		out <- executed{res, err}
	}()
	return out, lines
}

// TestFollowOutlastsTransientFailures: an API server whose store reads
// and Temporal calls fail for a while, as the run goes on in Temporal,
// hands over every event of the run once, in order, and records the run's
// real result, not an internal error; it logs each failure once, not at
// each poll of the store while it waits.
func TestFollowOutlastsTransientFailures(t *testing.T) {
	t.Parallel()
	wantRes, evs := embedded(t, []string{multiply, writeDone, readDone, finish}, "", 0)
	var want [][]byte
	for i := range evs {
		line, err := json.Marshal(&evs[i])
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, line)
	}
	half := len(want) / 2
	f := newFollowed(t)
	f.storeFaults.Store(3) // the first three reads of the store fail
	out, lines := f.execute(t.Context(), len(want))
	if err := f.store.AppendEvents("run1", 0, want[:half]); err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) < half {
		select {
		case l := <-lines:
			got = append(got, l)
		case o := <-out:
			t.Fatalf("the follow ended while the run goes on: %+v (%v)", o.res, o.err)
		}
	}
	// Then the store, the next status and the result fail too.
	f.storeFaults.Store(2)
	f.c.descFault.Store(1)
	f.c.getFaults.Store(2)
	if err := f.store.AppendEvents("run1", half, want[half:]); err != nil {
		t.Fatal(err)
	}
	f.c.end(wantRes)
	o := <-out
	for len(lines) > 0 { // Execute returned: all it handed over is here
		got = append(got, <-lines)
	}
	if o.err != nil {
		t.Fatalf("the follow failed: %v (%+v)", o.err, o.res)
	}
	wantRes.RunId = o.res.RunId
	if diff := cmp.Diff(wantRes, o.res); diff != "" {
		t.Errorf("result (-the run's +recorded):\n%s", diff)
	}
	if o.res.RunId == nil || *o.res.RunId != "run1" {
		t.Errorf("result of run %v, want run1", o.res.RunId)
	}
	wantLines := make([]string, len(want))
	for i, l := range want {
		wantLines[i] = string(l)
	}
	if diff := cmp.Diff(wantLines, got); diff != "" {
		t.Errorf("events handed over (-the trace +handed):\n%s", diff)
	}
	if n := f.storeFaults.Load() + f.c.descFault.Load() + f.c.getFaults.Load(); n != 0 {
		t.Errorf("%d faults never happened", n)
	}
	if f.c.updates.Load() == 0 {
		t.Error("the follower never asked the workflow for its events")
	}
	// One record for each of the 3+2 store and 2 result failures, though
	// the store was polled many more times meanwhile.
	if logs := f.log.all(); len(logs) != 7 {
		t.Errorf("logged %d records (%q), want one per failure: 7", len(logs), logs)
	}
	if f.c.cancels.Load() != 0 {
		t.Error("the workflow was cancelled")
	}
}

// TestFollowEndsOnPermanentFailures: a damaged batch of the trace, a
// batch missing from it, or a workflow gone, still ends the follow, with
// an error that says which.
func TestFollowEndsOnPermanentFailures(t *testing.T) {
	t.Parallel()
	t.Run("damaged batch", func(t *testing.T) {
		t.Parallel()
		f := newFollowed(t)
		f.storeErr = &runstore.CorruptError{Key: "runs/run1/events/x"}
		f.storeFaults.Store(1 << 20)
		out, _ := f.execute(t.Context(), 0)
		if err := f.store.AppendEvents("run1", 0, [][]byte{[]byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
		o := <-out
		var ce *runstore.CorruptError
		if !errors.As(o.err, &ce) || o.res.ExitReason != gen.ExitReasonInternalError {
			t.Fatalf("result %+v, error %v: want internal_error and the CorruptError", o.res, o.err)
		}
		if n := f.reads.Load(); n != 1 {
			t.Errorf("the damaged batch was read %d times, want once", n)
		}
	})
	t.Run("missing batch", func(t *testing.T) {
		t.Parallel()
		f := newFollowed(t)
		f.storeErr = &runstore.GapError{Stream: runstore.Events, ID: "run1", From: 0, To: 1}
		f.storeFaults.Store(1 << 20)
		out, _ := f.execute(t.Context(), 0)
		if err := f.store.AppendEvents("run1", 0, [][]byte{[]byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
		o := <-out
		var ge *runstore.GapError
		if !errors.As(o.err, &ge) || o.res.ExitReason != gen.ExitReasonInternalError {
			t.Fatalf("result %+v, error %v: want internal_error and the GapError", o.res, o.err)
		}
		if n := f.reads.Load(); n != 1 {
			t.Errorf("the stream with a gap was read %d times, want once", n)
		}
	})
	t.Run("workflow gone", func(t *testing.T) {
		t.Parallel()
		f := newFollowed(t)
		f.storeFaults.Store(1 << 20)
		f.c.gone.Store(true)
		out, _ := f.execute(t.Context(), 0)
		o := <-out
		if !errors.Is(o.err, runner.ErrNoEngineRun) {
			t.Fatalf("result %+v, error %v: want ErrNoEngineRun", o.res, o.err)
		}
		if f.c.describes.Load() == 0 {
			t.Error("the workflow's status was never asked")
		}
	})
}

// TestFollowStopsAtShutdown: an API server that shuts down while it
// retries stops following the run (which goes on in Temporal), without
// cancelling it and without an error: the next server follows it.
func TestFollowStopsAtShutdown(t *testing.T) {
	t.Parallel()
	f := newFollowed(t)
	f.storeFaults.Store(1 << 20)
	ctx, shutdown := context.WithCancel(t.Context())
	out, _ := f.execute(ctx, 0)
	select {
	case <-f.log.first: // a failure was retried
	case o := <-out:
		t.Fatalf("the follow ended while the run goes on: %+v (%v)", o.res, o.err)
	}
	shutdown()
	o := <-out
	if o.err != nil || o.res.ExitReason != gen.ExitReasonInterrupted {
		t.Fatalf("result %+v, error %v: want interrupted, no error", o.res, o.err)
	}
	if f.c.cancels.Load() != 0 {
		t.Error("the workflow was cancelled at the server's shutdown")
	}
}

// TestFollowRetriesDescribe: an API server that adopts a run while the
// cluster does not answer waits for it, then follows the run.
func TestFollowRetriesDescribe(t *testing.T) {
	t.Parallel()
	f := newFollowed(t)
	f.c.descFault.Store(2)
	f.c.end(gen.RunResult{ExitReason: gen.ExitReasonFinished})
	res, err := f.e.Follow(t.Context(), "run1", 0, func(*gen.TraceEvent, []byte) {})
	if err != nil || res.ExitReason != gen.ExitReasonFinished {
		t.Fatalf("result %+v, error %v: want finished", res, err)
	}
	if n := f.c.descFault.Load(); n != 0 {
		t.Errorf("%d faults never happened", n)
	}
}

// traceLines is the trace of an embedded run of responses, as run id's
// JSON lines, and its result.
func traceLines(t *testing.T, id string, responses ...string) (gen.RunResult, [][]byte) {
	t.Helper()
	res, evs := embedded(t, responses, "", 0)
	var lines [][]byte
	for i := range evs {
		evs[i].RunId = id
		line, err := json.Marshal(&evs[i])
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, line)
	}
	return res, lines
}

// TestAPIServerRecordsTheRunThroughOutages: the run's record and stream on
// an API server whose store reads and cluster calls fail for a while are
// the run's: a run that finished, and a run a client cancelled meanwhile
// (the cancellation handed to the workflow once the cluster answers).
func TestAPIServerRecordsTheRunThroughOutages(t *testing.T) {
	t.Parallel()
	for _, cancel := range []bool{false, true} {
		name := "finished"
		if cancel {
			name = "cancelled"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFollowed(t)
			r, err := runner.New(runner.Config{DataDir: t.TempDir(), WorkspaceRoot: t.TempDir(), Sandbox: sandbox.Policy{Backend: sandbox.None}, Engine: f.e})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = r.Shutdown(context.Background()) })
			f.storeFaults.Store(3)
			run, err := r.Create(t.Context(), scriptInput([]string{multiply, finish}, "", 0).CreateRunRequest)
			if err != nil {
				t.Fatal(err)
			}
			wantRes, lines := traceLines(t, run.Id, multiply, finish)
			if cancel {
				// The run is cancelled after its first step: the
				// workflow writes its end once it gets the
				// cancellation, which fails twice first.
				wantRes, lines = traceLines(t, run.Id, multiply)
				last := len(lines) - 1
				var ev gen.TraceEvent
				if err := json.Unmarshal(lines[last], &ev); err != nil {
					t.Fatal(err)
				}
				wantRes.ExitReason = gen.ExitReasonCancelled
				ev.ExitReason = &wantRes.ExitReason
				if lines[last], err = json.Marshal(&ev); err != nil {
					t.Fatal(err)
				}
				f.c.cancelFault.Store(2)
				f.c.onCancel = func() {
					if err := f.store.AppendEvents(run.Id, last, lines[last:]); err != nil {
						t.Error(err)
					}
					f.c.end(wantRes)
				}
				if err := f.store.AppendEvents(run.Id, 0, lines[:last]); err != nil {
					t.Fatal(err)
				}
				f.storeFaults.Store(2)
				if _, err := r.Cancel(run.Id); err != nil {
					t.Fatal(err)
				}
			} else {
				if err := f.store.AppendEvents(run.Id, 0, lines); err != nil {
					t.Fatal(err)
				}
				f.c.getFaults.Store(2)
				f.c.end(wantRes)
			}
			stream, err := r.Events(t.Context(), run.Id, 0)
			if err != nil {
				t.Fatal(err)
			}
			data, err := io.ReadAll(stream) // to the run's end
			stream.Close()
			if err != nil {
				t.Fatal(err)
			}
			got, err := r.Get(run.Id)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != gen.RunStatusFinished || got.Result == nil || got.Result.ExitReason != wantRes.ExitReason {
				t.Fatalf("the run's record: %s %+v, want finished %s", got.Status, got.Result, wantRes.ExitReason)
			}
			for i, l := range lines {
				if n := strings.Count(string(data), "data: "+string(l)+"\n"); n != 1 {
					t.Errorf("event %d served %d times, want once", i, n)
				}
			}
			if n := strings.Count(string(data), "\ndata: "); n != len(lines) {
				t.Errorf("%d events served, want %d", n, len(lines))
			}
			if n := f.storeFaults.Load() + f.c.getFaults.Load() + f.c.cancelFault.Load(); n != 0 {
				t.Errorf("%d faults never happened", n)
			}
		})
	}
}

// TestFollowWaitsOutItsBackoff: while a follower waits to try the store
// again, the polls of the store that the workflow's silence makes go on
// read nothing and log nothing; the store is read again, and the failure
// logged again, when the wait is over, and the next wait is longer.
func TestFollowWaitsOutItsBackoff(t *testing.T) {
	t.Parallel()
	f := newFollowed(t)
	f.storeFaults.Store(1 << 20)
	f.c.polled = make(chan struct{})
	type wait struct {
		d    time.Duration
		over chan time.Time
	}
	waits := make(chan wait)
	f.e.SetAfter(func(d time.Duration) <-chan time.Time {
		w := wait{d, make(chan time.Time, 1)}
		waits <- w
		return w.over
	})
	ctx, shutdown := context.WithCancel(t.Context())
	out, _ := f.execute(ctx, 0)
	var prev time.Duration
	for step := 1; step <= 3; step++ {
		var w wait
		for got := false; !got; { // polls go on while the follower fails
			select {
			case <-f.c.polled:
			case w = <-waits:
				got = true
			case o := <-out:
				t.Fatalf("the follow ended while the run goes on: %+v (%v)", o.res, o.err)
			}
		}
		if w.d <= prev {
			t.Errorf("wait %d is %v, after %v: want longer", step, w.d, prev)
		}
		prev = w.d
		for range 20 { // twenty polls within the wait
			<-f.c.polled
		}
		if n, logs := f.reads.Load(), len(f.log.all()); n != int32(step) || logs != step {
			t.Fatalf("after %d waits: %d reads of the store, %d records logged; want %d of each", step, n, logs, step)
		}
		w.over <- time.Time{}
	}
	shutdown()
	drained := make(chan struct{})
	defer close(drained)
	go func() { // the follower may still poll, or begin a wait
		for {
			select {
			case <-f.c.polled:
			case <-waits:
			case <-drained:
				return
			}
		}
	}()
	if o := <-out; o.err != nil || o.res.ExitReason != gen.ExitReasonInterrupted {
		t.Fatalf("result %+v, error %v: want interrupted", o.res, o.err)
	}
}
