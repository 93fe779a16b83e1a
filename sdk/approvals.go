package sdk

import (
	"context"
	"fmt"
	"iter"
	"net/http"

	"github.com/specloop/specloop/gen"
)

// Approve runs the run's tool call callID, which waits for approval (a run
// created with an ApprovalPolicy). reason is optional. A call already
// decided, or timed out, is an error matching ErrConflict; a call the run
// never asked about, ErrNotFound.
func (c *Client) Approve(ctx context.Context, runID, callID, reason string) (gen.Run, error) {
	return c.decide(ctx, runID, callID, gen.ApprovalDecisionApprove, reason)
}

// ApproveForRun runs the call and, without asking, every later call of the
// same tool in the run.
func (c *Client) ApproveForRun(ctx context.Context, runID, callID, reason string) (gen.Run, error) {
	return c.decide(ctx, runID, callID, gen.ApprovalDecisionApproveForRun, reason)
}

// Deny refuses the call: the model gets an error observation of code
// denied carrying reason, and the run goes on.
func (c *Client) Deny(ctx context.Context, runID, callID, reason string) (gen.Run, error) {
	return c.decide(ctx, runID, callID, gen.ApprovalDecisionDeny, reason)
}

func (c *Client) decide(ctx context.Context, runID, callID string, d gen.ApprovalDecision, reason string) (gen.Run, error) {
	body := gen.ApprovalDecisionRequest{Decision: d}
	if reason != "" {
		body.Reason = &reason
	}
	resp, err := c.raw.DecideApproval(ctx, runID, callID, body)
	return decode[gen.Run](string(d), http.StatusOK, resp, err)
}

// PendingApprovals returns the run's tool calls waiting for a decision now,
// with their full arguments.
func (c *Client) PendingApprovals(ctx context.Context, runID string) ([]gen.PendingApproval, error) {
	resp, err := c.raw.ListApprovals(ctx, runID)
	list, err := decode[gen.ApprovalList]("list approvals", http.StatusOK, resp, err)
	return list.Approvals, err
}

// Approvals iterates over the run's requests for approval as they come,
// each with the call's full arguments, until the run finishes. It follows
// the run's events from the start (so it also yields a call that was
// already waiting) and, at each approval_requested, reads the pending
// calls, which the trace does not hold; a call decided before it was read
// is skipped. Decide each with Approve, ApproveForRun or Deny: the run
// waits, and asks nothing more, until then. An error ends the iteration.
func (c *Client) Approvals(ctx context.Context, runID string) iter.Seq2[gen.PendingApproval, error] {
	return func(yield func(gen.PendingApproval, error) bool) {
		seen := map[string]bool{}
		for ev, err := range c.Events(ctx, runID, 0) {
			if err != nil {
				yield(gen.PendingApproval{}, err)
				return
			}
			if ev.EventType != gen.TraceEventTypeApprovalRequested {
				continue
			}
			pending, err := c.PendingApprovals(ctx, runID)
			if err != nil {
				yield(gen.PendingApproval{}, err)
				return
			}
			for _, p := range pending {
				key := fmt.Sprint(p.Step, "/", p.CallId)
				if seen[key] {
					continue
				}
				seen[key] = true
				if !yield(p, nil) {
					return
				}
			}
		}
	}
}
