package runner

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
)

// An engine's call decided without the gate (its timer, another runner's
// decision) before the goroutine that hands the gate's decision to the
// engine asked the gate about it (forwardApproval): the gate does not list
// it again, the run stays running, and the wait ends at once as settled.
func TestASettledCallIsNotRequestedAgain(t *testing.T) {
	t.Parallel()
	s := &Runner{runs: newRegistry()}
	r := &run{id: "r-settled", status: gen.RunStatusRunning}
	s.runs.add(r)
	g := newApprovalGate(s, r, time.Minute)
	id := "c1"
	call := gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: "run_command", CallId: &id}
	g.requested(1, &call, "", time.Time{})
	g.settled(id)
	// Done already: without the fix the wait registers the call again and
	// then ends by the context, not as settled.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := g.Approve(ctx, agent.ApprovalRequest{RunID: r.id, Step: 1, Call: call})
	if !errors.Is(err, errSettled) {
		t.Fatalf("Approve: %v, want errSettled", err)
	}
	if r.status != gen.RunStatusRunning || len(g.list()) != 0 {
		t.Fatalf("status %s, listed %v", r.status, g.list())
	}
}
