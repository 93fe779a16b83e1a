package temporal_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/temporal"
)

// noCommands makes h's worker one started without --allow-commands.
func noCommands(h *harness) *harness {
	h.acts.Setup.DisableCommands = true
	return h
}

// The attack: an API server with --allow-commands accepts a run with a
// completion check or a setup command, and the run lands on a worker
// started without it. The worker runs no command of the run: the run ends
// before the model's first call with an error naming the worker's missing
// flag, and the command's marker never appears in the workspace.
func TestWorkerWithoutCommandsRunsNoCommandOfARun(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, check, setup string
		reason             gen.ExitReason
	}{
		{name: "check", check: "touch marker", reason: gen.ExitReasonInternalError},
		{name: "setup", setup: "touch marker", reason: gen.ExitReasonSetupFailed},
		{name: "setup and check", setup: "touch marker", check: "touch marker2", reason: gen.ExitReasonSetupFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := noCommands(newHarness(t))
			in := scriptInput([]string{finish}, tc.check, 0)
			if tc.setup != "" {
				in.Setup = &tc.setup
			}
			res, evs := h.run(t, in)
			for _, m := range []string{"marker", "marker2"} {
				if _, err := os.Stat(filepath.Join(h.root, m)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s: the run's command ran on a worker without --allow-commands (%v)", m, err)
				}
			}
			if res.ExitReason != tc.reason || res.StepsUsed != 0 || res.Error == nil || !strings.Contains(*res.Error, "--allow-commands") {
				t.Fatalf("result %+v (error %q), want %s before any step, naming --allow-commands", res, ptrText(res.Error), tc.reason)
			}
			t.Logf("%s: %s", res.ExitReason, *res.Error)
			if res.Setup != nil {
				t.Errorf("a refused setup has a result: %+v", res.Setup)
			}
			if n := len(evs); n == 0 || evs[n-1].EventType != gen.TraceEventTypeRunFinished {
				t.Errorf("the trace does not end with run_finished: %+v", evs)
			}
		})
	}
}

// A run opened by a worker that allows commands and continued by one that
// does not (a worker restarted without the flag, a continue-as-new picked
// up by another) does not run its check there either: the check ends the
// run with an error naming the flag.
func TestContinuedRunChecksOnlyWhereCommandsAreAllowed(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	in := scriptInput([]string{multiply, multiply, multiply, finish}, "touch marker", 0)
	in.ContinueAsNewSteps = 2
	h.env.ExecuteWorkflow(temporal.WorkflowName, in)
	next, ok := h.next(t)
	if !ok {
		t.Fatalf("the first execution did not continue as new: %v", h.env.GetWorkflowError())
	}
	h.acts = nil // a new worker, without --allow-commands
	h.newEnv()
	noCommands(h)
	h.env.ExecuteWorkflow(temporal.WorkflowName, next)
	res, _ := h.result(t, next)
	if _, err := os.Stat(filepath.Join(h.root, "marker")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the check ran on a worker without --allow-commands (%v)", err)
	}
	if res.ExitReason != gen.ExitReasonInternalError || res.Error == nil || !strings.Contains(*res.Error, "--allow-commands") {
		t.Fatalf("result %+v (error %q), want internal_error naming --allow-commands", res, ptrText(res.Error))
	}
	t.Logf("%s: %s", res.ExitReason, *res.Error)
}
