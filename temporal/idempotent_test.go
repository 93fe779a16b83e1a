package temporal_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"go.temporal.io/sdk/testsuite"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/temporal"
)

// A tool activity retried after its worker died (the same run and call
// sequence number, on another worker) returns the observation the first
// attempt recorded and does not apply the edit again.
func TestToolCallRetryDoesNotRepeatTheEdit(t *testing.T) {
	t.Parallel()
	store, err := temporal.NewStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	var call gen.ToolCall
	if err := json.Unmarshal([]byte(writeDone), &call); err != nil {
		t.Fatal(err)
	}
	in := temporal.ToolInput{Seq: 3, Call: call}
	in.Run = temporal.RunRef{RunID: "run1"}
	attempt := func() gen.Observation {
		t.Helper()
		var suite testsuite.WorkflowTestSuite
		env := suite.NewTestActivityEnvironment()
		// A fresh Activities value is a fresh worker.
		temporal.RegisterActivities(env, &temporal.Activities{Store: store, WorkspaceRoot: root, HostQueue: "h", Models: scriptModels, Setup: baseSetup()})
		v, err := env.ExecuteActivity(temporal.ToolActivity, in)
		if err != nil {
			t.Fatal(err)
		}
		var obs gen.Observation
		if err := v.Get(&obs); err != nil {
			t.Fatal(err)
		}
		return obs
	}
	first := attempt()
	if first.IsError {
		t.Fatalf("first attempt: %+v", first)
	}
	done := filepath.Join(root, "done.txt")
	if err := os.Remove(done); err != nil {
		t.Fatal(err)
	}
	second := attempt()
	if second.Content != first.Content || second.IsError != first.IsError {
		t.Fatalf("the retry observed %+v, the first attempt %+v", second, first)
	}
	if _, err := os.Stat(done); !os.IsNotExist(err) {
		t.Fatalf("the retry wrote the file again (%v)", err)
	}
	// Another call of the run is executed.
	in.Seq = 4
	attempt()
	if _, err := os.Stat(done); err != nil {
		t.Fatalf("the next call was not executed: %v", err)
	}
}
