package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/runstore"
)

// Engine is the runner.Engine that runs each run as a workflow:
// `specloop-temporal serve`. The events come from the Store the workers
// write, followed as they arrive.
type Engine struct {
	// Client is the Temporal client; its DataConverter must be the
	// Store's (Store.DataConverter) with the workers' threshold.
	Client client.Client
	// TaskQueue is the shared task queue the workers poll.
	TaskQueue string
	// Store is the storage shared with the workers.
	Store *Store
	// HeartbeatTimeout goes to each run's workflow; 0 means
	// DefaultHeartbeatTimeout.
	HeartbeatTimeout time.Duration
	// Poll is how often a run's events are looked for in the store when
	// the workflow cannot say when there are new ones (a workflow started
	// by an older worker, or between two executions of a run); 0 means
	// 50 ms. Otherwise the store is read when the workflow says the trace
	// moved (its eventsUpdate).
	Poll time.Duration
	// Retry is the first wait before a failed read of the store or a
	// failed Temporal call is tried again; 0 means 100 ms.
	Retry time.Duration
	// Log receives the failures retried; nil means slog.Default().
	Log *slog.Logger

	// readEvents, when set (by a test), reads a run's trace lines instead
	// of the store.
	readEvents func(ctx context.Context, id string, from int) ([][]byte, error)
	// after, when set (by a test), is time.After for the waits of the
	// retrier.
	after func(time.Duration) <-chan time.Time
}

var (
	_ runner.Engine            = (*Engine)(nil)
	_ runner.EngineTranscripts = (*Engine)(nil)
)

// TranscriptPath is a file with run id's transcript as the workers wrote
// it to the store (Store.TranscriptPath).
func (e *Engine) TranscriptPath(id string) (string, error) { return e.Store.TranscriptPath(id) }

// RemoveTranscript removes run id's transcript from the store.
func (e *Engine) RemoveTranscript(id string) error { return e.Store.RemoveTranscript(id) }

// workflowID is the workflow id of run id.
func workflowID(runID string) string { return "specloop-run-" + runID }

// Execute starts run sp's workflow, hands its events to event as they
// reach the store, and returns its result. A client's cancellation cancels
// the workflow; the runner's shutdown only stops following it.
func (e *Engine) Execute(ctx context.Context, sp runner.Spec, event func(*gen.TraceEvent, []byte)) (gen.RunResult, error) {
	if err := runstore.CheckRunID(sp.ID); err != nil {
		return failed(sp.ID, err)
	}
	in := runInput{Spec: sp, HeartbeatTimeout: e.HeartbeatTimeout}
	wf, err := e.Client.ExecuteWorkflow(context.WithoutCancel(ctx), e.startOptions(&sp), WorkflowName, in)
	if err != nil {
		return failed(sp.ID, fmt.Errorf("start the workflow: %w", err))
	}
	return e.follow(ctx, sp.ID, 0, wf, event)
}

// Follow follows run id's workflow, started by a runner that stopped, if
// it exists (that runner may have stopped before it started it). While
// the cluster does not answer, it asks again (retrier) until it does or
// ctx is done.
func (e *Engine) Follow(ctx context.Context, id string, seen int, event func(*gen.TraceEvent, []byte)) (gen.RunResult, error) {
	if err := runstore.CheckRunID(id); err != nil {
		return failed(id, err)
	}
	bg := context.WithoutCancel(ctx)
	r := e.retrier(id)
	for {
		_, err := e.Client.DescribeWorkflow(bg, workflowID(id), "")
		if isNotFound(err) {
			return failed(id, fmt.Errorf("follow the workflow: %w", runner.ErrNoEngineRun))
		}
		if err == nil {
			break
		}
		_ = r.failed(bg, "describe the workflow", err, false) // never gone: no describe
		select {
		case <-r.after():
			continue
		case <-ctx.Done():
		}
		if !runner.CancelRequested(ctx) {
			return stopped(id)
		}
		break // follow hands the cancellation to the workflow
	}
	return e.follow(ctx, id, seen, e.Client.GetWorkflow(bg, workflowID(id), ""), event)
}

// failed is the result of a run the engine could not execute or follow.
func failed(id string, err error) (gen.RunResult, error) {
	msg := err.Error()
	return gen.RunResult{RunId: &id, ExitReason: gen.ExitReasonInternalError, Error: &msg}, err
}

// stopped is the result of a run this API server stopped following at its
// shutdown: the run goes on, for the next server to follow.
func stopped(id string) (gen.RunResult, error) {
	msg := "the API server stopped following the run; it goes on in Temporal"
	return gen.RunResult{RunId: &id, ExitReason: gen.ExitReasonInterrupted, Error: &msg}, nil
}

// follow hands the events of run id's workflow wf after the first seen
// to event until it ends, and returns its result.
//
// A failure that trying again can mend (the store or the cluster
// unreachable) does not end the run: the follower waits (a backoff that
// doubles, reset once the store answers) and tries again, for as long as
// it takes, since the run goes on in Temporal and its events and result
// stay durable there and in the store. Only the workflow's end (its
// result and all its events handed over), the server's shutdown (ctx
// done without a client's cancellation) or a permanent failure (the
// workflow gone, a damaged object of the store: permanent) ends it.
func (e *Engine) follow(ctx context.Context, id string, seen int, wf client.WorkflowRun, event func(*gen.TraceEvent, []byte)) (gen.RunResult, error) {
	bg := context.WithoutCancel(ctx)
	type outcome struct {
		res gen.RunResult
		err error
	}
	done := make(chan outcome, 1)
	get := func() {
		go func() {
			var o outcome
			o.err = wf.Get(bg, &o.res)
			done <- o
		}()
	}
	get()
	poll := e.Poll
	if poll <= 0 {
		poll = 50 * time.Millisecond
	}
	wctx, stopWaiting := context.WithCancel(bg)
	defer stopWaiting()
	moved := make(chan struct{}, 1)
	go e.waitEvents(wctx, wf.GetID(), seen, poll, moved)
	f := follower{lines: e.readEvents, id: id, have: seen, event: event}
	if f.lines == nil {
		f.lines = e.Store.events
	}
	// Two backoffs: the store's, reset by each read that works, and the
	// cluster's (the result, the cancellation).
	storeRetry, clusterRetry := e.retrier(id), e.retrier(id)
	var (
		end     *outcome         // the workflow's end, once Get returned it
		read    bool             // the store may have new lines
		cancel  bool             // a client's cancellation the workflow has yet to get
		getDue  bool             // Get failed: ask again
		backoff <-chan time.Time // while waiting to try again
	)
	// step does what is due; its error names what failed, and whether
	// the store or the cluster did.
	step := func() (*retrier, error) {
		if cancel {
			if err := e.Client.CancelWorkflow(bg, wf.GetID(), ""); err != nil && !isNotFound(err) {
				return clusterRetry, fmt.Errorf("cancel the workflow: %w", err)
			}
			cancel = false // (not found: the workflow ended, its result says how)
		}
		if getDue {
			getDue = false
			get()
		}
		if read {
			if err := f.read(bg); err != nil {
				return storeRetry, err
			}
			read = false
			storeRetry.reset()
		}
		return nil, nil
	}
	cancelled := ctx.Done()
	for {
		var err error
		var r *retrier
		select {
		case <-moved:
			read = true
		case <-cancelled:
			cancelled = nil
			if !runner.CancelRequested(ctx) {
				return stopped(id)
			}
			cancel = true
		case o := <-done:
			var we *temporal.WorkflowExecutionError
			switch {
			case o.err == nil || errors.As(o.err, &we):
				end, read = &o, true
			case isNotFound(o.err):
				return failed(id, fmt.Errorf("the workflow's result: %w", runner.ErrNoEngineRun))
			case permanent(o.err):
				return failed(id, fmt.Errorf("the workflow's result: %w", o.err))
			default:
				getDue = true
				err, r = fmt.Errorf("get the workflow's result: %w", o.err), clusterRetry
			}
		case <-backoff:
			backoff = nil
		}
		if err == nil && backoff == nil {
			r, err = step()
		}
		if err != nil {
			if permanent(err) {
				return failed(id, err)
			}
			if gone := r.failed(bg, "", err, true); gone != nil {
				return failed(id, gone)
			}
			if backoff == nil {
				backoff = r.after()
			}
			continue
		}
		if backoff != nil || end == nil || read || cancel || getDue {
			continue
		}
		if end.err != nil {
			return failed(id, fmt.Errorf("the workflow failed: %w", end.err))
		}
		end.res.RunId = &id
		return end.res, nil
	}
}

// The first and the longest wait of a retrier.
const (
	defaultRetry = 100 * time.Millisecond
	maxRetry     = 10 * time.Second
)

// retrier is the backoff of a follower's failures that trying again can
// mend, and their log: one record per failure, which says what failed,
// the workflow's status (whether the run goes on) and the next wait.
type retrier struct {
	e        *Engine
	id       string
	wait     time.Duration
	attempts int
}

func (e *Engine) retrier(id string) *retrier {
	r := &retrier{e: e, id: id}
	r.reset()
	return r
}

func (r *retrier) reset() {
	r.wait, r.attempts = r.e.Retry, 0
	if r.wait <= 0 {
		r.wait = defaultRetry
	}
}

// after returns a channel that receives once the wait before the next
// attempt is over (next).
func (r *retrier) after() <-chan time.Time {
	if r.e.after != nil {
		return r.e.after(r.next())
	}
	return time.After(r.next())
}

// next is the wait before the next attempt; the one after is twice as
// long, up to maxRetry.
func (r *retrier) next() time.Duration {
	w := r.wait
	r.wait = min(2*r.wait, max(maxRetry, r.e.Retry))
	return w
}

// failed logs err, a failure of what (a label, or "" when err names it),
// with the workflow's status when describe is set; gone is an error
// wrapping runner.ErrNoEngineRun when the status says the workflow no
// longer exists, a permanent failure (then nothing is logged: the
// follower ends with gone).
func (r *retrier) failed(ctx context.Context, what string, err error, describe bool) (gone error) {
	var status string
	if what != "" {
		err = fmt.Errorf("%s: %w", what, err)
	}
	if describe {
		d, derr := r.e.Client.DescribeWorkflow(ctx, workflowID(r.id), "")
		switch {
		case isNotFound(derr):
			return fmt.Errorf("%w; the workflow: %w", err, runner.ErrNoEngineRun)
		case derr != nil:
			status = "unknown (" + derr.Error() + ")"
		default:
			status = d.Status.String()
		}
	}
	r.attempts++
	log := r.e.Log
	if log == nil {
		log = slog.Default()
	}
	log.Warn("follow a run: a failure, tried again", "run", r.id, "err", err, "workflow", status, "attempt", r.attempts, "retry_in", r.wait)
	return nil
}

// isNotFound reports whether err is the cluster's "no such workflow".
func isNotFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}

// permanent reports whether err, of a read of the store or of a Temporal
// call of a follower, stays whatever the number of attempts: a damaged
// object of the store or line of the trace, a batch missing from it, a
// result that does not decode, a run id out of shape.
func permanent(err error) bool {
	var ce *runstore.CorruptError
	var ge *runstore.GapError
	var cb *corruptBlobError
	var dl *damagedLineError
	return errors.As(err, &ce) || errors.As(err, &ge) || errors.As(err, &cb) || errors.As(err, &dl) ||
		errors.Is(err, converter.ErrUnableToDecode) || errors.Is(err, ErrInvalidRunID)
}

// waitEvents tells moved each time the workflow's trace in the store grows
// past what it last said, by the workflow's eventsUpdate, which returns
// when there are new lines: no polling of the store while the workflow
// answers. When it cannot (an older workflow, a run between two
// executions, the server's own trouble), it tells moved every poll until
// it can again. It returns when ctx is done.
func (e *Engine) waitEvents(ctx context.Context, workflowID string, have int, poll time.Duration, moved chan<- struct{}) {
	tell := func() {
		select {
		case moved <- struct{}{}:
		default: // one is pending: the reader reads all there is
		}
	}
	for ctx.Err() == nil {
		h, err := e.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
			WorkflowID: workflowID, UpdateName: eventsUpdate, Args: []any{have},
			WaitForStage: client.WorkflowUpdateStageCompleted})
		var n int
		if err == nil {
			err = h.Get(ctx, &n)
		}
		if err != nil || n <= have { // no answer, or the execution ends: wait for the next
			select {
			case <-ctx.Done():
				return
			case <-time.After(poll):
			}
			tell()
			continue
		}
		have = n
		tell()
	}
}

// follower hands over a run's events as the store's trace of it grows.
type follower struct {
	lines func(ctx context.Context, id string, from int) ([][]byte, error)
	id    string
	have  int // the lines handed over, or that the caller has
	event func(*gen.TraceEvent, []byte)
}

// read hands over the lines added to the trace since the last read.
func (f *follower) read(ctx context.Context) error {
	lines, err := f.lines(ctx, f.id, f.have)
	if err != nil {
		return err
	}
	for _, line := range lines {
		var ev gen.TraceEvent
		if err := json.Unmarshal(line, &ev); err != nil {
			return &damagedLineError{line: f.have + 1, err: err}
		}
		f.have++
		f.event(&ev, line)
	}
	return nil
}

// damagedLineError is the error of a trace line in the store that is not
// a trace event.
type damagedLineError struct {
	line int
	err  error
}

func (e *damagedLineError) Error() string {
	return fmt.Sprintf("line %d of the run's trace: %v", e.line, e.err)
}

func (e *damagedLineError) Unwrap() error { return e.err }

// Decide signals run runID's workflow with the decision on call callID.
func (e *Engine) Decide(ctx context.Context, runID, callID string, a agent.Approval) error {
	return e.Client.SignalWorkflow(ctx, workflowID(runID), "", approvalSignal, approvalDecision{CallID: callID, Approval: a})
}

// PendingCall returns the call run runID's workflow waits on for
// approval, with its arguments and expiry (a workflow query: the arguments
// never go to the trace).
func (e *Engine) PendingCall(ctx context.Context, runID, callID string) (runner.EnginePendingCall, error) {
	v, err := e.Client.QueryWorkflow(ctx, workflowID(runID), "", pendingQuery)
	if err != nil {
		return runner.EnginePendingCall{}, fmt.Errorf("query the workflow: %w", err)
	}
	var p *runner.EnginePendingCall
	if err := v.Get(&p); err != nil {
		return runner.EnginePendingCall{}, fmt.Errorf("decode the pending call: %w", err)
	}
	if p == nil || p.Call.CallId == nil || *p.Call.CallId != callID {
		return runner.EnginePendingCall{}, errors.New("the run waits for no decision on this call")
	}
	return *p, nil
}

var _ runner.EngineApprovals = (*Engine)(nil)
