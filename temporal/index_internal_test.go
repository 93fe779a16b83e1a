package temporal

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/specloop/specloop/runner"
)

// describeClient answers DescribeWorkflow with info (any other call is
// not expected: the embedded nil client panics).
type describeClient struct {
	client.Client
	info *workflowpb.WorkflowExecutionInfo
}

func (c describeClient) DescribeWorkflow(_ context.Context, workflowID, _ string) (*client.WorkflowExecutionDescription, error) {
	info := proto.Clone(c.info).(*workflowpb.WorkflowExecutionInfo)
	info.Execution = &commonpb.WorkflowExecution{WorkflowId: workflowID, RunId: "x"}
	return &client.WorkflowExecutionDescription{RawResponse: &workflowservice.DescribeWorkflowExecutionResponse{WorkflowExecutionInfo: info}}, nil
}

// Lookup finds only runs of the engine's own task queue and workflow, as
// List lists: a workflow of another deployment in the namespace (another
// task queue), or of another type under a run's workflow id, is no run of
// this engine, which would otherwise follow, decide and cancel it.
func TestLookupFindsOnlyTheEnginesRuns(t *testing.T) {
	t.Parallel()
	st, err := NewStore(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, typ, queue string
		found            bool
	}{
		{"ours", WorkflowName, "q", true},
		{"another task queue", WorkflowName, "other", false},
		{"another workflow", "SomethingElse", "q", false},
	} {
		info := &workflowpb.WorkflowExecutionInfo{Type: &commonpb.WorkflowType{Name: tc.typ}, TaskQueue: tc.queue,
			Status: enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING, StartTime: timestamppb.Now()}
		e := &Engine{Client: describeClient{info: info}, TaskQueue: "q", Store: st}
		_, err := e.Lookup(t.Context(), "r-lookedup")
		if tc.found && err != nil || !tc.found && !errors.Is(err, runner.ErrNoEngineRun) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}
