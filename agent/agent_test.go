package agent_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
	"github.com/specloop/specloop/tools"
)

const (
	multiply = `{"type":"tool_call","tool_name":"calculator","arguments":{"left":12,"operation":"multiply","right":7}}`
	finish   = `{"type":"finish","answer":"12 * 7 = 84, and 84 > 80."}`
	task     = "Compute 12 x 7 and say whether it is greater than 80."
)

func calculatorRuntime(t testing.TB) *tools.Runtime {
	t.Helper()
	rt, err := tools.New(tools.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// eventLog collects trace events in memory.
type eventLog struct{ events []gen.TraceEvent }

func (l *eventLog) Emit(ev *gen.TraceEvent) error {
	l.events = append(l.events, *ev)
	return nil
}

func (l *eventLog) types() []string {
	var out []string
	for _, ev := range l.events {
		out = append(out, string(ev.EventType))
	}
	return out
}

func TestRunCalculatorThenFinish(t *testing.T) {
	script := model.NewScript(multiply, finish)
	log := &eventLog{}
	res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, script, agent.Options{Tools: calculatorRuntime(t), Trace: log})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitReason != gen.ExitReasonFinished || res.StepsUsed != 2 || res.Answer == nil || *res.Answer != "12 * 7 = 84, and 84 > 80." {
		t.Fatalf("result = %+v", res)
	}
	calls := script.Calls()
	if len(calls) != 2 {
		t.Fatalf("model called %d times, want 2", len(calls))
	}
	if calls[0].History.Len() != 0 || calls[0].Task.Prompt != task {
		t.Fatalf("first call got task %q and %d history items", calls[0].Task.Prompt, calls[0].History.Len())
	}
	data := map[string]any{"value": 84.0}
	want := []agent.Item{
		{ToolCall: &gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: "calculator", Arguments: map[string]any{"left": 12.0, "operation": "multiply", "right": 7.0}}},
		{Observation: &gen.Observation{Type: gen.ObservationTypeObservation, ToolName: "calculator", Content: "84", Data: &data}},
	}
	if diff := cmp.Diff(want, calls[1].History.Items()); diff != "" {
		t.Fatalf("second model call's history (-want +got):\n%s", diff)
	}
	wantEvents := []string{"run_started", "model_action", "observation", "model_action", "run_finished"}
	if diff := cmp.Diff(wantEvents, log.types()); diff != "" {
		t.Fatalf("trace events (-want +got):\n%s", diff)
	}
	if log.events[1].Step != 1 || log.events[2].Step != 1 || log.events[3].Step != 2 {
		t.Fatalf("a tool call and its observation must share a step: %+v", log.events)
	}
}

func TestRunExitReasons(t *testing.T) {
	six := []string{multiply, multiply, multiply, multiply, multiply, multiply}
	tests := []struct {
		name      string
		responses []string
		maxSteps  int
		reason    gen.ExitReason
		steps     int
		sentinel  error
	}{
		{"finish first", []string{finish}, 0, gen.ExitReasonFinished, 1, nil},
		{"default budget of five spent on tool calls", six, 0, gen.ExitReasonMaxStepsExceeded, 5, agent.ErrMaxStepsExceeded},
		{"budget of two", six, 2, gen.ExitReasonMaxStepsExceeded, 2, agent.ErrMaxStepsExceeded},
		{"invalid output then recovery", []string{"not json", finish}, 3, gen.ExitReasonFinished, 2, nil},
		{"invalid output until the budget is spent", []string{"{", `{"type":"finish"}`, `{"type":"jump"}`}, 3, gen.ExitReasonInvalidModelOutput, 3, agent.ErrInvalidModelOutput},
		{"tool call then invalid output at the end", []string{multiply, "oops"}, 2, gen.ExitReasonInvalidModelOutput, 2, agent.ErrInvalidModelOutput},
		{"invalid output then a tool call at the end", []string{"oops", multiply}, 2, gen.ExitReasonMaxStepsExceeded, 2, agent.ErrMaxStepsExceeded},
		{"script exhausted is a model error", []string{multiply}, 3, gen.ExitReasonModelError, 2, agent.ErrModel},
		{"tool error is an observation, not an end", []string{`{"type":"tool_call","tool_name":"calculator","arguments":{"left":1,"operation":"divide","right":0}}`, finish}, 3, gen.ExitReasonFinished, 2, nil},
		{"unknown tool is an observation", []string{`{"type":"tool_call","tool_name":"shell","arguments":{}}`, finish}, 3, gen.ExitReasonFinished, 2, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The repeated calls spend the budget; loop detection, which
			// would stop them, is tested on its own.
			opts := agent.Options{MaxSteps: tt.maxSteps, Tools: calculatorRuntime(t), Stuck: agent.StuckDetection{Disabled: true}}
			res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, model.NewScript(tt.responses...), opts)
			if (err != nil) != (tt.reason == gen.ExitReasonModelError) {
				t.Fatalf("Run returned error %v for exit reason %s; want one only for model_error (and internal_error)", err, res.ExitReason)
			}
			if res.ExitReason != tt.reason || res.StepsUsed != tt.steps {
				t.Fatalf("got %s after %d steps, want %s after %d", res.ExitReason, res.StepsUsed, tt.reason, tt.steps)
			}
			if (res.Error == nil) != (tt.reason == gen.ExitReasonFinished) {
				t.Fatalf("error %v for exit reason %s", res.Error, res.ExitReason)
			}
			_, aerr := agent.Answer(context.Background(), task, model.NewScript(tt.responses...), opts)
			if tt.sentinel == nil {
				if aerr != nil {
					t.Fatalf("Answer: %v", aerr)
				}
				return
			}
			var exit *agent.ExitError
			if !errors.Is(aerr, tt.sentinel) || !errors.As(aerr, &exit) || exit.Result.ExitReason != tt.reason {
				t.Fatalf("Answer error %v does not match %v", aerr, tt.sentinel)
			}
		})
	}
}

func TestFeedbackIsShownToTheModel(t *testing.T) {
	script := model.NewScript(`{"type":"tool_call","tool_name":"calculator"}`, finish)
	res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, script, agent.Options{Tools: calculatorRuntime(t)})
	if err != nil || res.ExitReason != gen.ExitReasonFinished {
		t.Fatalf("res=%+v err=%v", res, err)
	}
	h := script.Calls()[1].History
	if h.Len() != 1 || h.At(0).Feedback == nil {
		t.Fatalf("history = %+v, want one feedback item", h.Items())
	}
	fb := h.At(0).Feedback
	if fb.Kind != gen.FeedbackKindInvalidModelOutput || !strings.Contains(fb.Message, `"/arguments"`) {
		t.Fatalf("feedback %+v must be invalid_model_output naming /arguments", fb)
	}
}

// mutatingModel tries to change the history it is shown.
type mutatingModel struct {
	inner *model.Script
	seen  []int
}

func (m *mutatingModel) Next(ctx context.Context, req *agent.Request) (agent.Turn, error) {
	h := req.History
	m.seen = append(m.seen, h.Len())
	for _, it := range h.All() {
		if it.ToolCall != nil {
			it.ToolCall.Arguments["left"] = 999.0
			it.ToolCall.ToolName = "changed"
		}
		if it.Observation != nil {
			it.Observation.Content = "changed"
			(*it.Observation.Data)["value"] = -1.0
		}
	}
	return m.inner.Next(ctx, req)
}

func TestModelCannotChangeHistory(t *testing.T) {
	inner := model.NewScript(multiply, multiply, finish)
	m := &mutatingModel{inner: inner}
	if _, err := agent.Run(context.Background(), gen.Task{Prompt: task}, m, agent.Options{Tools: calculatorRuntime(t)}); err != nil {
		t.Fatal(err)
	}
	last := inner.Calls()[2].History
	for i, it := range last.All() {
		if it.ToolCall != nil && (it.ToolCall.ToolName != "calculator" || it.ToolCall.Arguments["left"] != 12.0) {
			t.Fatalf("item %d was changed by the model: %+v", i, it.ToolCall)
		}
		if it.Observation != nil && (it.Observation.Content != "84" || (*it.Observation.Data)["value"] != 84.0) {
			t.Fatalf("item %d was changed by the model: %+v", i, it.Observation)
		}
	}
	// A view handed out earlier never grows or changes.
	if first := inner.Calls()[1].History; first.Len() != 2 {
		t.Fatalf("an earlier history view changed length to %d", first.Len())
	}
}

func TestInternalErrorsAreReturned(t *testing.T) {
	tests := []struct {
		name string
		fn   func(context.Context, *tools.Env, *gen.CalculatorInput) (*gen.CalculatorResult, error)
	}{
		{"panic", func(context.Context, *tools.Env, *gen.CalculatorInput) (*gen.CalculatorResult, error) { panic("boom") }},
		{"non-tool error", func(context.Context, *tools.Env, *gen.CalculatorInput) (*gen.CalculatorResult, error) {
			return nil, errors.New("disk on fire")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := tools.Func(tools.NeedsNothing, tt.fn, func(*gen.CalculatorInput, *gen.CalculatorResult) string { return "" })
			_, err := tools.New(tools.Config{Handlers: []tools.Handler{h}, Spec: nil})
			if err == nil {
				t.Fatal("a runtime with handlers missing for the spec's tools must not build")
			}
			rt, err := tools.New(tools.Config{Handlers: replaceCalculator(h)})
			if err != nil {
				t.Fatal(err)
			}
			log := &eventLog{}
			res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, model.NewScript(multiply, finish), agent.Options{Tools: rt, Trace: log})
			var ie *tools.InternalError
			if !errors.As(err, &ie) || ie.Tool != "calculator" {
				t.Fatalf("Run error = %v, want a *tools.InternalError for the calculator", err)
			}
			if res.ExitReason != gen.ExitReasonInternalError || res.Answer != nil {
				t.Fatalf("result = %+v, want internal_error and no answer", res)
			}
			last := log.events[len(log.events)-1]
			if last.EventType != gen.TraceEventTypeRunFinished || *last.ExitReason != gen.ExitReasonInternalError {
				t.Fatalf("last event = %+v, want run_finished internal_error before Run returned", last)
			}
		})
	}
}

// replaceCalculator returns the built-in handlers with the calculator's
// replaced by h.
func replaceCalculator(h tools.Handler) []tools.Handler {
	out := []tools.Handler{h}
	for _, b := range tools.Builtin() {
		if tools.InputName(b) != tools.InputName(h) {
			out = append(out, b)
		}
	}
	return out
}

// blockingModel waits until its context is done.
type blockingModel struct{ started chan struct{} }

func (m blockingModel) Next(ctx context.Context, _ *agent.Request) (agent.Turn, error) {
	close(m.started)
	<-ctx.Done()
	return agent.Turn{}, ctx.Err()
}

func TestCancellation(t *testing.T) {
	t.Run("before the run", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		res, err := agent.Run(ctx, gen.Task{Prompt: task}, model.NewScript(finish), agent.Options{})
		if err != nil || res.ExitReason != gen.ExitReasonCancelled || res.StepsUsed != 0 {
			t.Fatalf("res=%+v err=%v", res, err)
		}
	})
	t.Run("during a model call", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		m := blockingModel{started: make(chan struct{})}
		go func() { <-m.started; cancel() }()
		done := make(chan gen.RunResult)
		go func() {
			res, _ := agent.Run(ctx, gen.Task{Prompt: task}, m, agent.Options{})
			done <- res
		}()
		select {
		case res := <-done:
			if res.ExitReason != gen.ExitReasonCancelled {
				t.Fatalf("exit reason %s, want cancelled", res.ExitReason)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not return after cancellation")
		}
	})
}

// usageModel is a one-action model that reports token usage on every call.
func usageModel(per int64) agent.OneAction {
	return func(context.Context, *agent.Request) (agent.Action, error) {
		a, err := model.ParseAction(multiply)
		a.Usage = &gen.Usage{InputTokens: per, OutputTokens: 1}
		return a, err
	}
}

func TestTokenBudget(t *testing.T) {
	log := &eventLog{}
	res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, usageModel(10), agent.Options{MaxSteps: 10, TokenBudget: 30, Tools: calculatorRuntime(t), Trace: log})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitReason != gen.ExitReasonTokenBudgetExceeded || res.StepsUsed != 3 {
		t.Fatalf("got %s after %d steps, want token_budget_exceeded after 3 (33 tokens > 30)", res.ExitReason, res.StepsUsed)
	}
	if res.Usage == nil || res.Usage.InputTokens != 30 || res.Usage.OutputTokens != 3 {
		t.Fatalf("usage = %+v", res.Usage)
	}
	if u := log.events[1].Usage; u == nil || u.InputTokens != 10 {
		t.Fatalf("model_action event usage = %+v, want the call's usage", u)
	}
}

// fakeCheck passes from the n-th check on.
type fakeCheck struct {
	passFrom, calls int
}

func (c *fakeCheck) Check(context.Context) (gen.CheckResult, error) {
	c.calls++
	tail := "FAIL: TestX"
	if c.calls >= c.passFrom {
		return gen.CheckResult{Passed: true, ExitCode: 0}, nil
	}
	return gen.CheckResult{Passed: false, ExitCode: 1, OutputTail: &tail}, nil
}

func TestCompletionGate(t *testing.T) {
	tests := []struct {
		name      string
		passFrom  int
		responses []string
		reason    gen.ExitReason
		steps     int
		rejected  int
	}{
		{"passes", 1, []string{finish}, gen.ExitReasonFinished, 1, 0},
		{"fails then passes", 2, []string{finish, multiply, finish}, gen.ExitReasonFinished, 3, 1},
		{"fails to the end", 99, []string{finish, finish, finish}, gen.ExitReasonCheckFailed, 3, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check := &fakeCheck{passFrom: tt.passFrom}
			script := model.NewScript(tt.responses...)
			log := &eventLog{}
			res, err := agent.Run(context.Background(), gen.Task{Prompt: task}, script, agent.Options{MaxSteps: 3, Tools: calculatorRuntime(t), Check: check, Trace: log})
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitReason != tt.reason || res.StepsUsed != tt.steps {
				t.Fatalf("got %s after %d steps, want %s after %d", res.ExitReason, res.StepsUsed, tt.reason, tt.steps)
			}
			rejected := 0
			for _, ev := range log.events {
				if ev.EventType == gen.TraceEventTypeFinishRejected {
					rejected++
					if ev.ExitCode == nil || *ev.ExitCode != 1 {
						t.Fatalf("finish_rejected without the check's exit code: %+v", ev)
					}
				}
			}
			if rejected != tt.rejected {
				t.Fatalf("%d finish_rejected events, want %d", rejected, tt.rejected)
			}
			if tt.rejected > 0 {
				h := script.Calls()[1].History
				fb := h.At(h.Len() - 1).Feedback
				if fb == nil || fb.Kind != gen.FeedbackKindFinishRejected || !strings.Contains(fb.Message, "exit code 1") || !strings.Contains(fb.Message, "FAIL: TestX") {
					t.Fatalf("the model was not told why its finish was rejected: %+v", h.Items())
				}
			}
		})
	}
}
