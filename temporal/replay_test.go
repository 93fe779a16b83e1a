package temporal_test

import (
	"log/slog"
	"testing"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/specloop/specloop/temporal"
)

// The workflow replays the history a real server recorded for a run of
// three tool calls and a finish (temporal/itest, go test -update): a
// change to the loop's control flow (which activities run, in which order)
// that is not behind workflow.GetVersion fails here, as it would fail the
// runs in flight when a worker is upgraded.
func TestReplayRecordedHistory(t *testing.T) {
	t.Parallel()
	r := worker.NewWorkflowReplayer()
	r.RegisterWorkflowWithOptions(temporal.RunWorkflow, workflow.RegisterOptions{Name: temporal.WorkflowName})
	logger := log.NewStructuredLogger(slog.New(slog.DiscardHandler))
	if err := r.ReplayWorkflowHistoryFromJSONFile(logger, "testdata/history.json"); err != nil {
		t.Fatalf("the recorded run does not replay: %v", err)
	}
}
