package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/specdoc"
	"github.com/specloop/specloop/model"
	"github.com/specloop/specloop/model/anthropic"
	"github.com/specloop/specloop/model/modeltest"
	"github.com/specloop/specloop/trace"
)

var multiplyArgs = map[string]any{"left": 12.0, "operation": "multiply", "right": 7.0}

// runTask runs modeltest.Task with m, the calculator runtime and raw
// recording.
func runTask(t *testing.T, m agent.Model, opts agent.Options) (gen.RunResult, []gen.TraceEvent, error) {
	t.Helper()
	var rec modeltest.Recorder
	opts.Tools = modeltest.Runtime(t)
	opts.Trace = &rec
	opts.RecordRaw = true
	if opts.MaxSteps == 0 {
		opts.MaxSteps = 5
	}
	res, err := agent.Run(context.Background(), modeltest.Task, m, opts)
	return res, rec.Events, err
}

func jsonEqual(t *testing.T, what, got, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("%s is not JSON: %v", what, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(w, g); diff != "" {
		t.Fatalf("%s (-want +got):\n%s", what, diff)
	}
}

func TestToolUseObservationAnswer(t *testing.T) {
	t.Parallel()
	s := newServer(t, ok(t, "tool_use.json"), ok(t, "finish_tool.json"))
	res, events, err := runTask(t, newModel(t, s, nil), agent.Options{})
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
	jsonEqual(t, "raw tool call", raws[0], `{"type":"tool_call","tool_name":"calculator","arguments":{"left":12,"operation":"multiply","right":7},"call_id":"toolu_01A09q90qw90lq917835lq9"}`)
	jsonEqual(t, "raw finish", raws[1], `{"type":"finish","answer":"12 x 7 = 84."}`)

	reqs := s.requests()
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
	system := reqs[0]["system"].([]any)[0].(map[string]any)["text"].(string)
	if !strings.Contains(system, "finish") {
		t.Fatalf("the system prompt does not explain the finish tool: %q", system)
	}
	if reqs[0]["model"] != "claude-sonnet-4-5" || reqs[0]["max_tokens"] != float64(anthropic.DefaultMaxOutputTokens) {
		t.Fatalf("model/max_tokens = %v/%v", reqs[0]["model"], reqs[0]["max_tokens"])
	}

	second := messages(t, reqs[1])
	if got := roles(second); got != "user[text] assistant[tool_use] user[tool_result]" {
		t.Fatalf("second request = %q", got)
	}
	use := block(second, 1, 0)
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
	if key := s.auth(0); key != apiKey {
		t.Fatalf("API key sent = %q", key)
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

func TestToolsDerivedFromSpec(t *testing.T) {
	t.Parallel()
	s := newServer(t, ok(t, "finish_tool.json"))
	if _, err := modeltest.Ask(t, context.Background(), newModel(t, s, nil), modeltest.Task, agent.NewHistory()); err != nil {
		t.Fatal(err)
	}
	tools, _ := s.requests()[0]["tools"].([]any)
	specs := modeltest.Runtime(t).Specs()
	if len(tools) != len(specs)+1 {
		t.Fatalf("%d tools offered, want the %d runtime tools and finish", len(tools), len(specs))
	}
	roundTrip := func(v any) any {
		data, _ := json.Marshal(v)
		var out any
		_ = json.Unmarshal(data, &out)
		return out
	}
	for i, sp := range specs {
		tool := tools[i].(map[string]any)
		if tool["name"] != sp.Name {
			t.Fatalf("tool %d = %v, want %s", i, tool["name"], sp.Name)
		}
		desc := tool["description"].(string)
		if sp.ErrorDescription != "" && strings.Contains(desc, sp.ErrorDescription) {
			t.Fatalf("%s: the description carries the error description, which error results already give", sp.Name)
		}
		for _, part := range []string{sp.Description, sp.OutputDescription} {
			if !strings.Contains(desc, part) {
				t.Fatalf("%s: description %q lacks %q", sp.Name, desc, part)
			}
		}
		if diff := cmp.Diff(roundTrip(sp.InputSchema), tool["input_schema"]); diff != "" {
			t.Fatalf("%s: input_schema differs from the spec's (-spec +sent):\n%s", sp.Name, diff)
		}
	}
	doc, err := specdoc.Load()
	if err != nil {
		t.Fatal(err)
	}
	finish := doc.Components.Schemas[reflect.TypeFor[gen.Finish]().Name()].Value
	tool := tools[len(specs)].(map[string]any)
	if tool["name"] != string(gen.ActionTypeFinish) || tool["description"] != finish.Description {
		t.Fatalf("finish tool = %v", tool)
	}
	schema := tool["input_schema"].(map[string]any)
	props := schema["properties"].(map[string]any)
	if _, ok := props["type"]; ok {
		t.Fatalf("the finish tool must not ask for the type: %v", props)
	}
	if props["answer"].(map[string]any)["description"] != finish.Properties["answer"].Value.Description {
		t.Fatalf("finish answer = %v", props["answer"])
	}
	if diff := cmp.Diff([]any{"answer"}, schema["required"]); diff != "" {
		t.Fatalf("finish required (-want +got):\n%s", diff)
	}
}

func TestHistoryRendering(t *testing.T) {
	t.Parallel()
	s := newServer(t, ok(t, "finish_tool.json"))
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
	msgs := messages(t, s.requests()[0])
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

func TestMalformedInputThenRecovery(t *testing.T) {
	t.Parallel()
	s := newServer(t, ok(t, "malformed_input.json"), ok(t, "tool_use.json"), ok(t, "finish_tool.json"))
	res, events, err := runTask(t, newModel(t, s, nil), agent.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitReason != gen.ExitReasonFinished || res.StepsUsed != 3 {
		t.Fatalf("result = %+v", res)
	}
	fb := events[1]
	if fb.EventType != gen.TraceEventTypeModelFeedback || *fb.FeedbackKind != gen.FeedbackKindInvalidModelOutput {
		t.Fatalf("step 1 = %+v, want invalid-output feedback", fb)
	}
	if diff := cmp.Diff(&gen.Usage{InputTokens: 472, OutputTokens: 40}, fb.Usage); diff != "" {
		t.Fatalf("feedback usage (-want +got):\n%s", diff)
	}
	if got := roles(messages(t, s.requests()[1])); got != "user[text,text]" {
		t.Fatalf("after feedback = %q", got)
	}
	if got := roles(messages(t, s.requests()[2])); got != "user[text,text] assistant[tool_use] user[tool_result]" {
		t.Fatalf("after recovery = %q", got)
	}
}

func TestInvalidReplies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file    string
		message string
		raw     string
	}{
		{"empty.json", "neither a tool call nor text", ""},
		{"refusal.json", "the model refused", "I can't help with that."},
		{"max_tokens.json", "output token limit", "To compute 12 x 7, I will first"},
		{"unknown_tool.json", "names a tool that does not exist; the tools are: calculator, finish", "get_weather"},
		{"malformed_input.json", "the arguments are not a JSON object", `"{\"left\": 12, \"operation\": \"multiply\""`},
		// Text is no action: a model thinking aloud must not end the run.
		{"text_only.json", "text but no tool call, and only tool calls are acted on; call a tool to go on, or call finish", "12 x 7 = 84."},
		// A tool_use cut off by max_tokens holds a partial input that may
		// still be an object: it must never run.
		{"max_tokens_tool_use.json", "output token limit in the middle of a tool call, so no call of it was run; make smaller calls", ""},
		{"context_window_stop.json", "output token limit", "The answer so far is"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			s := newServer(t, ok(t, tt.file))
			_, err := modeltest.Ask(t, context.Background(), newModel(t, s, nil), modeltest.Task, agent.NewHistory())
			var inv *agent.InvalidOutputError
			if !errors.As(err, &inv) {
				t.Fatalf("err = %v, want invalid output", err)
			}
			if !strings.Contains(inv.Message, tt.message) {
				t.Fatalf("message = %q, want it to contain %q", inv.Message, tt.message)
			}
			if tt.raw != "" && strings.Contains(inv.Message, tt.raw) {
				t.Fatalf("the message repeats the output: %q", inv.Message)
			}
			if inv.Raw != tt.raw {
				t.Fatalf("raw = %q, want %q", inv.Raw, tt.raw)
			}
			if inv.Usage == nil || inv.Usage.InputTokens != 472 {
				t.Fatalf("usage = %+v, want the reply's", inv.Usage)
			}
		})
	}
}

func TestFinishTool(t *testing.T) {
	t.Parallel()
	s := newServer(t, ok(t, "finish_tool.json"))
	a, err := modeltest.Ask(t, context.Background(), newModel(t, s, nil), modeltest.Task, agent.NewHistory())
	if err != nil {
		t.Fatal(err)
	}
	if a.Finish == nil || a.Finish.Answer != "12 x 7 = 84." {
		t.Fatalf("action = %+v", a)
	}
	jsonEqual(t, "raw", a.Raw, `{"type":"finish","answer":"12 x 7 = 84."}`)
}

// Several tool_use blocks are one turn: one step, one request, each
// call's observation tied to its id in the trace, and the next request
// carries both tool_use blocks in one assistant message followed by one
// user message with their tool_result blocks, in order.
func TestParallelToolUseIsOneTurn(t *testing.T) {
	t.Parallel()
	s := newServer(t, ok(t, "parallel_tool_use.json"), ok(t, "finish_tool.json"))
	res, events, err := runTask(t, newModel(t, s, nil), agent.Options{MaxSteps: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitReason != gen.ExitReasonFinished || res.StepsUsed != 2 {
		t.Fatalf("result = %+v, want finished in 2 steps: a turn is one step", res)
	}
	if n := s.count(); n != 2 {
		t.Fatalf("%d requests, want 2", n)
	}
	want := []string{
		"1 model_action toolu_01First",
		"1 model_action toolu_02Second",
		"1 observation toolu_01First " + trace.Summary("84"),
		"1 observation toolu_02Second " + trace.Summary("4"),
		"2 model_action",
	}
	if diff := cmp.Diff(want, modeltest.CallTrace(events)); diff != "" {
		t.Fatalf("trace (-want +got):\n%s", diff)
	}
	msgs := messages(t, s.requests()[1])
	if got := roles(msgs); got != "user[text] assistant[tool_use,tool_use] user[tool_result,tool_result]" {
		t.Fatalf("messages = %q", got)
	}
	for j, id := range []string{"toolu_01First", "toolu_02Second"} {
		if block(msgs, 1, j)["id"] != id || block(msgs, 2, j)["tool_use_id"] != id {
			t.Fatalf("tool_use %d and its result are not tied to %s", j, id)
		}
	}
}

// A finish after a tool_use in the same reply ends the run in that step,
// after the call ran.
func TestFinishAfterToolUseInOneTurn(t *testing.T) {
	t.Parallel()
	s := newServer(t, ok(t, "parallel_finish.json"))
	res, events, err := runTask(t, newModel(t, s, nil), agent.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitReason != gen.ExitReasonFinished || res.StepsUsed != 1 || *res.Answer != "12 x 7 = 84." {
		t.Fatalf("result = %+v", res)
	}
	want := []string{"1 model_action toolu_01Calc", "1 model_action", "1 observation toolu_01Calc " + trace.Summary("84")}
	if diff := cmp.Diff(want, modeltest.CallTrace(events)); diff != "" {
		t.Fatalf("trace (-want +got):\n%s", diff)
	}
}

// A tool_use whose input breaks the tool's schema gets an error
// tool_result; the other call of the turn still runs.
func TestInvalidToolUseAmongValidOnes(t *testing.T) {
	t.Parallel()
	s := newServer(t, ok(t, "parallel_invalid_argument.json"), ok(t, "finish_tool.json"))
	res, _, err := runTask(t, newModel(t, s, nil), agent.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitReason != gen.ExitReasonFinished || res.StepsUsed != 2 {
		t.Fatalf("result = %+v", res)
	}
	msgs := messages(t, s.requests()[1])
	bad, good := block(msgs, 2, 0), block(msgs, 2, 1)
	if bad["tool_use_id"] != "toolu_01Bad" || bad["is_error"] != true {
		t.Fatalf("the bad call's result = %v", bad)
	}
	if good["tool_use_id"] != "toolu_02Good" || good["is_error"] == true || !strings.Contains(fmt.Sprint(good["content"]), "84") {
		t.Fatalf("the good call's result = %v", good)
	}
}

// The Model keeps no state: asking twice with the same history asks the
// provider twice, for the same turn.
func TestStateless(t *testing.T) {
	t.Parallel()
	s := newServer(t, ok(t, "parallel_tool_use.json"), ok(t, "parallel_tool_use.json"))
	m := newModel(t, s, nil)
	turn, err := m.Next(context.Background(), modeltest.Request(t, agent.NewHistory()))
	if err != nil || len(turn.Actions) != 2 {
		t.Fatalf("turn = %+v, %v", turn, err)
	}
	again, err := m.Next(context.Background(), modeltest.Request(t, agent.NewHistory()))
	if err != nil || !cmp.Equal(again, turn) {
		t.Fatalf("the second turn = %+v, %v; want the first again", again, err)
	}
	if n := s.count(); n != 2 {
		t.Fatalf("%d requests, want 2", n)
	}
}

func TestRateLimitThenSuccessHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	s := newServer(t,
		reply{status: http.StatusTooManyRequests, header: map[string]string{"Retry-After": "1"}, body: testdata(t, "error_429.json")},
		ok(t, "tool_use.json"),
	)
	a, err := modeltest.Ask(t, context.Background(), newModel(t, s, nil), modeltest.Task, agent.NewHistory())
	if err != nil {
		t.Fatal(err)
	}
	if a.ToolCall == nil {
		t.Fatalf("action = %+v", a)
	}
	times := s.arrivals()
	if len(times) != 2 {
		t.Fatalf("%d requests, want 2", len(times))
	}
	// A lower bound only: the SDK waited as long as Retry-After asked.
	if gap := times[1].Sub(times[0]); gap < 950*time.Millisecond {
		t.Fatalf("retried after %v, before Retry-After's 1s", gap)
	}
}

func TestServerErrorsExhaustRetries(t *testing.T) {
	t.Parallel()
	fail := reply{status: http.StatusInternalServerError, header: map[string]string{"Retry-After": "0"}, body: testdata(t, "error_500.json")}
	overloaded := reply{status: 529, header: map[string]string{"Retry-After": "0"}, body: testdata(t, "error_529.json")}
	s := newServer(t, fail, fail, overloaded)
	m := newModel(t, s, func(c *anthropic.Config) { c.MaxRetries = 2 })
	res, events, err := runTask(t, m, agent.Options{})
	var pe *model.ProviderError
	if !errors.As(err, &pe) || pe.Retries != 2 {
		t.Fatalf("Run error %v, want a *model.ProviderError after 2 retries", err)
	}
	want := "anthropic: request failed after 2 retries: 529 (overloaded_error)"
	if res.ExitReason != gen.ExitReasonModelError || res.Error == nil || !strings.Contains(*res.Error, want) {
		t.Fatalf("result = %+v, want model_error with %q", res, want)
	}
	if n := s.count(); n != 3 {
		t.Fatalf("%d requests, want 3", n)
	}
	last := events[len(events)-1]
	if last.EventType != gen.TraceEventTypeRunFinished || *last.ExitReason != gen.ExitReasonModelError || !strings.Contains(*last.Error, want) {
		t.Fatalf("run_finished = %+v", last)
	}
}

func TestClientErrorIsNotRetried(t *testing.T) {
	t.Parallel()
	s := newServer(t, reply{status: http.StatusUnauthorized, body: testdata(t, "error_401.json")})
	_, err := modeltest.Ask(t, context.Background(), newModel(t, s, nil), modeltest.Task, agent.NewHistory())
	var pe *model.ProviderError
	if !errors.As(err, &pe) || pe.StatusCode != http.StatusUnauthorized || pe.Retries != 0 {
		t.Fatalf("err = %v, want a provider error for 401", err)
	}
	if got := err.Error(); got != "anthropic: request failed: 401 Unauthorized (authentication_error)" {
		t.Fatalf("error = %q", got)
	}
}

func TestCancelMidRequest(t *testing.T) {
	t.Parallel()
	s := newServer(t, reply{block: true})
	m := newModel(t, s, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-s.arrived
		cancel()
	}()
	done := make(chan gen.RunResult, 1)
	go func() {
		res, _ := agent.Run(ctx, modeltest.Task, m, agent.Options{Tools: modeltest.Runtime(t)})
		done <- res
	}()
	select {
	case res := <-done:
		if res.ExitReason != gen.ExitReasonCancelled {
			t.Fatalf("result = %+v, want cancelled", res)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the run did not end within 10s of the cancellation")
	}
}

func TestRequestTimeout(t *testing.T) {
	t.Parallel()
	s := newServer(t, reply{block: true})
	m := newModel(t, s, func(c *anthropic.Config) { c.Timeout = 100 * time.Millisecond; c.MaxRetries = -1 })
	_, err := modeltest.Ask(t, context.Background(), m, modeltest.Task, agent.NewHistory())
	var pe *model.ProviderError
	if !errors.As(err, &pe) || pe.Timeout != 100*time.Millisecond {
		t.Fatalf("err = %v, want a provider timeout", err)
	}
	if got := err.Error(); got != "anthropic: request timed out after 100ms" {
		t.Fatalf("error = %q", got)
	}
}

func TestTokenBudgetEndsRun(t *testing.T) {
	t.Parallel()
	s := newServer(t, ok(t, "tool_use.json"), ok(t, "finish_tool.json"))
	res, _, err := runTask(t, newModel(t, s, nil), agent.Options{TokenBudget: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitReason != gen.ExitReasonTokenBudgetExceeded || res.StepsUsed != 2 || res.Answer != nil {
		t.Fatalf("result = %+v", res)
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
	env := map[string]string{anthropic.EnvAPIKey: "sk-ant-env", anthropic.EnvBaseURL: "http://proxy:4000"}
	cfg := anthropic.Config{Model: "m"}.WithEnv(func(k string) string { return env[k] })
	if cfg.APIKey != "sk-ant-env" || cfg.BaseURL != "http://proxy:4000" {
		t.Fatalf("WithEnv = %+v", cfg)
	}
}

// message renders a conformance turn as a Messages response.
func message(turn modeltest.Turn, n int) []byte {
	var content []any
	stop := "tool_use"
	use := func(name string, input json.RawMessage) {
		content = append(content, map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d", n), "name": name, "input": input})
	}
	switch {
	case turn.Parallel != nil:
		for k, a := range turn.Parallel {
			name, input := "finish", []byte(nil)
			if a.ToolCall != nil {
				name = a.ToolCall.ToolName
				input, _ = json.Marshal(a.ToolCall.Arguments)
			} else {
				input, _ = json.Marshal(map[string]any{"answer": a.Finish.Answer})
			}
			content = append(content, map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d_%d", n, k), "name": name, "input": json.RawMessage(input)})
		}
	case turn.ToolCall != nil:
		args, _ := json.Marshal(turn.ToolCall.Arguments)
		use(turn.ToolCall.ToolName, args)
	case turn.Finish != nil:
		input, _ := json.Marshal(map[string]any{"answer": turn.Finish.Answer})
		use("finish", input)
	case turn.Text != "":
		content, stop = []any{map[string]any{"type": "text", "text": turn.Text}}, "end_turn"
	default:
		text, _ := json.Marshal(modeltest.InvalidText) // input that is a string, not an object
		use("calculator", text)
	}
	body, _ := json.Marshal(map[string]any{
		"id": fmt.Sprintf("msg_%d", n), "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
		"content": content, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 50 + n, "output_tokens": 10},
	})
	return body
}

func TestConformance(t *testing.T) {
	t.Parallel()
	modeltest.Run(t, func(t *testing.T, turns []modeltest.Turn) agent.Model {
		return newModel(t, scripted(t, turns), nil)
	})
}

// TestFromConfigReadsEnv: model.FromConfig takes the key and the base URL
// from the environment.
func TestFromConfigReadsEnv(t *testing.T) {
	var mc gen.ModelConfig
	if err := mc.FromAnthropicModelConfig(gen.AnthropicModelConfig{Provider: gen.AnthropicModelConfigProviderAnthropic, Model: "claude-sonnet-4-5"}); err != nil {
		t.Fatal(err)
	}
	s := newServer(t, ok(t, "finish_tool.json"))
	t.Setenv(anthropic.EnvAPIKey, "sk-ant-from-env")
	t.Setenv(anthropic.EnvBaseURL, s.srv.URL)
	m, err := model.FromConfig(mc, model.Options{HTTPClient: s.srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := modeltest.Ask(t, context.Background(), m, modeltest.Task, agent.NewHistory()); err != nil {
		t.Fatal(err)
	}
	if got := s.auth(0); got != "sk-ant-from-env" {
		t.Fatalf("API key sent = %q", got)
	}
	t.Setenv(anthropic.EnvAPIKey, "")
	t.Setenv(anthropic.EnvBaseURL, "")
	if _, err := model.FromConfig(mc, model.Options{}); !errors.Is(err, anthropic.ErrNoAPIKey) {
		t.Fatalf("err = %v, want ErrNoAPIKey", err)
	}
}

// Tools a provider cannot be offered (one named like the finish tool, two
// of one name) fail the request before anything is sent.
func TestBadTools(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	m := newModel(t, s, nil)
	specs := modeltest.Runtime(t).Specs()
	for _, tt := range []struct {
		tools []gen.ToolSpec
		want  string
	}{
		{append(slices.Clone(specs), gen.ToolSpec{Name: "finish"}), "clashes with the finish tool"},
		{append(slices.Clone(specs), specs[0]), "two tools are named"},
	} {
		req := modeltest.Request(t, agent.NewHistory())
		req.Tools = tt.tools
		if _, err := m.Next(context.Background(), req); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Fatalf("err = %v, want %q", err, tt.want)
		}
	}
	if n := s.count(); n != 0 {
		t.Fatalf("%d requests sent, want none", n)
	}
}
