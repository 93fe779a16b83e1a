package agent_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
)

// mul and div are calculator calls; div(n) fails with division_by_zero.
func mul(left, right int) string {
	return fmt.Sprintf(`{"type":"tool_call","tool_name":"calculator","arguments":{"left":%d,"operation":"multiply","right":%d}}`, left, right)
}

func div(left int) string {
	return fmt.Sprintf(`{"type":"tool_call","tool_name":"calculator","arguments":{"left":%d,"operation":"divide","right":0}}`, left)
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func concat(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// Each stuck pattern warns the model once, then ends the run stuck when it
// goes on; its near miss (the same tool with other arguments) never counts.
func TestStuckPatterns(t *testing.T) {
	a, b := mul(12, 7), mul(3, 4)
	tests := []struct {
		name      string
		responses []string
		reason    gen.ExitReason
		steps     int
		warnedAt  int // the step after which the warning came; 0 for none
	}{
		{"same call, same result 4 times: warned, stopped at the 5th", repeat(a, 10), gen.ExitReasonStuck, 5, 4},
		{"near miss: same tool, other arguments each time", concat([]string{mul(1, 1), mul(1, 2), mul(1, 3), mul(1, 4), mul(1, 5), mul(1, 6), mul(1, 7), mul(1, 8)}, []string{finish}), gen.ExitReasonFinished, 9, 0},
		{"same call, same error 3 times: warned, stopped at the 4th", repeat(div(1), 10), gen.ExitReasonStuck, 4, 3},
		{"near miss: same failing tool, other arguments", concat([]string{div(1), div(2), div(3), div(4), div(5)}, []string{finish}), gen.ExitReasonFinished, 6, 0},
		{"alternating A,B,A,B,A,B: warned, stopped at the 7th", []string{a, b, a, b, a, b, a, b}, gen.ExitReasonStuck, 7, 6},
		{"near miss: alternating with A's arguments changing", []string{mul(1, 1), b, mul(1, 2), b, mul(1, 3), b, mul(1, 4), finish}, gen.ExitReasonFinished, 8, 0},
		{"more than 5 of the last 10: warned at the 6th, stopped at the 7th", []string{a, a, mul(5, 1), a, a, mul(5, 2), a, a, mul(5, 3), a, a}, gen.ExitReasonStuck, 10, 8},
		{"near miss: the repeats differ in one argument", []string{a, mul(12, 8), mul(5, 1), a, mul(12, 8), mul(5, 2), a, mul(12, 9), mul(5, 3), mul(12, 10), finish}, gen.ExitReasonFinished, 11, 0},
		{"a model that changes course after the warning goes on", concat(repeat(a, 4), []string{b, mul(9, 9), a, finish}), gen.ExitReasonFinished, 8, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := &eventLog{}
			script := model.NewScript(tt.responses...)
			res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, script, agent.Options{MaxSteps: 20, Tools: calculatorRuntime(t), Trace: log})
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitReason != tt.reason || res.StepsUsed != tt.steps {
				t.Fatalf("got %s after %d steps, want %s after %d (error %v)", res.ExitReason, res.StepsUsed, tt.reason, tt.steps, ptrText(res.Error))
			}
			// The warning is in the history of the model's next call, once,
			// and traced as model_feedback of kind stuck_warning.
			warnings := 0
			for i, c := range script.Calls() {
				n := 0
				for _, it := range c.History.All() {
					if it.Feedback != nil && it.Feedback.Kind == gen.FeedbackKindStuckWarning {
						n++
					}
				}
				if want := btoi(tt.warnedAt > 0 && i >= tt.warnedAt); n != want {
					t.Fatalf("call %d saw %d stuck warnings, want %d", i+1, n, want)
				}
			}
			for _, ev := range log.events {
				if ev.EventType == gen.TraceEventTypeModelFeedback && ev.FeedbackKind != nil && *ev.FeedbackKind == gen.FeedbackKindStuckWarning {
					warnings++
					if ev.Step != tt.warnedAt {
						t.Fatalf("stuck_warning traced at step %d, want %d", ev.Step, tt.warnedAt)
					}
				}
			}
			if warnings != btoi(tt.warnedAt > 0) {
				t.Fatalf("%d stuck_warning events, want %d", warnings, btoi(tt.warnedAt > 0))
			}
			if tt.reason == gen.ExitReasonStuck {
				last := log.events[len(log.events)-1]
				if last.ExitReason == nil || *last.ExitReason != gen.ExitReasonStuck {
					t.Fatalf("run_finished = %+v, want exit reason stuck", last)
				}
				if _, err := agent.Answer(context.Background(), task, model.NewScript(tt.responses...), agent.Options{MaxSteps: 20, Tools: calculatorRuntime(t)}); !errors.Is(err, agent.ErrStuck) {
					t.Fatalf("Answer returned %v, want an error matching ErrStuck", err)
				}
			}
		})
	}
}

// The thresholds are configurable, and detection can be turned off.
func TestStuckOptions(t *testing.T) {
	run := func(s agent.StuckDetection) gen.RunResult {
		res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, model.NewScript(repeat(mul(2, 2), 12)...), agent.Options{MaxSteps: 12, Tools: calculatorRuntime(t), Stuck: s})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := run(agent.StuckDetection{SameResult: 2, WindowRepeats: 100, Alternating: 100}); res.ExitReason != gen.ExitReasonStuck || res.StepsUsed != 3 {
		t.Errorf("SameResult 2: got %s after %d steps, want stuck after 3", res.ExitReason, res.StepsUsed)
	}
	if res := run(agent.StuckDetection{SameResult: 100, Window: 4, WindowRepeats: 2}); res.ExitReason != gen.ExitReasonStuck || res.StepsUsed != 4 {
		t.Errorf("more than 2 of the last 4: got %s after %d steps, want stuck after 4", res.ExitReason, res.StepsUsed)
	}
	if res := run(agent.StuckDetection{Disabled: true}); res.ExitReason != gen.ExitReasonMaxStepsExceeded {
		t.Errorf("disabled: got %s, want max_steps_exceeded", res.ExitReason)
	}
}

func ptrText(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

// A stuck run recorded with raw responses replays to the same end: the
// warning is the loop's, not a model call.
func TestStuckRunReplays(t *testing.T) {
	log := &eventLog{}
	responses := repeat(div(1), 10)
	res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, model.NewScript(responses...), agent.Options{MaxSteps: 20, Tools: calculatorRuntime(t), Trace: log, RecordRaw: true})
	if err != nil || res.ExitReason != gen.ExitReasonStuck {
		t.Fatalf("res=%+v err=%v", res, err)
	}
	replay, err := model.NewReplay(log.events, model.ReplayConfig{})
	if err != nil {
		t.Fatal(err)
	}
	again, err := agent.Run(context.Background(), gen.Task{Prompt: task}, replay, agent.Options{MaxSteps: 20, Tools: calculatorRuntime(t)})
	if err != nil || again.ExitReason != gen.ExitReasonStuck || again.StepsUsed != res.StepsUsed {
		t.Fatalf("replayed: %+v (error %s) err=%v; want stuck after %d steps", again, ptrText(again.Error), err, res.StepsUsed)
	}
}
