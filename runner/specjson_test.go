package runner_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/runner"
)

// A spec crosses process boundaries (the Temporal workflow's input) as
// JSON: the request and the fields a request cannot say survive it, the
// in-process ones stay behind.
func TestSpecRoundTripsAsJSON(t *testing.T) {
	steps, check := 3, "go test ./..."
	in := runner.Spec{CreateRunRequest: gen.CreateRunRequest{Task: gen.Task{Prompt: "p"}, MaxSteps: &steps, Check: &check},
		ID: "run1", ApprovalTimeout: time.Minute, RecordRaw: true, Dir: "/somewhere", TracePath: "t.jsonl"}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out runner.Spec
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out.ID != "run1" || out.ApprovalTimeout != time.Minute || !out.RecordRaw || out.Task.Prompt != "p" ||
		out.MaxSteps == nil || *out.MaxSteps != 3 || out.CheckCommand() != check {
		t.Fatalf("after JSON: %+v", out)
	}
	if out.Dir != "" || out.TracePath != "" {
		t.Fatalf("in-process fields crossed: %+v", out)
	}
}
