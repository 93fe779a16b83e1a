package temporal_test

import (
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"

	"github.com/specloop/specloop/temporal"
)

// TestEventsUpdateSaysWhenTheTraceMoved: an API server follows a run by
// the workflow's events update, which returns once the store has more
// trace lines than the caller has (never before), and at the end of the
// execution with all of them, so the API server reads the store only
// when there is something new.
func TestEventsUpdateSaysWhenTheTraceMoved(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	in := scriptInput([]string{multiply, finish}, "", 0)
	type answer struct {
		asked, got int
		err        error
	}
	var answers []answer
	ask := func(have int) {
		h.env.UpdateWorkflow(temporal.EventsUpdate, "", &testsuite.TestUpdateCallback{
			OnAccept: func() {},
			OnReject: func(err error) { answers = append(answers, answer{have, 0, err}) },
			OnComplete: func(v any, err error) {
				n, _ := v.(int)
				answers = append(answers, answer{have, n, err})
			},
		}, have)
	}
	// Asked before the first activity wrote anything, and once more with
	// a count no execution reaches: the first returns with the first
	// batch, the second at the end of the execution.
	h.env.RegisterDelayedCallback(func() { ask(0); ask(1000) }, time.Millisecond)
	_, events := h.run(t, in)
	if len(answers) != 2 {
		t.Fatalf("answers %+v, want 2", answers)
	}
	for _, a := range answers {
		if a.err != nil {
			t.Fatalf("the update after %d failed: %v", a.asked, a.err)
		}
	}
	if a := answers[0]; a.asked != 0 || a.got <= 0 || a.got > len(events) {
		t.Errorf("the update after 0 returned %d of %d lines", a.got, len(events))
	}
	if a := answers[1]; a.asked != 1000 || a.got != len(events) {
		t.Errorf("the update after 1000 returned %d, want all %d lines at the end", a.got, len(events))
	}
}
