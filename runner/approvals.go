package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
)

// Approvals: a run created with an approval_policy pauses before each tool
// call the policy covers. The loop traces approval_requested (the call's
// tool name, id and argument keys), the run's status turns
// waiting_for_approval, and the call, with its full arguments, is listed by
// Runner.Approvals (GET /v1/runs/{id}/approvals) until someone decides it
// with Runner.Decide (POST /v1/runs/{id}/approvals/{call_id}), or its time (approval_timeout_seconds,
// else Config.ApprovalTimeout) runs out and it is denied with reason
// timeout. Waits are held in memory: a server that stops while a run waits
// ends that run interrupted.

// approvalGate is an in-flight run's agent.Approver: the call waiting for
// a decision, if any, and the ids of the calls already decided.
type approvalGate struct {
	s       *Runner
	r       *run
	timeout time.Duration

	mu      sync.Mutex
	pending *pendingCall    // the loop asks about one call at a time
	decided map[string]bool // call ids decided or timed out
}

// pendingCall is a call waiting for a decision, as the list shows it
// (what its pointers point to never changes: a new expiry is a new
// pointer). done is closed once it is decided (answer is then set) or no
// longer waits.
type pendingCall struct {
	gen.PendingApproval
	answer *agent.Approval
	done   chan struct{}
}

func newApprovalGate(s *Runner, r *run, timeout time.Duration) *approvalGate {
	return &approvalGate{s: s, r: r, timeout: timeout, decided: map[string]bool{}}
}

// requested registers the call of an approval_requested event before the
// event reaches any stream, so that a client that saw the event finds the
// call in the list. The wait expires at expires, or when zero after the
// gate's timeout.
func (g *approvalGate) requested(step int, call *gen.ToolCall, reason string, expires time.Time) {
	now := time.Now().UTC()
	if expires.IsZero() {
		expires = now.Add(g.timeout)
	}
	// The arguments are the loop's copy for the request, which nothing
	// changes.
	p := &pendingCall{PendingApproval: gen.PendingApproval{CallId: *call.CallId, ToolName: call.ToolName, Arguments: call.Arguments,
		Step: step, RequestedAt: now, ExpiresAt: ptr(expires.UTC())}, done: make(chan struct{})}
	if reason != "" {
		p.Reason = &reason
	}
	g.mu.Lock()
	g.pending = p
	g.mu.Unlock()
	g.setStatus(gen.RunStatusRunning, gen.RunStatusWaitingForApproval)
}

// Approve waits for a decision on req's call.
func (g *approvalGate) Approve(ctx context.Context, req agent.ApprovalRequest) (agent.Approval, error) {
	id := *req.Call.CallId
	g.mu.Lock()
	p := g.pending
	if p == nil || p.CallId != id {
		if g.decided[id] {
			// An engine's call settled before this wait began
			// (forwardApproval's goroutine ran after its approval_decided).
			g.mu.Unlock()
			return agent.Approval{}, errSettled
		}
		// The run traces nothing (it always does on a server) or the
		// event did not reach the observer: register the call now.
		g.mu.Unlock()
		g.requested(req.Step, &req.Call, req.Reason, time.Time{})
		g.mu.Lock()
		p = g.pending
	}
	if d, ok := ctx.Deadline(); ok {
		p.ExpiresAt = ptr(d.UTC())
	}
	g.mu.Unlock()
	var answer *agent.Approval
	select {
	case <-p.done:
	case <-ctx.Done():
	}
	g.mu.Lock()
	answer = p.answer
	if g.pending == p {
		g.pending = nil
	}
	g.decided[id] = true
	g.mu.Unlock()
	g.setStatus(gen.RunStatusWaitingForApproval, gen.RunStatusRunning)
	if answer != nil {
		return *answer, nil
	}
	if ctx.Err() == nil {
		return agent.Approval{}, errSettled
	}
	if errors.Is(context.Cause(ctx), errShuttingDown) {
		return agent.Approval{}, fmt.Errorf("%w: the server stopped while a tool call waited for approval", agent.ErrInterrupted)
	}
	return agent.Approval{}, context.Cause(ctx)
}

// errSettled is Approve's error for a call decided elsewhere (settled).
var errSettled = errors.New("the tool call was decided elsewhere")

// settled ends the wait for call id of an engine's run, which the engine
// decided without this gate (its timer, or a decision another runner
// handed it): the call is no longer listed and the run is running again.
func (g *approvalGate) settled(id string) {
	g.mu.Lock()
	p := g.pending
	if p == nil || p.CallId != id || p.answer != nil {
		g.mu.Unlock()
		return
	}
	g.pending = nil
	g.decided[id] = true
	close(p.done)
	g.mu.Unlock()
	g.setStatus(gen.RunStatusWaitingForApproval, gen.RunStatusRunning)
}

// setStatus moves the run from status from to status to.
func (g *approvalGate) setStatus(from, to gen.RunStatus) {
	g.s.runs.mu.Lock()
	if g.r.status == from {
		g.r.status = to
	}
	g.s.runs.mu.Unlock()
}

// list returns the pending calls.
func (g *approvalGate) list() []gen.PendingApproval {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := []gen.PendingApproval{}
	if p := g.pending; p != nil && p.answer == nil {
		out = append(out, p.PendingApproval)
	}
	return out
}

// Problems of a decision.
var (
	errNoPendingCall  = &Error{Kind: NotFound, Detail: "the run has no tool call waiting for approval with this id"}
	errAlreadyDecided = &Error{Kind: Conflict, Detail: "the tool call was already decided or timed out"}
	errRunFinished    = &Error{Kind: Conflict, Detail: "the run has already finished"}
)

// decide answers the pending call id.
func (g *approvalGate) decide(id string, a agent.Approval) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	p := g.pending
	switch {
	case p != nil && p.CallId == id && p.answer == nil:
		p.answer = &a
		close(p.done)
		return nil
	case g.decided[id] || p != nil && p.CallId == id:
		return errAlreadyDecided
	}
	return errNoPendingCall
}

// gateOf returns the run's approval gate, nil when its policy asks no
// one (inFlight's errors).
func (s *Runner) gateOf(id string) (*approvalGate, error) {
	_, j, _, err := s.inFlight(id)
	if err != nil {
		return nil, err
	}
	return j.gate, nil
}

// Approvals returns run id's tool calls waiting for a decision, with
// their arguments: none for a finished run or one whose policy asks no one.
func (s *Runner) Approvals(id string) ([]gen.PendingApproval, error) {
	g, err := s.gateOf(id)
	if errors.Is(err, errRunFinished) || err == nil && g == nil {
		return []gen.PendingApproval{}, nil
	}
	if err != nil {
		return nil, err
	}
	return g.list(), nil
}

// Decide approves or denies run id's pending call callID and returns the
// run.
func (s *Runner) Decide(id, callID string, a agent.Approval) (gen.Run, error) {
	g, err := s.gateOf(id)
	if err != nil {
		return gen.Run{}, err
	}
	if g == nil {
		return gen.Run{}, errNoPendingCall
	}
	if err := g.decide(callID, a); err != nil {
		return gen.Run{}, err
	}
	g.setStatus(gen.RunStatusWaitingForApproval, gen.RunStatusRunning)
	v, _ := s.runs.get(id)
	return v, nil
}
