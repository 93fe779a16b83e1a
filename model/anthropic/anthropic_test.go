package anthropic_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model/anthropic"
	"github.com/specloop/specloop/model/modeltest"
)

var multiplyArgs = map[string]any{"left": 12.0, "operation": "multiply", "right": 7.0}

func TestToolUseObservationAnswer(t *testing.T) {
	t.Parallel()
	s := modeltest.NewServer(t, codec, ok(t, "tool_use.json"), ok(t, "finish_tool.json"))
	res, events, err := modeltest.RunTask(t, newModel(t, s, nil), agent.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitReason != gen.ExitReasonFinished || res.Answer == nil || *res.Answer != "12 x 7 = 84." || res.StepsUsed != 2 {
		t.Fatalf("result = %+v", res)
	}
	// Cache reads count as input tokens.
	if diff := cmp.Diff(&gen.Usage{InputTokens: 472 + 580 + 40, OutputTokens: 91 + 30}, res.Usage); diff != "" {
		t.Fatalf("run usage (-want +got):\n%s", diff)
	}
	var usages []gen.Usage
	var raws []string
	for _, ev := range events {
		if ev.EventType == gen.TraceEventTypeModelAction {
			usages = append(usages, *ev.Usage)
			raws = append(raws, *ev.RawResponse)
		}
	}
	if diff := cmp.Diff([]gen.Usage{{InputTokens: 472, OutputTokens: 91}, {InputTokens: 620, OutputTokens: 30}}, usages); diff != "" {
		t.Fatalf("usage per model call (-want +got):\n%s", diff)
	}
	modeltest.JSONEqual(t, "raw tool call", raws[0], `{"type":"tool_call","tool_name":"calculator","arguments":{"left":12,"operation":"multiply","right":7},"call_id":"toolu_01A09q90qw90lq917835lq9"}`)
	modeltest.JSONEqual(t, "raw finish", raws[1], `{"type":"finish","answer":"12 x 7 = 84."}`)

	reqs := s.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	first := messages(t, reqs[0])
	if got := roles(first); got != "user[text]" {
		t.Fatalf("first request = %q", got)
	}
	if block(first, 0, 0)["text"] != modeltest.Task.Prompt {
		t.Fatalf("the user message is not the task: %v", block(first, 0, 0))
	}

	second := messages(t, reqs[1])
	// The model's own words go back before its call, as it wrote them.
	if got := roles(second); got != "user[text] assistant[text,tool_use] user[tool_result]" {
		t.Fatalf("second request = %q", got)
	}
	if text := block(second, 1, 0)["text"]; text != "I'll multiply 12 by 7 with the calculator." {
		t.Fatalf("the assistant's text sent back = %v", text)
	}
	use := block(second, 1, 1)
	if use["id"] != "toolu_01A09q90qw90lq917835lq9" || use["name"] != "calculator" {
		t.Fatalf("tool_use = %v", use)
	}
	if diff := cmp.Diff(any(multiplyArgs), use["input"]); diff != "" {
		t.Fatalf("tool_use input (-want +got):\n%s", diff)
	}
	result := block(second, 2, 0)
	if result["tool_use_id"] != "toolu_01A09q90qw90lq917835lq9" || result["is_error"] != false || toolResultText(result) != "84" {
		t.Fatalf("tool_result = %v", result)
	}
}

// toolResultText returns the text of a tool_result block.
func toolResultText(b map[string]any) string {
	switch c := b["content"].(type) {
	case string:
		return c
	case []any:
		var parts []string
		for _, p := range c {
			parts = append(parts, p.(map[string]any)["text"].(string))
		}
		return strings.Join(parts, "")
	}
	return ""
}

func TestHistoryRendering(t *testing.T) {
	t.Parallel()
	s := modeltest.NewServer(t, codec, ok(t, "finish_tool.json"))
	code := gen.ErrorCodeDivisionByZero
	badID := "call.7" // not a valid tool_use id: replaced by a synthetic one
	checkMsg := "The completion check failed with exit code 1, so the task is not finished."
	history := agent.NewHistory(
		agent.Item{ToolCall: &gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: "calculator", CallId: &badID, Arguments: map[string]any{"left": 1.0, "operation": "divide", "right": 0.0}}},
		agent.Item{Observation: &gen.Observation{Type: gen.ObservationTypeObservation, ToolName: "calculator", CallId: &badID, IsError: true, ErrorCode: &code, Content: "division by zero"}},
		agent.Item{Feedback: &gen.ModelFeedback{Type: gen.ModelFeedbackTypeModelFeedback, Kind: gen.FeedbackKindInvalidModelOutput, Message: "tool call 1 (calculator): the arguments are not a JSON object"}},
		agent.Item{Finish: &gen.Finish{Type: gen.FinishTypeFinish, Answer: "42"}},
		agent.Item{Feedback: &gen.ModelFeedback{Type: gen.ModelFeedbackTypeModelFeedback, Kind: gen.FeedbackKindFinishRejected, Message: checkMsg}},
	)
	if _, err := modeltest.Ask(t, context.Background(), newModel(t, s, nil), modeltest.Task, history); err != nil {
		t.Fatal(err)
	}
	msgs := messages(t, s.Requests()[0])
	// The tool result and the feedback after it share one user message.
	if got := roles(msgs); got != "user[text] assistant[tool_use] user[tool_result,text] assistant[tool_use] user[tool_result]" {
		t.Fatalf("messages = %q", got)
	}
	use, result := block(msgs, 1, 0), block(msgs, 2, 0)
	if use["id"] != "call_0" || result["tool_use_id"] != "call_0" {
		t.Fatalf("synthesized ids: tool_use %v, tool_result %v", use["id"], result["tool_use_id"])
	}
	if result["is_error"] != true || toolResultText(result) != "ERROR (division_by_zero): division by zero" {
		t.Fatalf("error observation = %v", result)
	}
	if fb := block(msgs, 2, 1)["text"].(string); !strings.Contains(fb, "not a valid action") {
		t.Fatalf("feedback = %q", fb)
	}
	fin, rejected := block(msgs, 3, 0), block(msgs, 4, 0)
	if fin["name"] != "finish" || fin["id"] != "call_3" || rejected["tool_use_id"] != "call_3" {
		t.Fatalf("rejected finish = %v / %v", fin, rejected)
	}
	if diff := cmp.Diff(map[string]any{"answer": "42"}, fin["input"]); diff != "" {
		t.Fatalf("finish input (-want +got):\n%s", diff)
	}
	if rejected["is_error"] != true || toolResultText(rejected) != "ERROR: "+checkMsg {
		t.Fatalf("finish rejection = %v", rejected)
	}
}

// Several tool_use blocks are one turn (modeltest's RunTurn): the next
// request carries both tool_use blocks in one assistant message followed
// by one user message with their tool_result blocks, in order.
func TestParallelToolUseIsOneTurn(t *testing.T) {
	t.Parallel()
	s := modeltest.NewServer(t, codec, ok(t, "parallel_tool_use.json"), ok(t, "finish_tool.json"))
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
	if got := roles(msgs); got != "user[text] assistant[text,tool_use,tool_use] user[tool_result,tool_result]" {
		t.Fatalf("messages = %q", got)
	}
	for j, id := range []string{"toolu_01First", "toolu_02Second"} {
		if block(msgs, 1, j+1)["id"] != id || block(msgs, 2, j)["tool_use_id"] != id { // the text block first
			t.Fatalf("tool_use %d and its result are not tied to %s", j, id)
		}
	}
}

func TestNewConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  anthropic.Config
		want string
	}{
		{"no key for Anthropic", anthropic.Config{Model: "claude-sonnet-4-5"}, "anthropic: no API key: set ANTHROPIC_API_KEY"},
		{"no model", anthropic.Config{APIKey: "k"}, "anthropic: no model name"},
		{"relative base URL", anthropic.Config{Model: "m", BaseURL: "api.example.com"}, "absolute http or https URL"},
		{"proxy without key", anthropic.Config{Model: "m", BaseURL: "http://localhost:4000"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := anthropic.New(tt.cfg)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("New: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("New error = %v, want %q", err, tt.want)
			}
		})
	}
	if _, err := anthropic.New(anthropic.Config{Model: "m"}); !errors.Is(err, anthropic.ErrNoAPIKey) {
		t.Fatalf("want ErrNoAPIKey, got %v", err)
	}
}

// TestFromConfigReadsEnv: model.FromConfig takes the key and the base URL
// from the environment.
func TestFromConfigReadsEnv(t *testing.T) {
	var mc gen.ModelConfig
	if err := mc.FromAnthropicModelConfig(gen.AnthropicModelConfig{Provider: gen.AnthropicModelConfigProviderAnthropic, Model: "claude-sonnet-4-5"}); err != nil {
		t.Fatal(err)
	}
	modeltest.RunFromConfig(t, provider, modeltest.Env{Config: mc, APIKey: anthropic.EnvAPIKey, BaseURL: anthropic.EnvBaseURL, ErrNoAPIKey: anthropic.ErrNoAPIKey})
}
