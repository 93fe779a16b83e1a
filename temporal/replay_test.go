package temporal_test

import (
	"log/slog"
	"path/filepath"
	"testing"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/specloop/specloop/temporal"
)

// The workflow replays the histories real servers recorded for a run of
// three tool calls and a finish (temporal/itest, go test -update
// -history FILE), each by the workflow of its time: history.json before
// the one run index, history-runindex.json with its search attributes and
// the patch's kept baseline. A change to the loop's control flow (which
// activities run, in which order) that is not behind workflow.GetVersion
// fails here, as it would fail the runs in flight when a worker is
// upgraded.
func TestReplayRecordedHistory(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/history*.json")
	if err != nil || len(files) < 2 {
		t.Fatalf("recorded histories %v (%v), want at least two", files, err)
	}
	for _, file := range files {
		r := worker.NewWorkflowReplayer()
		r.RegisterWorkflowWithOptions(temporal.RunWorkflow, workflow.RegisterOptions{Name: temporal.WorkflowName})
		logger := log.NewStructuredLogger(slog.New(slog.DiscardHandler))
		if err := r.ReplayWorkflowHistoryFromJSONFile(logger, file); err != nil {
			t.Errorf("the run recorded in %s does not replay: %v", file, err)
		}
	}
}
