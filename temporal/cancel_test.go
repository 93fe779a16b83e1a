package temporal_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"go.temporal.io/sdk/testsuite"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/temporal"
)

// Cancelling the workflow cancels the run: the model call in flight ends,
// the run ends cancelled, and the trace and the patch are still written.
func TestCancelWorkflowCancelsTheRun(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	calls := 0
	acts := &temporal.Activities{Store: h.store, WorkspaceRoot: h.root, HostQueue: "host-a", Setup: baseSetup(),
		Models: func(cfg gen.ModelConfig) (agent.Model, error) {
			calls++
			if calls == 3 {
				// The second model call (after the Open activity's and
				// the first call's) finds the workflow cancelled.
				h.env.CancelWorkflow()
				return blocking{}, nil
			}
			return scriptModels(cfg)
		}}
	var suite testsuite.WorkflowTestSuite
	h.env = testEnv(&suite)
	h.env.SetDataConverter(h.store.DataConverter(0))
	temporal.Register(h.env, acts)
	res, evs := h.run(t, scriptInput([]string{writeDone, finish}, "", 0))
	if res.ExitReason != gen.ExitReasonCancelled {
		t.Fatalf("exit reason %s, want cancelled (%+v)", res.ExitReason, res)
	}
	if res.Patch == nil {
		t.Fatal("a cancelled run has no patch; its edits were made")
	}
	if last := evs[len(evs)-1]; last.EventType != gen.TraceEventTypeRunFinished || *last.ExitReason != gen.ExitReasonCancelled {
		t.Fatalf("the trace ends with %+v", last)
	}
	if _, err := os.Stat(filepath.Join(h.root, "done.txt")); err != nil {
		t.Fatalf("the edit before the cancellation: %v", err)
	}
}

// blocking is a model whose call lasts until it is cancelled.
type blocking struct{}

func (blocking) Next(ctx context.Context, req *agent.Request) (agent.Turn, error) {
	<-ctx.Done()
	return agent.Turn{}, ctx.Err()
}
