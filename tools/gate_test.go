package tools_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
	"github.com/specloop/specloop/tools"
	"github.com/specloop/specloop/trace"
)

const (
	finishAction = `{"type":"finish","answer":"done"}`
	writeDone    = `{"type":"tool_call","tool_name":"write_file","arguments":{"path":"done.txt","content":"ok\n"}}`
	// gateCheck fails, with a message on stderr, until done.txt exists.
	gateCheck = `test -f done.txt || { echo "done.txt is missing" >&2; exit 7; }`
)

// The completion gate: a finish is a request the check must confirm.
func TestCompletionGate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		script   []string
		maxSteps int
		reason   gen.ExitReason
		steps    int
		events   []gen.TraceEventType
		passed   bool
	}{
		{
			name:   "pass",
			script: []string{writeDone, finishAction},
			reason: gen.ExitReasonFinished, steps: 2, passed: true,
			events: []gen.TraceEventType{"run_started", "model_action", "observation", "model_action", "run_finished"},
		},
		{
			name:   "fail then fix",
			script: []string{finishAction, writeDone, finishAction},
			reason: gen.ExitReasonFinished, steps: 3, passed: true,
			events: []gen.TraceEventType{"run_started", "model_action", "finish_rejected", "model_action", "observation", "model_action", "run_finished"},
		},
		{
			name:   "fail to the end",
			script: []string{finishAction, finishAction}, maxSteps: 2,
			reason: gen.ExitReasonCheckFailed, steps: 2, passed: false,
			events: []gen.TraceEventType{"run_started", "model_action", "finish_rejected", "model_action", "finish_rejected", "run_finished"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			ws := mustWorkspace(t, dir)
			rt, err := tools.New(tools.Config{Workspace: ws})
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			m := model.NewScript(tt.script...)
			res, err := agent.Run(context.Background(), gen.Task{Prompt: "create done.txt"}, m, agent.Options{
				MaxSteps: tt.maxSteps,
				Tools:    rt,
				Check:    tools.NewCommandCheck(ws, gateCheck),
				Trace:    trace.NewWriter(&buf, trace.SyncNone),
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitReason != tt.reason || res.StepsUsed != tt.steps {
				t.Fatalf("result %s after %d steps, want %s after %d (%v)", res.ExitReason, res.StepsUsed, tt.reason, tt.steps, deref(res.Error))
			}
			if res.Check == nil || res.Check.Passed != tt.passed {
				t.Fatalf("check %+v", res.Check)
			}
			if !tt.passed && (res.Check.ExitCode != 7 || !strings.Contains(deref(res.Check.OutputTail), "done.txt is missing")) {
				t.Fatalf("failed check %+v", res.Check)
			}
			log, err := trace.Read(&buf)
			if err != nil {
				t.Fatal(err)
			}
			var types []gen.TraceEventType
			for _, ev := range log.Events {
				types = append(types, ev.EventType)
				if ev.EventType == gen.TraceEventTypeFinishRejected && (ev.ExitCode == nil || *ev.ExitCode != 7) {
					t.Errorf("finish_rejected without the check's exit code: %+v", ev)
				}
			}
			if diff := cmp.Diff(tt.events, types); diff != "" {
				t.Fatalf("trace events (-want +got):\n%s", diff)
			}
			if last := log.Events[len(log.Events)-1]; last.ExitReason == nil || *last.ExitReason != tt.reason {
				t.Fatalf("run_finished %+v", last)
			}
			// After a rejection the model is told why: the exit code and the
			// check's output.
			calls := m.Calls()
			if len(tt.script) > 1 && tt.script[0] == finishAction {
				h := calls[1].History
				fb := h.At(h.Len() - 1).Feedback
				if fb == nil || fb.Kind != gen.FeedbackKindFinishRejected || !strings.Contains(fb.Message, "exit code 7") || !strings.Contains(fb.Message, "done.txt is missing") {
					t.Fatalf("feedback after a rejected finish: %+v", h.At(h.Len()-1))
				}
			}
			if tt.passed {
				if res.Patch == nil || !strings.Contains(*res.Patch, "+++ b/done.txt") {
					t.Fatalf("patch %v", res.Patch)
				}
			}
		})
	}
}

func TestCommandCheckTimeout(t *testing.T) {
	t.Parallel() // it waits out its timeout
	check := tools.NewCommandCheck(mustWorkspace(t, t.TempDir()), "echo waiting; sleep 300")
	// Long enough for a loaded machine to start the shell and print
	// "waiting" (200 ms left it little room), short enough to wait.
	check.Timeout = time.Second
	res, err := check.Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Passed || res.ExitCode != -1 || !strings.Contains(deref(res.OutputTail), "timed out") || !strings.HasPrefix(deref(res.OutputTail), "waiting\n") {
		t.Fatalf("result %+v (%s)", res, deref(res.OutputTail))
	}
}

func deref[T any](p *T) T {
	var zero T
	if p != nil {
		return *p
	}
	return zero
}

var _ agent.Checker = (*tools.CommandCheck)(nil)
var _ agent.Patcher = (*tools.Runtime)(nil)
