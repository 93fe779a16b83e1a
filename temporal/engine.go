package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/runner"
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
	if err := checkRunID(sp.ID); err != nil {
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
// it exists (that runner may have stopped before it started it).
func (e *Engine) Follow(ctx context.Context, id string, seen int, event func(*gen.TraceEvent, []byte)) (gen.RunResult, error) {
	if err := checkRunID(id); err != nil {
		return failed(id, err)
	}
	bg := context.WithoutCancel(ctx)
	_, err := e.Client.DescribeWorkflow(bg, workflowID(id), "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return failed(id, fmt.Errorf("follow the workflow: %w", runner.ErrNoEngineRun))
	}
	if err != nil {
		return failed(id, fmt.Errorf("describe the workflow: %w", err))
	}
	return e.follow(ctx, id, seen, e.Client.GetWorkflow(bg, workflowID(id), ""), event)
}

// failed is the result of a run the engine could not execute or follow.
func failed(id string, err error) (gen.RunResult, error) {
	msg := err.Error()
	return gen.RunResult{RunId: &id, ExitReason: gen.ExitReasonInternalError, Error: &msg}, err
}

// follow hands the events of run id's workflow wf after the first seen
// to event until it ends, and returns its result.
func (e *Engine) follow(ctx context.Context, id string, seen int, wf client.WorkflowRun, event func(*gen.TraceEvent, []byte)) (gen.RunResult, error) {
	bg := context.WithoutCancel(ctx)
	type outcome struct {
		res gen.RunResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		var o outcome
		o.err = wf.Get(bg, &o.res)
		done <- o
	}()
	poll := e.Poll
	if poll <= 0 {
		poll = 50 * time.Millisecond
	}
	wctx, stopWaiting := context.WithCancel(bg)
	defer stopWaiting()
	moved := make(chan struct{}, 1)
	go e.waitEvents(wctx, wf.GetID(), seen, poll, moved)
	f := follower{store: e.Store, id: id, have: seen, event: event}
	cancelled := ctx.Done()
	for {
		select {
		case <-moved:
			if err := f.read(bg); err != nil {
				return failed(id, err)
			}
		case <-cancelled:
			cancelled = nil
			if !runner.CancelRequested(ctx) {
				msg := "the API server stopped following the run; it goes on in Temporal"
				return gen.RunResult{RunId: &id, ExitReason: gen.ExitReasonInterrupted, Error: &msg}, nil
			}
			if err := e.Client.CancelWorkflow(bg, wf.GetID(), ""); err != nil {
				return failed(id, fmt.Errorf("cancel the workflow: %w", err))
			}
		case o := <-done:
			if err := f.read(bg); err != nil {
				return failed(id, err)
			}
			if o.err != nil {
				return failed(id, fmt.Errorf("the workflow failed: %w", o.err))
			}
			o.res.RunId = &id
			return o.res, nil
		}
	}
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
	store *Store
	id    string
	have  int // the lines handed over, or that the caller has
	event func(*gen.TraceEvent, []byte)
}

// read hands over the lines added to the trace since the last read.
func (f *follower) read(ctx context.Context) error {
	lines, err := f.store.events(ctx, f.id, f.have)
	if err != nil {
		return err
	}
	for _, line := range lines {
		var ev gen.TraceEvent
		if err := json.Unmarshal(line, &ev); err != nil {
			return fmt.Errorf("line %d of the run's trace: %w", f.have+1, err)
		}
		f.have++
		f.event(&ev, line)
	}
	return nil
}

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
