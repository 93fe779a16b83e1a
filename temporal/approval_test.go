package temporal_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/temporal"
)

// An approval wait is a durable wait on a signal: a decision that comes
// two days later resumes the run, which then gives the result and the
// trace the in-process engine gives with the same decision; without a
// decision the call is denied when the timeout runs out.
func TestApprovalWaitsForTheSignal(t *testing.T) {
	t.Parallel()
	const timeout = 72 * time.Hour
	approve := agent.Approval{Decision: gen.ApprovalDecisionApprove, Reason: "looks fine"}
	timedOut := agent.Approval{Decision: gen.ApprovalDecisionDeny, Reason: agent.TimeoutReason(timeout)}
	for _, tc := range []struct {
		name     string
		signal   *agent.Approval // sent after two days; nil: none
		decision agent.Approval  // what the in-process approver decides
	}{
		{name: "approved after two days", signal: &approve, decision: approve},
		{name: "no decision: denied at the timeout", decision: timedOut},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			responses := []string{writeDone, readDone, finish}
			wantRes, wantEvs := embeddedApproved(t, responses, tc.decision)

			h := newHarness(t)
			in := scriptInput(responses, "", 0)
			in.ApprovalPolicy, in.ApprovalTimeout = ptr(gen.ApprovalPolicyWrites), timeout
			if tc.signal != nil {
				h.env.RegisterDelayedCallback(func() {
					// A stale decision on another call is ignored.
					h.env.SignalWorkflow(temporal.ApprovalSignal, temporal.ApprovalDecision{CallID: "other", Approval: timedOut})
					h.env.SignalWorkflow(temporal.ApprovalSignal, temporal.ApprovalDecision{CallID: "w1", Approval: *tc.signal})
				}, 48*time.Hour)
			}
			gotRes, gotEvs := h.run(t, in)
			decided := 0
			for _, ev := range gotEvs {
				if ev.EventType == gen.TraceEventTypeApprovalDecided {
					decided++
				}
			}
			if decided != 1 {
				t.Fatalf("%d approval_decided events, want 1", decided)
			}
			sameRun(t, "temporal", wantRes, gotRes, wantEvs, gotEvs)
		})
	}
}

// embeddedApproved runs a script in-process under the writes policy with
// an approver that decides d at once.
func embeddedApproved(t *testing.T, responses []string, d agent.Approval) (gen.RunResult, []gen.TraceEvent) {
	t.Helper()
	var buf bytes.Buffer
	sp := scriptInput(responses, "", 0).Spec
	sp.ApprovalPolicy = ptr(gen.ApprovalPolicyWrites)
	host := baseSetup()
	host.Dir, host.TraceWriter = t.TempDir(), &buf
	sp.Approver = agent.ApproverFunc(func(context.Context, agent.ApprovalRequest) (agent.Approval, error) { return d, nil })
	s, err := runner.Open(context.Background(), &sp, host)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, _ := agent.Run(context.Background(), gen.Task{Prompt: "multiply"}, model.NewScript(responses...), s.Options)
	return res, readEvents(t, buf.Bytes())
}

// While a run waits for approval, PendingQuery answers the call with its
// full arguments (which the trace never holds), and nil once decided.
func TestPendingQueryListsTheWaitingCall(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	in := scriptInput([]string{writeDone, finish}, "", 0)
	in.ApprovalPolicy, in.ApprovalTimeout = ptr(gen.ApprovalPolicyWrites), 72*time.Hour
	pending := func() *runner.EnginePendingCall {
		v, err := h.env.QueryWorkflow(temporal.PendingQuery)
		if err != nil {
			t.Fatalf("query: %v", err)
		}
		var p *runner.EnginePendingCall
		if err := v.Get(&p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var waiting, after *runner.EnginePendingCall
	var asked time.Time
	h.env.RegisterDelayedCallback(func() {
		waiting, asked = pending(), h.env.Now()
		h.env.SignalWorkflow(temporal.ApprovalSignal, temporal.ApprovalDecision{CallID: "w1", Approval: agent.Approval{Decision: gen.ApprovalDecisionApprove}})
	}, time.Hour)
	h.env.RegisterDelayedCallback(func() { after = pending() }, 2*time.Hour)
	res, _ := h.run(t, in)
	if res.ExitReason != gen.ExitReasonFinished {
		t.Fatalf("run: %+v", res)
	}
	want := map[string]any{"path": "done.txt", "content": "ok\n"}
	if waiting == nil || waiting.Call.CallId == nil || *waiting.Call.CallId != "w1" || waiting.Call.ToolName != "write_file" || !cmp.Equal(waiting.Call.Arguments, want) {
		t.Fatalf("the waiting call is %+v, want w1 with %v", waiting, want)
	}
	// Asked an hour into the wait of 72 hours (simulated time): 71 hours
	// left, less the moments the workflow took before its wait.
	if left := waiting.Expires.Sub(asked); left <= 70*time.Hour || left > 71*time.Hour {
		t.Fatalf("the wait expires %v after the question, want 71h", left)
	}
	if after != nil {
		t.Fatalf("after the decision the query answers %+v", after)
	}
}

func ptr[T any](v T) *T { return &v }
