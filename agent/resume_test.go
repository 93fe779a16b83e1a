package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
)

// A run paused every two steps and resumed from its State (through JSON,
// as an engine stores it) gives the result, the trace and the approver's
// questions of a run that never paused: steps, usage, feedback, the
// approval given for the rest of the run, the step budget's exit reason.
func TestPausedAndResumedRunIsTheSameRun(t *testing.T) {
	invalid := `{"type":"tool_call"}`
	for _, tc := range []struct {
		name      string
		responses []string
		max       int
	}{
		{name: "finished", responses: []string{callA, callB, invalid, turn(callC, callA), multiply, finish}, max: 10},
		{name: "budget spent on invalid output", responses: []string{callA, callB, invalid, callC, invalid}, max: 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := func(pause int) (gen.RunResult, []gen.TraceEvent, int, int) {
				var log eventLog
				asked := 0
				opts := agent.Options{RunID: "r", MaxSteps: tc.max, Tools: calculatorRuntime(t), Trace: &log, PauseAfter: pause,
					ApprovalPolicy: gen.ApprovalPolicyAlways,
					Approver: agent.ApproverFunc(func(context.Context, agent.ApprovalRequest) (agent.Approval, error) {
						asked++
						return agent.Approval{Decision: gen.ApprovalDecisionApproveForRun}, nil
					})}
				res, pauses, _ := runPausing(t, model.NewScript(tc.responses...), opts)
				for i := range log.events { // what differs between two runs
					log.events[i].Time = time.Time{}
					log.events[i].ModelDurationMs, log.events[i].ToolDurationMs, log.events[i].DurationMs = nil, nil, nil
				}
				return res, log.events, asked, pauses
			}
			wantRes, wantEvs, wantAsked, _ := run(0)
			gotRes, gotEvs, gotAsked, pauses := run(2)
			if pauses < 2 {
				t.Fatalf("the run paused %d times, want at least 2", pauses)
			}
			if diff := cmp.Diff(wantRes, gotRes); diff != "" {
				t.Errorf("RunResult differs (-whole +paused):\n%s", diff)
			}
			if diff := cmp.Diff(wantEvs, gotEvs); diff != "" {
				t.Errorf("trace differs (-whole +paused):\n%s", diff)
			}
			if gotAsked != wantAsked {
				t.Errorf("the approver was asked %d times, %d without pauses", gotAsked, wantAsked)
			}
		})
	}
}

// runPausing runs m to its end as a durable engine would: each time the
// run pauses (Options.PauseAfter), its State goes through JSON and the run
// resumes from it. It returns the last run's result, the number of
// pauses and the last run's error.
func runPausing(t *testing.T, m agent.Model, opts agent.Options) (gen.RunResult, int, error) {
	t.Helper()
	for pauses := 0; ; pauses++ {
		res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, m, opts)
		var p *agent.PausedError
		if !errors.As(err, &p) {
			return res, pauses, err
		}
		data, err := json.Marshal(p.State)
		if err != nil {
			t.Fatal(err)
		}
		var st agent.State
		if err := json.Unmarshal(data, &st); err != nil {
			t.Fatal(err)
		}
		opts.Resume = &st
	}
}
