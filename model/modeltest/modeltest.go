// Package modeltest is a conformance suite for agent.Model implementations,
// in the spirit of testing/slogtest: every model specloop ships (the script,
// replay, OpenAI and Anthropic models) passes the same Run.
//
// An implementation's test supplies a Factory that builds a model answering
// with given turns — a script of raw responses, a recorded trace, or an
// httptest server speaking a provider's wire format — and Run checks what
// the loop relies on: tool calls and finishes come back as the spec's
// Actions, Raw is the action's wire form, invalid output is an
// *agent.InvalidOutputError that does not repeat the output, a cancelled
// context is an error and not invalid output, and a whole run through
// agent.Run with the real tools runtime reaches its answer and leaves a
// replayable trace. Unless the model is an agent.OneAction it also checks
// turns: a reply of several actions comes back whole and in order, and runs
// as one step whose observations are tied to their calls' ids.
//
// The provider adapters share more: RunProvider runs, for a Provider (its
// constructor and the Codec of its wire format, which a fake Server
// speaks), Run and RunContext over a scripted stand-in, then the tables of
// retries, timeouts, cancellation, provider errors, over-window refusals,
// tool rendering, usage and invalid output. What is one provider's own
// (its wire details, its recorded bodies) stays in its package's tests.
package modeltest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
	"github.com/specloop/specloop/tools"
	"github.com/specloop/specloop/trace"
)

// Task is the task of every run and call the suite makes. A factory that
// records a run first (such as the replay model's) must record it with this
// task.
var Task = gen.Task{Prompt: "Compute 12 x 7 and say the result."}

// InvalidText is output that is no valid action. It contains Marker, which
// an InvalidOutputError's message must never repeat.
const (
	Marker      = "do-not-echo-4b1d"
	InvalidText = "{\"left\": " + Marker + "}"
)

// Turn is one reply the suite asks a model for: exactly one field is set.
type Turn struct {
	ToolCall *gen.ToolCall
	Finish   *gen.Finish
	// Invalid is a reply that is not a valid action; a provider factory
	// renders it as a tool call whose arguments are InvalidText.
	Invalid bool
	// Parallel is a reply with several actions: tool calls, the last
	// possibly a finish. A provider factory renders it as several tool
	// calls in one reply (a finish as a call of the finish tool).
	Parallel []Turn
	// Text is a reply of text and no tool call: invalid output as a turn,
	// the summary as the answer to a summarization request (RunContext).
	Text string
}

// Raw returns the turn in the wire form of an Action (InvalidText for an
// invalid turn), or of the spec's Turn for a parallel one, as a script
// model would get it.
func (t Turn) Raw() string {
	var v any
	switch {
	case t.ToolCall != nil:
		v = t.ToolCall
	case t.Finish != nil:
		v = t.Finish
	case t.Parallel != nil:
		// The spec's Turn: {"actions": [...]}, each action its own Raw.
		actions := make([]json.RawMessage, len(t.Parallel))
		for i, p := range t.Parallel {
			actions[i] = json.RawMessage(p.Raw())
		}
		v = map[string]any{"actions": actions}
	default:
		return InvalidText
	}
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(data)
}

// Call returns a turn calling tool with args.
func Call(tool string, args map[string]any) Turn {
	return Turn{ToolCall: &gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: tool, Arguments: args}}
}

// Finish returns a turn finishing with answer.
func Finish(answer string) Turn {
	return Turn{Finish: &gen.Finish{Type: gen.FinishTypeFinish, Answer: answer}}
}

// Invalid returns a turn that is not a valid action.
func Invalid() Turn { return Turn{Invalid: true} }

// Parallel returns a reply of several actions: tool calls, the last
// possibly a finish.
func Parallel(actions ...Turn) Turn { return Turn{Parallel: actions} }

// Factory returns a new model whose successive Next calls answer with
// turns, in order, for a run of Task.
type Factory func(t *testing.T, turns []Turn) agent.Model

// calculatorTool is the tool the suite calls; it needs no workspace.
const calculatorTool = "calculator"

func multiply() Turn {
	return Call(calculatorTool, map[string]any{"left": 12.0, "operation": string(gen.CalculatorOperationMultiply), "right": 7.0})
}

func subtract() Turn {
	return Call(calculatorTool, map[string]any{"left": 84.0, "operation": string(gen.CalculatorOperationSubtract), "right": 80.0})
}

// Runtime returns the tools runtime the suite runs with: the built-in tools
// without a workspace.
func Runtime(t testing.TB) *tools.Runtime {
	t.Helper()
	rt, err := tools.New(tools.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// Request returns the request for a call of Task with history h, offering
// the tools of Runtime (the same slice every time, as in a run).
func Request(tb testing.TB, h agent.History) *agent.Request {
	tb.Helper()
	specs, err := runtimeSpecs()
	if err != nil {
		tb.Fatal(err)
	}
	return &agent.Request{Task: Task, History: h, Tools: specs}
}

var runtimeSpecs = sync.OnceValues(func() ([]gen.ToolSpec, error) {
	rt, err := tools.New(tools.Config{})
	if err != nil {
		return nil, err
	}
	return rt.Specs(), nil
})

// Ask asks m for the turn of task and history h, offering the tools of
// Runtime, and returns its action with the turn's usage; a turn of another
// number of actions fails tb.
func Ask(tb testing.TB, ctx context.Context, m agent.Model, task gen.Task, h agent.History) (agent.Action, error) {
	tb.Helper()
	req := Request(tb, h)
	req.Task = task
	turn, err := m.Next(ctx, req)
	if err != nil {
		return agent.Action{}, err
	}
	if len(turn.Actions) != 1 {
		tb.Fatalf("turn of %d actions, want 1: %+v", len(turn.Actions), turn)
	}
	a := turn.Actions[0]
	a.Usage = turn.Usage
	return a, nil
}

// Run runs the conformance suite against the models newModel builds.
func Run(t *testing.T, newModel Factory) {
	t.Run("ToolCall", func(t *testing.T) {
		want := multiply()
		m := newModel(t, []Turn{want})
		a, err := Ask(t, context.Background(), m, Task, agent.NewHistory())
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		if a.ToolCall == nil || a.Finish != nil {
			t.Fatalf("want exactly a tool call, got %+v", a)
		}
		checkCall(t, a.ToolCall, want.ToolCall)
		checkRaw(t, a)
		checkUsage(t, a.Usage)
	})
	t.Run("Finish", func(t *testing.T) {
		m := newModel(t, []Turn{Finish("12 x 7 = 84")})
		a, err := Ask(t, context.Background(), m, Task, agent.NewHistory())
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		if a.Finish == nil || a.ToolCall != nil {
			t.Fatalf("want exactly a finish, got %+v", a)
		}
		if a.Finish.Answer != "12 x 7 = 84" || a.Finish.Type != gen.FinishTypeFinish {
			t.Fatalf("finish = %+v", *a.Finish)
		}
		checkRaw(t, a)
		checkUsage(t, a.Usage)
	})
	t.Run("InvalidOutput", func(t *testing.T) {
		m := newModel(t, []Turn{Invalid()})
		_, err := m.Next(context.Background(), Request(t, agent.NewHistory()))
		var inv *agent.InvalidOutputError
		if !errors.As(err, &inv) {
			t.Fatalf("want an *agent.InvalidOutputError, got %v", err)
		}
		if inv.Message == "" {
			t.Fatal("the invalid-output message is empty")
		}
		if strings.Contains(inv.Message, Marker) {
			t.Fatalf("the invalid-output message repeats the output: %q", inv.Message)
		}
		checkUsage(t, inv.Usage)
	})
	t.Run("CancelledContext", func(t *testing.T) {
		m := newModel(t, []Turn{Finish("never")})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := m.Next(ctx, Request(t, agent.NewHistory()))
		if err == nil {
			t.Fatal("Next with a cancelled context succeeded")
		}
		if agent.IsInvalidOutput(err) {
			t.Fatalf("a cancelled call is not invalid output: %v", err)
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("the error should wrap context.Canceled: %v", err)
		}
	})
	t.Run("RunToFinish", func(t *testing.T) {
		turns := []Turn{multiply(), Finish("12 x 7 = 84")}
		res, events := run(t, newModel(t, turns), len(turns))
		if res.ExitReason != gen.ExitReasonFinished || res.Answer == nil || *res.Answer != "12 x 7 = 84" || res.StepsUsed != 2 {
			t.Fatalf("result = %+v", res)
		}
		wantTypes := []gen.TraceEventType{
			gen.TraceEventTypeRunStarted, gen.TraceEventTypeModelAction, gen.TraceEventTypeObservation,
			gen.TraceEventTypeModelAction, gen.TraceEventTypeRunFinished,
		}
		if diff := cmp.Diff(wantTypes, eventTypes(events)); diff != "" {
			t.Fatalf("trace events (-want +got):\n%s", diff)
		}
		obs := events[2]
		if obs.Output == nil || *obs.Output != trace.Summary("84") || obs.IsError == nil || *obs.IsError {
			t.Fatalf("the calculator observation is not 84: %+v", obs)
		}
		checkRecordedRaw(t, events)
	})
	// Every model specloop ships makes turns of several actions; a
	// one-action model of a user's (agent.OneAction) passes the suite
	// without these.
	if _, ok := newModel(t, []Turn{Finish("probe")}).(agent.OneAction); !ok {
		t.Run("Turn", func(t *testing.T) {
			want := Parallel(multiply(), subtract(), Finish("4"))
			m := newModel(t, []Turn{want})
			turn, err := m.Next(context.Background(), Request(t, agent.NewHistory()))
			if err != nil {
				t.Fatalf("Next: %v", err)
			}
			if len(turn.Actions) != 3 {
				t.Fatalf("turn of %d actions, want 3: %+v", len(turn.Actions), turn)
			}
			for i, w := range want.Parallel[:2] {
				a := turn.Actions[i]
				if a.ToolCall == nil || a.Finish != nil {
					t.Fatalf("action %d: want exactly a tool call, got %+v", i, a)
				}
				checkCall(t, a.ToolCall, w.ToolCall)
				checkRaw(t, a)
			}
			if f := turn.Actions[2].Finish; f == nil || f.Answer != "4" || turn.Actions[2].ToolCall != nil {
				t.Fatalf("action 2: want the finish, got %+v", turn.Actions[2])
			}
			checkRaw(t, turn.Actions[2])
			checkUsage(t, turn.Usage)
		})
		t.Run("RunTurn", func(t *testing.T) {
			turns := []Turn{Parallel(multiply(), subtract()), Finish("4")}
			res, events := run(t, newModel(t, turns), len(turns))
			if res.ExitReason != gen.ExitReasonFinished || res.StepsUsed != 2 {
				t.Fatalf("result = %+v, want finished in 2 steps: a turn is one step", res)
			}
			wantTypes := []gen.TraceEventType{
				gen.TraceEventTypeRunStarted, gen.TraceEventTypeModelAction, gen.TraceEventTypeModelAction,
				gen.TraceEventTypeObservation, gen.TraceEventTypeObservation, gen.TraceEventTypeModelAction,
				gen.TraceEventTypeRunFinished,
			}
			if diff := cmp.Diff(wantTypes, eventTypes(events)); diff != "" {
				t.Fatalf("trace events (-want +got):\n%s", diff)
			}
			for i, want := range []string{"84", "4"} {
				call, obs := events[1+i], events[3+i]
				if call.Step != 1 || obs.Step != 1 {
					t.Fatalf("the turn's events are not all of step 1: %+v %+v", call, obs)
				}
				if obs.Output == nil || *obs.Output != trace.Summary(want) {
					t.Fatalf("observation %d is not %s: %+v", i, want, obs)
				}
				if !cmp.Equal(call.CallId, obs.CallId) {
					t.Fatalf("observation %d is tied to call id %v, its call has %v", i, obs.CallId, call.CallId)
				}
			}
			checkRecordedRaw(t, events)
		})
	}
	t.Run("FeedbackThenRecovery", func(t *testing.T) {
		turns := []Turn{Invalid(), multiply(), Finish("84")}
		res, events := run(t, newModel(t, turns), len(turns))
		if res.ExitReason != gen.ExitReasonFinished || res.StepsUsed != 3 {
			t.Fatalf("result = %+v", res)
		}
		if events[1].EventType != gen.TraceEventTypeModelFeedback || events[1].FeedbackKind == nil || *events[1].FeedbackKind != gen.FeedbackKindInvalidModelOutput {
			t.Fatalf("the first step should be invalid-output feedback: %+v", events[1])
		}
		checkRecordedRaw(t, events)
	})
}

// run runs Task with m, the calculator runtime and raw recording.
func run(t *testing.T, m agent.Model, maxSteps int) (gen.RunResult, []gen.TraceEvent) {
	t.Helper()
	var rec Recorder
	res, err := agent.Run(context.Background(), Task, m, agent.Options{
		MaxSteps: maxSteps, Tools: Runtime(t), Trace: &rec, RecordRaw: true,
	})
	if err != nil {
		t.Fatalf("agent.Run: %v (result %+v)", err, res)
	}
	return res, rec.Events
}

// Recorder is an agent.Tracer that keeps events in memory.
type Recorder struct{ Events []gen.TraceEvent }

// Emit records ev.
func (r *Recorder) Emit(ev *gen.TraceEvent) error {
	r.Events = append(r.Events, *ev)
	return nil
}

func eventTypes(events []gen.TraceEvent) []gen.TraceEventType {
	out := make([]gen.TraceEventType, len(events))
	for i, ev := range events {
		out[i] = ev.EventType
	}
	return out
}

func checkCall(t *testing.T, got, want *gen.ToolCall) {
	t.Helper()
	if got.Type != gen.ToolCallTypeToolCall || got.ToolName != want.ToolName {
		t.Fatalf("tool call = %+v, want tool %s", *got, want.ToolName)
	}
	if diff := cmp.Diff(want.Arguments, got.Arguments); diff != "" {
		t.Fatalf("arguments (-want +got):\n%s", diff)
	}
}

// checkRaw checks that Raw, when set, is the action's wire form: the JSON
// adapter parses it to the same action.
func checkRaw(t *testing.T, a agent.Action) {
	t.Helper()
	if a.Raw == "" {
		return
	}
	b, err := model.ParseAction(a.Raw)
	if err != nil {
		t.Fatalf("Raw is not the wire form of an action: %v", err)
	}
	if diff := cmp.Diff(a.ToolCall, b.ToolCall); diff != "" {
		t.Fatalf("Raw parses to another tool call (-action +raw):\n%s", diff)
	}
	if diff := cmp.Diff(a.Finish, b.Finish); diff != "" {
		t.Fatalf("Raw parses to another finish (-action +raw):\n%s", diff)
	}
}

func checkUsage(t *testing.T, u *gen.Usage) {
	t.Helper()
	if u != nil && (u.InputTokens < 0 || u.OutputTokens < 0) {
		t.Fatalf("negative usage %+v", *u)
	}
}

// checkRecordedRaw checks that every model event of a raw-recording run has
// a raw response, and that a model_action's parses to the recorded action.
func checkRecordedRaw(t *testing.T, events []gen.TraceEvent) {
	t.Helper()
	for _, ev := range events {
		switch ev.EventType {
		case gen.TraceEventTypeModelAction:
			if ev.RawResponse == nil {
				t.Fatalf("step %d: model_action without raw_response", ev.Step)
			}
			a, err := model.ParseAction(*ev.RawResponse)
			if err != nil {
				t.Fatalf("step %d: the recorded raw_response is no action: %v", ev.Step, err)
			}
			switch {
			case a.ToolCall != nil:
				if ev.ActionType == nil || *ev.ActionType != gen.ActionTypeToolCall || ev.ToolName == nil || *ev.ToolName != a.ToolCall.ToolName {
					t.Fatalf("step %d: raw_response is a %s call, the event says %+v", ev.Step, a.ToolCall.ToolName, ev)
				}
			case a.Finish != nil:
				if ev.ActionType == nil || *ev.ActionType != gen.ActionTypeFinish || ev.Output == nil || *ev.Output != trace.Summary(a.Finish.Answer) {
					t.Fatalf("step %d: raw_response is a finish, the event says %+v", ev.Step, ev)
				}
			}
		case gen.TraceEventTypeModelFeedback:
			if ev.RawResponse == nil {
				t.Fatalf("step %d: model_feedback without raw_response", ev.Step)
			}
		}
	}
}

// CallTrace lists the model_action and observation events of a trace as
// "step type call_id", with each observation's output summary.
func CallTrace(events []gen.TraceEvent) []string {
	var out []string
	for _, ev := range events {
		if ev.EventType != gen.TraceEventTypeModelAction && ev.EventType != gen.TraceEventTypeObservation {
			continue
		}
		line := fmt.Sprintf("%d %s", ev.Step, ev.EventType)
		if ev.CallId != nil {
			line += " " + *ev.CallId
		}
		if ev.EventType == gen.TraceEventTypeObservation {
			line += " " + *ev.Output
		}
		out = append(out, line)
	}
	return out
}
