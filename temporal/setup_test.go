package temporal_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/sandbox"
	"github.com/specloop/specloop/temporal"
)

const failingSetup = "echo the mirror is down >&2; exit 3"

// A setup that fails ends the run alike on both engines: setup_failed, no
// model call, the setup's result in the RunResult, and a trace that ends
// with run_finished.
func TestEnginesEndAFailedSetupAlike(t *testing.T) {
	t.Parallel()
	in := scriptInput([]string{finish}, "", 0)
	in.Setup = new(failingSetup)
	want := runOn(t, runner.Config{AllowCommands: true, Sandbox: sandbox.Policy{Backend: sandbox.None}}, in.CreateRunRequest)
	h := newHarness(t)
	got, evs := h.run(t, in)
	if got.ExitReason != gen.ExitReasonSetupFailed || got.StepsUsed != 0 || got.Setup == nil || got.Setup.ExitCode != 3 || got.Setup.OutputTail == nil || *got.Setup.OutputTail != "the mirror is down\n" {
		t.Fatalf("temporal: %+v (setup %+v)", got, got.Setup)
	}
	got.RunId = nil
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("RunResult differs (-embedded +temporal):\n%s", diff)
	}
	if len(evs) != 1 || evs[0].EventType != gen.TraceEventTypeRunFinished || evs[0].ExitReason == nil || *evs[0].ExitReason != gen.ExitReasonSetupFailed {
		t.Errorf("trace %+v", evs)
	}
}

// A setup that passed is part of the workflow's state: it runs once, in
// the run's workspace, and not again on a new worker that goes on with
// the run (a fresh Activities value for each execution after a
// continue-as-new, as after a worker restart).
func TestSetupIsNotRepeated(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	in := scriptInput([]string{multiply, multiply, multiply, writeDone, finish}, "", 0)
	in.Setup = new("echo ran >> setup.log")
	in.ContinueAsNewSteps = 2
	executions, in := h.runContinued(t, in, true) // a new worker for each
	res, _ := h.result(t, in)
	if executions < 2 || res.ExitReason != gen.ExitReasonFinished || res.Setup == nil || !res.Setup.Passed {
		t.Fatalf("%d executions: %+v (setup %+v)", executions, res, res.Setup)
	}
	if data, err := os.ReadFile(filepath.Join(h.root, "setup.log")); err != nil || string(data) != "ran\n" {
		t.Fatalf("the setup's log: %q, %v; want it run once", data, err)
	}
}

// TestSetupRanOnceAcrossOpenAttempts: an attempt of the Open activity
// after one that ran the setup (its worker crashed before the workflow
// heard back, or the attempt timed out) finds the setup's record in the
// store and returns it, without running the command again.
func TestSetupRanOnceAcrossOpenAttempts(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	in := scriptInput([]string{finish}, "", 0)
	in.Setup = new("echo ran >> setup.log")
	for attempt := range 2 {
		h.env.ExecuteWorkflow(temporal.WorkflowName, in)
		res, _ := h.result(t, in)
		if res.Setup == nil || !res.Setup.Passed {
			t.Fatalf("attempt %d: setup %+v", attempt, res.Setup)
		}
		h.acts = nil // a new worker, on the same store
		h.newEnv()
	}
	if data, err := os.ReadFile(filepath.Join(h.root, "setup.log")); err != nil || string(data) != "ran\n" {
		t.Fatalf("the setup's log: %q, %v; want it run once", data, err)
	}
}
