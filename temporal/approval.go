package temporal

import (
	"context"

	"go.temporal.io/sdk/workflow"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/runner"
)

// approvalSignal is the signal that carries a person's decision on a tool
// call of a run waiting for approval (an approvalDecision).
const approvalSignal = "specloop.approval"

// pendingQuery is the workflow query that returns the tool call the run
// waits on for approval, with its arguments and when the wait times out
// (a *runner.EnginePendingCall), nil when it waits for none.
const pendingQuery = "specloop.pending"

// approvalDecision is the payload of approvalSignal: the decision on the
// call with id CallID.
type approvalDecision struct {
	CallID   string
	Approval agent.Approval
}

// wfApprover is the run's agent.Approver inside the workflow: a durable
// wait for approvalSignal, with a durable timer for the timeout. The wait
// is workflow state, so it survives every worker and server restart, for
// as long as the timeout allows.
type wfApprover wfRun

func (a *wfApprover) Approve(_ context.Context, req agent.ApprovalRequest) (agent.Approval, error) {
	r := (*wfRun)(a)
	timeout := r.in.ApprovalTimeout
	if timeout <= 0 {
		timeout = agent.DefaultApprovalTimeout
	}
	// The call is answered by pendingQuery from before its events are
	// written, so that whoever sees them can list it.
	r.waiting = &runner.EnginePendingCall{Call: req.Call, Expires: workflow.Now(r.wctx).Add(timeout)}
	defer func() { r.waiting = nil }()
	// The request's events are written before the wait, so that whoever
	// decides sees them.
	if err := r.exec(r.shared, eventsActivity, &runEvents{}, nil); err != nil {
		return agent.Approval{}, activityError(err)
	}
	r.waiting.Expires = workflow.Now(r.wctx).Add(timeout) // when the timer fires
	r.setStatus(gen.RunStatusWaitingForApproval)
	defer r.setStatus(gen.RunStatusRunning)
	tctx, cancelTimer := workflow.WithCancel(r.wctx)
	defer cancelTimer()
	timer := workflow.NewTimer(tctx, timeout)
	signals := workflow.GetSignalChannel(r.wctx, approvalSignal)
	var (
		got      *agent.Approval
		timedOut bool
	)
	sel := workflow.NewSelector(r.wctx)
	sel.AddFuture(timer, func(workflow.Future) { timedOut = true })
	sel.AddReceive(signals, func(c workflow.ReceiveChannel, _ bool) {
		var d approvalDecision
		c.Receive(r.wctx, &d)
		// A decision on another call (one that timed out before) is
		// dropped.
		if d.CallID == *req.Call.CallId {
			got = &d.Approval
		}
	})
	for got == nil && !timedOut {
		sel.Select(r.wctx)
		if err := r.wctx.Err(); err != nil {
			return agent.Approval{}, context.Canceled
		}
	}
	if got != nil {
		return *got, nil
	}
	return agent.Approval{Decision: gen.ApprovalDecisionDeny, Reason: agent.TimeoutReason(timeout)}, nil
}
