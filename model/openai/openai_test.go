package openai_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model/modeltest"
	"github.com/specloop/specloop/model/openai"
)

func TestToolCallObservationAnswer(t *testing.T) {
	t.Parallel()
	s := modeltest.NewServer(t, codec, ok(t, "tool_call.json"), ok(t, "finish_call.json"))
	res, events, err := modeltest.RunTask(t, newModel(t, s, nil), agent.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitReason != gen.ExitReasonFinished || res.Answer == nil || *res.Answer != "12 x 7 = 84." || res.StepsUsed != 2 {
		t.Fatalf("result = %+v", res)
	}
	if diff := cmp.Diff(&gen.Usage{InputTokens: 82 + 110, OutputTokens: 17 + 15}, res.Usage); diff != "" {
		t.Fatalf("run usage (-want +got):\n%s", diff)
	}

	// The trace records each call's usage and, with raw recording, the
	// action in the spec's wire form.
	var usages []gen.Usage
	var raws []string
	for _, ev := range events {
		if ev.EventType == gen.TraceEventTypeModelAction {
			usages = append(usages, *ev.Usage)
			raws = append(raws, *ev.RawResponse)
		}
	}
	if diff := cmp.Diff([]gen.Usage{{InputTokens: 82, OutputTokens: 17}, {InputTokens: 110, OutputTokens: 15}}, usages); diff != "" {
		t.Fatalf("usage per model call (-want +got):\n%s", diff)
	}
	modeltest.JSONEqual(t, "raw tool call", raws[0], `{"type":"tool_call","tool_name":"calculator","arguments":{"left":12,"operation":"multiply","right":7},"call_id":"call_abc123"}`)
	modeltest.JSONEqual(t, "raw finish", raws[1], `{"type":"finish","answer":"12 x 7 = 84."}`)

	reqs := s.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	first := messages(t, reqs[0])
	if got := roles(first); got != "system user" {
		t.Fatalf("first request roles = %q", got)
	}
	if first[1]["content"] != modeltest.Task.Prompt {
		t.Fatalf("the user message is not the task: %v", first[1]["content"])
	}

	// The second request carries the call and its result, tied by call id.
	second := messages(t, reqs[1])
	if got := roles(second); got != "system user assistant+tool_calls tool" {
		t.Fatalf("second request roles = %q", got)
	}
	call := second[2]["tool_calls"].([]any)[0].(map[string]any)
	fn := call["function"].(map[string]any)
	if call["id"] != "call_abc123" || call["type"] != "function" || fn["name"] != "calculator" {
		t.Fatalf("assistant tool call = %v", call)
	}
	modeltest.JSONEqual(t, "replayed arguments", fn["arguments"].(string), `{"left":12,"operation":"multiply","right":7}`)
	if second[3]["tool_call_id"] != "call_abc123" || second[3]["content"] != "84" {
		t.Fatalf("tool message = %v", second[3])
	}
}

func TestHistoryRendering(t *testing.T) {
	t.Parallel()
	s := modeltest.NewServer(t, codec, ok(t, "finish_call.json"))
	m := newModel(t, s, nil)
	code := gen.ErrorCodeDivisionByZero
	checkMsg := "The completion check failed with exit code 1, so the task is not finished."
	history := agent.NewHistory(
		agent.Item{ToolCall: &gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: "calculator", Arguments: map[string]any{"left": 1.0, "operation": "divide", "right": 0.0}}},
		agent.Item{Observation: &gen.Observation{Type: gen.ObservationTypeObservation, ToolName: "calculator", IsError: true, ErrorCode: &code, Content: "division by zero"}},
		agent.Item{Feedback: &gen.ModelFeedback{Type: gen.ModelFeedbackTypeModelFeedback, Kind: gen.FeedbackKindInvalidModelOutput, Message: "tool call 1 (calculator): the arguments are not a JSON object"}},
		agent.Item{Finish: &gen.Finish{Type: gen.FinishTypeFinish, Answer: "42"}},
		agent.Item{Feedback: &gen.ModelFeedback{Type: gen.ModelFeedbackTypeModelFeedback, Kind: gen.FeedbackKindFinishRejected, Message: checkMsg}},
	)
	if _, err := modeltest.Ask(t, context.Background(), m, modeltest.Task, history); err != nil {
		t.Fatal(err)
	}
	msgs := messages(t, s.Requests()[0])
	if got := roles(msgs); got != "system user assistant+tool_calls tool user assistant+tool_calls tool" {
		t.Fatalf("roles = %q", got)
	}
	// A call without a call_id gets one from its position, used by its result too.
	call := msgs[2]["tool_calls"].([]any)[0].(map[string]any)
	if call["id"] != "call_0" || msgs[3]["tool_call_id"] != "call_0" {
		t.Fatalf("synthesized ids: call %v, result %v", call["id"], msgs[3]["tool_call_id"])
	}
	if msgs[3]["content"] != "ERROR (division_by_zero): division by zero" {
		t.Fatalf("error observation = %q", msgs[3]["content"])
	}
	if fb := msgs[4]["content"].(string); !strings.Contains(fb, "not a valid action") || !strings.Contains(fb, "the arguments are not a JSON object") {
		t.Fatalf("feedback message = %q", fb)
	}
	fin := msgs[5]["tool_calls"].([]any)[0].(map[string]any)
	fn := fin["function"].(map[string]any)
	if fn["name"] != "finish" || fin["id"] != "call_3" {
		t.Fatalf("rejected finish call = %v", fin)
	}
	modeltest.JSONEqual(t, "finish arguments", fn["arguments"].(string), `{"answer":"42"}`)
	if msgs[6]["tool_call_id"] != "call_3" || msgs[6]["content"] != "ERROR: "+checkMsg {
		t.Fatalf("finish rejection = %v", msgs[6])
	}
}

// Parallel tool calls are one turn (modeltest's RunTurn): the next
// request carries both calls in one assistant message followed by their
// results.
func TestParallelToolCallsAreOneTurn(t *testing.T) {
	t.Parallel()
	s := modeltest.NewServer(t, codec, ok(t, "parallel_tool_calls.json"), ok(t, "finish_call.json"))
	res, _, err := modeltest.RunTask(t, newModel(t, s, nil), agent.Options{MaxSteps: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitReason != gen.ExitReasonFinished || res.StepsUsed != 2 {
		t.Fatalf("result = %+v, want finished in 2 steps: a turn is one step", res)
	}
	if n := s.Count(); n != 2 {
		t.Fatalf("%d requests, want 2", n)
	}
	msgs := messages(t, s.Requests()[1])
	if got := roles(msgs); got != "system user assistant+tool_calls tool tool" {
		t.Fatalf("roles = %q, want one assistant message with both calls", got)
	}
	calls := msgs[2]["tool_calls"].([]any)
	if len(calls) != 2 {
		t.Fatalf("assistant message has %d tool calls, want 2", len(calls))
	}
	for i, id := range []string{"call_first1", "call_second2"} {
		if calls[i].(map[string]any)["id"] != id || msgs[3+i]["tool_call_id"] != id {
			t.Fatalf("call %d and its result are not tied to %s: %v %v", i, id, calls[i], msgs[3+i])
		}
	}
	if msgs[3]["content"] != "84" || msgs[4]["content"] != "4" {
		t.Fatalf("results = %v, %v", msgs[3]["content"], msgs[4]["content"])
	}
}

// A compatible server (here llama.cpp's) may send no usage.
func TestMissingUsage(t *testing.T) {
	t.Parallel()
	s := modeltest.NewServer(t, codec, ok(t, "no_usage.json"))
	a, err := modeltest.Ask(t, context.Background(), newModel(t, s, nil), modeltest.Task, agent.NewHistory())
	if err != nil || a.Finish == nil || a.Usage != nil {
		t.Fatalf("action %+v, %v; want a finish without usage", a, err)
	}
}

func TestNewConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  openai.Config
		want string
	}{
		{"no key for OpenAI", openai.Config{Model: "gpt-4o-mini"}, "openai: no API key: set OPENAI_API_KEY"},
		{"no key for OpenAI, explicit URL", openai.Config{Model: "gpt-4o-mini", BaseURL: "https://api.openai.com/v1/"}, "openai: no API key: set OPENAI_API_KEY"},
		{"no model", openai.Config{APIKey: "k"}, "openai: no model name"},
		{"relative base URL", openai.Config{Model: "m", BaseURL: "localhost:11434/v1"}, "openai: the base URL must be an absolute http or https URL"},
		{"local server without key", openai.Config{Model: "llama3.1", BaseURL: "http://localhost:11434/v1"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := openai.New(tt.cfg)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("New: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("New error = %v, want %q", err, tt.want)
			}
		})
	}
	if _, err := openai.New(openai.Config{Model: "m"}); !errors.Is(err, openai.ErrNoAPIKey) {
		t.Fatalf("want ErrNoAPIKey, got %v", err)
	}
}

// TestFromConfigReadsEnv: model.FromConfig takes the key and the base URL
// from the environment.
func TestFromConfigReadsEnv(t *testing.T) {
	var mc gen.ModelConfig
	if err := mc.FromOpenAIModelConfig(gen.OpenAIModelConfig{Provider: gen.OpenAIModelConfigProviderOpenai, Model: "gpt-4o-mini"}); err != nil {
		t.Fatal(err)
	}
	modeltest.RunFromConfig(t, provider, modeltest.Env{Config: mc, APIKey: openai.EnvAPIKey, BaseURL: openai.EnvBaseURL, ErrNoAPIKey: openai.ErrNoAPIKey})
}

// The model's own words beside its call are kept: on the turn (and so in
// the transcript and the progress lines), and sent back as the content of
// its assistant message, so the model keeps its plan from step to step.
func TestTheModelsTextGoesBack(t *testing.T) {
	t.Parallel()
	const said = "I suspect the comparison is inverted."
	withText := strings.Replace(string(modeltest.Testdata(t, "tool_call.json")), `"content": null`, `"content": "`+said+`"`, 1)
	s := modeltest.NewServer(t, codec, modeltest.OK([]byte(withText)), ok(t, "finish_call.json"))
	var texts []string
	res, events, err := modeltest.RunTask(t, newModel(t, s, nil), agent.Options{Observer: func(p agent.Progress) {
		if p.ToolCall != nil && p.ToolCall.Text != nil {
			texts = append(texts, *p.ToolCall.Text)
		}
	}})
	if err != nil || res.ExitReason != gen.ExitReasonFinished {
		t.Fatalf("result %+v, %v", res, err)
	}
	if len(texts) != 1 || texts[0] != said {
		t.Fatalf("the call's text = %q, want [%q]", texts, said)
	}
	for _, ev := range events {
		if ev.EventType == gen.TraceEventTypeModelAction && ev.Step == 1 {
			if ev.TextSummary == nil || !strings.HasPrefix(*ev.TextSummary, "chars=") {
				t.Fatalf("the trace keeps %v of the text, want its summary", ev.TextSummary)
			}
		}
	}
	second := messages(t, s.Requests()[1])
	if second[2]["content"] != said || second[2]["tool_calls"] == nil {
		t.Fatalf("the assistant message sent back = %v", second[2])
	}
}
