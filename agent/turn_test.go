package agent_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
	"github.com/specloop/specloop/model/modeltest"
	"github.com/specloop/specloop/trace"
)

// turn returns the spec's Turn form of actions, as a script model reads it.
func turn(actions ...string) string { return `{"actions":[` + strings.Join(actions, ",") + `]}` }

const (
	callA = `{"type":"tool_call","tool_name":"calculator","arguments":{"left":12,"operation":"multiply","right":7},"call_id":"call_a"}`
	// callB breaks the calculator's schema ("power" is no operation).
	callB = `{"type":"tool_call","tool_name":"calculator","arguments":{"left":2,"operation":"power","right":8},"call_id":"call_b"}`
	callC = `{"type":"tool_call","tool_name":"calculator","arguments":{"left":84,"operation":"subtract","right":80},"call_id":"call_c"}`
)

// A turn of several calls is one step: the calls run in order, each with
// its observation tied to its call id in the history and the trace, and a
// call the tool's schema refuses fails alone.
func TestTurnRunsInOrderAsOneStep(t *testing.T) {
	script := model.NewScript(turn(callA, callB, callC), finish)
	log := &eventLog{}
	res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, script, agent.Options{MaxSteps: 2, Tools: calculatorRuntime(t), Trace: log})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitReason != gen.ExitReasonFinished || res.StepsUsed != 2 {
		t.Fatalf("result = %+v, want finished in 2 steps", res)
	}
	// The history holds the turn as the model gave it, then the results
	// in the same order.
	var got []string
	for _, it := range script.Calls()[1].History.All() {
		switch {
		case it.ToolCall != nil:
			got = append(got, "call "+*it.ToolCall.CallId)
		case it.Observation != nil:
			o := it.Observation
			code := ""
			if o.ErrorCode != nil {
				code = " " + string(*o.ErrorCode)
			}
			got = append(got, "observation "+*o.CallId+" "+o.Content[:min(len(o.Content), 2)]+code)
		default:
			got = append(got, "other")
		}
	}
	want := []string{"call call_a", "call call_b", "call call_c", "observation call_a 84", "observation call_b er invalid_arguments", "observation call_c 4"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("history (-want +got):\n%s", diff)
	}
	wantTrace := []string{
		"1 model_action call_a", "1 model_action call_b", "1 model_action call_c",
		"1 observation call_a " + trace.Summary("84"),
		"1 observation call_b " + *log.events[5].Output,
		"1 observation call_c " + trace.Summary("4"),
		"2 model_action",
	}
	if diff := cmp.Diff(wantTrace, modeltest.CallTrace(log.events)); diff != "" {
		t.Fatalf("trace (-want +got):\n%s", diff)
	}
	if ev := log.events[5]; ev.IsError == nil || !*ev.IsError || ev.ErrorCode == nil || *ev.ErrorCode != "invalid_arguments" {
		t.Fatalf("the refused call's observation = %+v", ev)
	}
}

// The step budget counts model calls, whatever the number of actions in
// a turn.
func TestBudgetCountsTurns(t *testing.T) {
	t.Run("a turn of three calls spends one step", func(t *testing.T) {
		script := model.NewScript(turn(callA, callC, callA), turn(callC, finish))
		res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, script, agent.Options{MaxSteps: 2, Tools: calculatorRuntime(t)})
		if err != nil || res.ExitReason != gen.ExitReasonFinished || res.StepsUsed != 2 {
			t.Fatalf("result = %+v, %v; want finished in 2 steps", res, err)
		}
	})
	t.Run("the budget ends after the whole turn ran", func(t *testing.T) {
		log := &eventLog{}
		res, _ := agent.Run(context.Background(), gen.Task{Prompt: task}, model.NewScript(turn(callA, callC)), agent.Options{MaxSteps: 1, Tools: calculatorRuntime(t), Trace: log})
		if res.ExitReason != gen.ExitReasonMaxStepsExceeded || res.StepsUsed != 1 {
			t.Fatalf("result = %+v", res)
		}
		if n := strings.Count(strings.Join(log.types(), " "), "observation"); n != 2 {
			t.Fatalf("%d observations, want both calls run", n)
		}
	})
}

// A finish after calls in one turn runs after them; when the completion
// check rejects it, the rejection answers the finish after the calls'
// observations, and the next turn may finish again.
func TestFinishAfterCallsInTurn(t *testing.T) {
	script := model.NewScript(turn(callA, finish), finish)
	check := &fakeCheck{passFrom: 2}
	res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, script, agent.Options{MaxSteps: 3, Tools: calculatorRuntime(t), Check: check})
	if err != nil || res.ExitReason != gen.ExitReasonFinished || res.StepsUsed != 2 || check.calls != 2 {
		t.Fatalf("result = %+v, %v after %d checks", res, err, check.calls)
	}
	items := script.Calls()[1].History.Items()
	if len(items) != 4 || items[0].ToolCall == nil || items[1].Finish == nil || items[2].Observation == nil ||
		items[3].Feedback == nil || items[3].Feedback.Kind != gen.FeedbackKindFinishRejected {
		t.Fatalf("history = %+v, want call, finish, observation, finish_rejected", items)
	}
}

// Output that is no valid turn — one malformed action spoils it — is
// feedback for the whole turn: none of its calls runs.
func TestMalformedTurnIsFeedback(t *testing.T) {
	tests := []struct{ name, text, want string }{
		{"malformed action", turn(callA, `{"type":"tool_call","arguments":{}}`), "/actions/1"},
		{"finish not last", turn(finish, callA), "/actions/0: a finish may only be the last action"},
		{"empty turn", turn(), "/actions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			script := model.NewScript(tt.text, finish)
			log := &eventLog{}
			res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, script, agent.Options{MaxSteps: 2, Tools: calculatorRuntime(t), Trace: log})
			if err != nil || res.ExitReason != gen.ExitReasonFinished || res.StepsUsed != 2 {
				t.Fatalf("result = %+v, %v", res, err)
			}
			if diff := cmp.Diff([]string{"run_started", "model_feedback", "model_action", "run_finished"}, log.types()); diff != "" {
				t.Fatalf("trace events (-want +got):\n%s", diff)
			}
			fb := script.Calls()[1].History.At(0).Feedback
			if fb == nil || !strings.Contains(fb.Message, tt.want) {
				t.Fatalf("feedback = %+v, want it to say %q", fb, tt.want)
			}
		})
	}
}

// turnModel returns one turn, as a custom model would.
type turnModel struct{ turn agent.Turn }

func (m turnModel) Next(context.Context, *agent.Request) (agent.Turn, error) {
	return m.turn, nil
}

// A model that returns a turn the spec does not allow is a bug in the
// model, not model output: the run ends with internal_error.
func TestBadTurnIsInternalError(t *testing.T) {
	call := agent.Action{ToolCall: &gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: "calculator", Arguments: map[string]any{}}}
	fin := agent.Action{Finish: &gen.Finish{Type: gen.FinishTypeFinish, Answer: "x"}}
	tests := []struct {
		name string
		turn agent.Turn
		want string
	}{
		{"no actions", agent.Turn{}, "without actions"},
		{"finish not last", agent.Turn{Actions: []agent.Action{fin, call}}, "not the last action"},
		{"empty action", agent.Turn{Actions: []agent.Action{call, {}}}, "action (2 of 2) without exactly one"},
		{"too many actions", agent.Turn{Actions: slices.Repeat([]agent.Action{call}, agent.MaxTurnActions+1)}, "more than 64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, turnModel{tt.turn}, agent.Options{Tools: calculatorRuntime(t)})
			if res.ExitReason != gen.ExitReasonInternalError || err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("result = %s, %v; want internal_error saying %q", res.ExitReason, err, tt.want)
			}
		})
	}
	t.Run("a good turn runs", func(t *testing.T) {
		res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, turnModel{agent.Turn{Actions: []agent.Action{call, fin}}}, agent.Options{Tools: calculatorRuntime(t)})
		if err != nil || res.ExitReason != gen.ExitReasonFinished || res.StepsUsed != 1 {
			t.Fatalf("result = %+v, %v", res, err)
		}
	})
}

// The trace records a plain call id verbatim and any other id, which a
// model may fill with anything, as its summary.
func TestCallIDsInTheTrace(t *testing.T) {
	secret := "sk-live secret/id"
	odd := `{"type":"tool_call","tool_name":"calculator","arguments":{"left":1,"operation":"add","right":1},"call_id":"` + secret + `"}`
	log := &eventLog{}
	_, err := agent.Run(context.Background(), gen.Task{Prompt: task}, model.NewScript(turn(callA, odd), finish), agent.Options{Tools: calculatorRuntime(t), Trace: log})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"1 model_action call_a", "1 model_action " + trace.Summary(secret),
		"1 observation call_a " + trace.Summary("84"), "1 observation " + trace.Summary(secret) + " " + trace.Summary("2"),
		"2 model_action",
	}
	if diff := cmp.Diff(want, modeltest.CallTrace(log.events)); diff != "" {
		t.Fatalf("trace (-want +got):\n%s", diff)
	}
}
