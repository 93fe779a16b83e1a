package runner_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/runner"
)

// A spec crosses process boundaries (the Temporal workflow's input) as
// JSON: the request, the fields a request cannot say and the specs of the
// runs a follow-up continues survive it; the in-process ones (and where a
// continued run's transcript is) stay behind.
func TestSpecRoundTripsAsJSON(t *testing.T) {
	t.Parallel()
	steps, check := 3, "go test ./..."
	in := runner.Spec{CreateRunRequest: gen.CreateRunRequest{Task: gen.Task{Prompt: "p"}, MaxSteps: &steps, Check: &check},
		ID: "run1", ApprovalTimeout: time.Minute, RecordRaw: true, System: "the server's prompt", Observer: func(agent.Progress) {},
		Conversation: []runner.Turn{{Transcript: "/somewhere/run0.jsonl", Spec: runner.Spec{ID: "run0"}}}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out runner.Spec
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out.ID != "run1" || out.ApprovalTimeout != time.Minute || !out.RecordRaw || out.System != "the server's prompt" || out.Task.Prompt != "p" ||
		out.MaxSteps == nil || *out.MaxSteps != 3 || out.CheckCommand() != check {
		t.Fatalf("after JSON: %+v", out)
	}
	if len(out.Conversation) != 1 || out.Conversation[0].Spec.ID != "run0" {
		t.Fatalf("the conversation after JSON: %+v", out.Conversation)
	}
	if out.Observer != nil || out.Conversation[0].Transcript != "" {
		t.Fatalf("in-process fields crossed: %+v", out)
	}
}
