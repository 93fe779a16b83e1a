package agent_test

import (
	"context"
	"testing"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
	"github.com/specloop/specloop/trace"
)

// textModel answers each call with the next of its replies; a reply that
// is not an action is text with no action, as an adapter reports it.
type textModel struct {
	replies []any // agent.Action or a string (text only)
	reqs    []agent.Request
}

func (m *textModel) Next(_ context.Context, req *agent.Request) (agent.Turn, error) {
	m.reqs = append(m.reqs, agent.Request{Task: req.Task, History: req.History})
	r := m.replies[0]
	m.replies = m.replies[1:]
	if text, ok := r.(string); ok {
		return agent.Turn{}, &agent.InvalidOutputError{Message: "the reply has text but no tool call", Raw: text, Text: text}
	}
	return agent.Turn{Actions: []agent.Action{r.(agent.Action)}}, nil
}

var prior = []agent.Item{
	{ToolCall: &gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: "calculator", Arguments: map[string]any{"left": 12.0, "operation": "multiply", "right": 7.0}}},
	{Observation: &gen.Observation{Type: gen.ObservationTypeObservation, ToolName: "calculator", Content: "84"}},
	{Finish: &gen.Finish{Type: gen.FinishTypeFinish, Answer: "84"}},
}

// A follow-up run is a run of its own that starts from the history a run
// ended with and the person's message: the model's first request holds
// both, run_started summarizes the message, the steps count from 1 with
// the whole budget, and a text-only reply is the model's message to the
// person, which ends the turn as its answer.
func TestFollowUpStartsFromTheHistoryAndEndsOnText(t *testing.T) {
	m := &textModel{replies: []any{
		agent.Action{ToolCall: &gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: "calculator", Arguments: map[string]any{"left": 84.0, "operation": "add", "right": 1.0}}},
		"It is 85 now.",
	}}
	log := &eventLog{}
	msg := "Now add one."
	res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, m, agent.Options{MaxSteps: 2, Tools: calculatorRuntime(t), Trace: log,
		FollowUp: &agent.FollowUp{History: prior, Message: msg}})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitReason != gen.ExitReasonFinished || res.StepsUsed != 2 || res.Answer == nil || *res.Answer != "It is 85 now." {
		t.Fatalf("result = %s after %d steps, answer %v; want finished after 2 with the model's text", res.ExitReason, res.StepsUsed, res.Answer)
	}
	h := m.reqs[0].History
	if h.Len() != len(prior)+1 || h.At(0).ToolCall == nil || h.At(2).Finish == nil {
		t.Fatalf("first request's history = %d items, want the %d prior ones and the message", h.Len(), len(prior))
	}
	if um := h.At(h.Len() - 1).UserMessage; um == nil || um.Text != msg || um.Type != gen.UserMessageTypeUserMessage {
		t.Fatalf("the last item of the first request is %+v, want the person's message", h.At(h.Len()-1))
	}
	if m.reqs[0].Task.Prompt != task {
		t.Errorf("task = %q, want the conversation's task", m.reqs[0].Task.Prompt)
	}
	started := log.events[0]
	if started.EventType != gen.TraceEventTypeRunStarted || started.InputSummary == nil || *started.InputSummary != trace.Summary(msg) {
		t.Errorf("run_started = %+v, want the message's summary as its input", started)
	}
	if first := log.events[1]; first.Step != 1 {
		t.Errorf("the first step is numbered %d, want 1", first.Step)
	}
	if last := log.events[len(log.events)-2]; last.EventType != gen.TraceEventTypeModelAction || last.ActionType == nil || *last.ActionType != gen.ActionTypeFinish {
		t.Errorf("the text-only reply was traced as %+v, want a finish", last)
	}
}

// The step budget of a follow-up is its own: a run whose history already
// holds more steps than its budget still gets all of them.
func TestFollowUpBudgetIsFresh(t *testing.T) {
	var long []agent.Item
	for range 5 {
		long = append(long, prior[:2]...)
	}
	script := model.NewScript(multiply, multiply, finish)
	res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, script, agent.Options{MaxSteps: 3, Tools: calculatorRuntime(t),
		FollowUp: &agent.FollowUp{History: long, Message: "Again."}})
	if err != nil || res.ExitReason != gen.ExitReasonFinished || res.StepsUsed != 3 {
		t.Fatalf("got %s after %d steps (%v), want finished after 3", res.ExitReason, res.StepsUsed, err)
	}
}

// A text-only reply is the model's message only in a follow-up: in a
// one-shot run it stays invalid output fed back to the model. In a
// follow-up with a completion check, it is a finish the check must pass.
func TestTextOnlyReply(t *testing.T) {
	t.Run("one-shot", func(t *testing.T) {
		m := &textModel{replies: []any{"Done, I think.", agent.Action{Finish: &gen.Finish{Type: gen.FinishTypeFinish, Answer: "84"}}}}
		res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, m, agent.Options{MaxSteps: 2})
		if err != nil || res.ExitReason != gen.ExitReasonFinished || res.StepsUsed != 2 || *res.Answer != "84" {
			t.Fatalf("got %s after %d steps (%v), want finished after 2", res.ExitReason, res.StepsUsed, err)
		}
		if fb := m.reqs[1].History.At(0).Feedback; fb == nil || fb.Kind != gen.FeedbackKindInvalidModelOutput {
			t.Fatalf("after a text-only reply the model saw %+v, want invalid-output feedback", m.reqs[1].History.At(0))
		}
	})
	t.Run("follow-up with a check", func(t *testing.T) {
		m := &textModel{replies: []any{"Done.", "Done, now with the fix."}}
		check := &fakeCheck{passFrom: 2}
		res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, m, agent.Options{MaxSteps: 3, Check: check,
			FollowUp: &agent.FollowUp{History: prior, Message: "Fix it."}})
		if err != nil || res.ExitReason != gen.ExitReasonFinished || res.StepsUsed != 2 || *res.Answer != "Done, now with the fix." {
			t.Fatalf("got %s after %d steps, answer %v (%v); want finished after 2 with the second text", res.ExitReason, res.StepsUsed, res.Answer, err)
		}
		h := m.reqs[1].History
		if fb := h.At(h.Len() - 1).Feedback; fb == nil || fb.Kind != gen.FeedbackKindFinishRejected {
			t.Fatalf("after the first text the model saw %+v, want the check's rejection", h.At(h.Len()-1))
		}
	})
}
