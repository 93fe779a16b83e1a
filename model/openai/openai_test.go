package openai_test

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
	"github.com/specloop/specloop/model/modeltest"
	"github.com/specloop/specloop/model/openai"
	"github.com/specloop/specloop/trace"
)

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

func TestToolCallObservationAnswer(t *testing.T) {
	t.Parallel()
	s := newServer(t, ok(t, "tool_call.json"), ok(t, "finish_call.json"))
	res, events, err := runTask(t, newModel(t, s, nil), agent.Options{})
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
	jsonEqual(t, "raw tool call", raws[0], `{"type":"tool_call","tool_name":"calculator","arguments":{"left":12,"operation":"multiply","right":7},"call_id":"call_abc123"}`)
	jsonEqual(t, "raw finish", raws[1], `{"type":"finish","answer":"12 x 7 = 84."}`)

	reqs := s.requests()
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
	if !strings.Contains(first[0]["content"].(string), "finish") {
		t.Fatalf("the system prompt does not explain the finish tool: %q", first[0]["content"])
	}
	if reqs[0]["model"] != "gpt-4o-mini" {
		t.Fatalf("model = %v", reqs[0]["model"])
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
	jsonEqual(t, "replayed arguments", fn["arguments"].(string), `{"left":12,"operation":"multiply","right":7}`)
	if second[3]["tool_call_id"] != "call_abc123" || second[3]["content"] != "84" {
		t.Fatalf("tool message = %v", second[3])
	}
	if auth := s.auth(0); auth != "Bearer "+apiKey {
		t.Fatalf("Authorization = %q", auth)
	}
}

func TestToolsDerivedFromSpec(t *testing.T) {
	t.Parallel()
	s := newServer(t, ok(t, "finish_call.json"))
	m := newModel(t, s, nil)
	if _, err := modeltest.Ask(t, context.Background(), m, modeltest.Task, agent.NewHistory()); err != nil {
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
		fn := tool["function"].(map[string]any)
		if tool["type"] != "function" || fn["name"] != sp.Name {
			t.Fatalf("tool %d = %v, want %s", i, tool, sp.Name)
		}
		desc := fn["description"].(string)
		if sp.ErrorDescription != "" && strings.Contains(desc, sp.ErrorDescription) {
			t.Fatalf("%s: the description carries the error description, which error results already give", sp.Name)
		}
		for _, part := range []string{sp.Description, sp.OutputDescription} {
			if !strings.Contains(desc, part) {
				t.Fatalf("%s: description %q lacks %q", sp.Name, desc, part)
			}
		}
		if diff := cmp.Diff(roundTrip(sp.InputSchema), fn["parameters"]); diff != "" {
			t.Fatalf("%s: parameters differ from the spec's input schema (-spec +sent):\n%s", sp.Name, diff)
		}
	}

	// The finish tool comes from the spec's Finish schema, without the type
	// the adapter sets.
	doc, err := specdoc.Load()
	if err != nil {
		t.Fatal(err)
	}
	finish := doc.Components.Schemas[reflect.TypeFor[gen.Finish]().Name()].Value
	fn := tools[len(specs)].(map[string]any)["function"].(map[string]any)
	if fn["name"] != string(gen.ActionTypeFinish) || fn["description"] != finish.Description {
		t.Fatalf("finish tool = %v", fn)
	}
	params := fn["parameters"].(map[string]any)
	props := params["properties"].(map[string]any)
	// The adapter sets type and reasoning; the model gives the rest.
	if _, ok := props["type"]; ok || len(props) != len(finish.Properties)-2 {
		t.Fatalf("finish parameters %v should be the Finish properties without type and reasoning", props)
	}
	answer := props["answer"].(map[string]any)
	if answer["description"] != finish.Properties["answer"].Value.Description || answer["type"] != "string" {
		t.Fatalf("finish answer property = %v", answer)
	}
	if diff := cmp.Diff([]any{"answer"}, params["required"]); diff != "" {
		t.Fatalf("finish required (-want +got):\n%s", diff)
	}
	if params["additionalProperties"] != false {
		t.Fatalf("finish parameters must forbid other properties, as the spec does: %v", params)
	}
}

func TestHistoryRendering(t *testing.T) {
	t.Parallel()
	s := newServer(t, ok(t, "finish_call.json"))
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
	msgs := messages(t, s.requests()[0])
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
	jsonEqual(t, "finish arguments", fn["arguments"].(string), `{"answer":"42"}`)
	if msgs[6]["tool_call_id"] != "call_3" || msgs[6]["content"] != "ERROR: "+checkMsg {
		t.Fatalf("finish rejection = %v", msgs[6])
	}
}

func TestMalformedArgumentsThenRecovery(t *testing.T) {
	t.Parallel()
	s := newServer(t, ok(t, "malformed_arguments.json"), ok(t, "tool_call.json"), ok(t, "finish_call.json"))
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
	if diff := cmp.Diff(&gen.Usage{InputTokens: 82, OutputTokens: 14}, fb.Usage); diff != "" {
		t.Fatalf("feedback usage (-want +got):\n%s", diff)
	}
	if *fb.RawResponse != `{"left":12,"operation":"multiply","right":` {
		t.Fatalf("raw of the invalid output = %q", *fb.RawResponse)
	}
	msgs := messages(t, s.requests()[1])
	if got := roles(msgs); got != "system user user" {
		t.Fatalf("roles after feedback = %q", got)
	}
	text := msgs[2]["content"].(string)
	if !strings.Contains(text, "tool call 1 (calculator): the arguments are not a JSON object") || strings.Contains(text, `"right":`) {
		t.Fatalf("feedback = %q", text)
	}
	if got := roles(messages(t, s.requests()[2])); got != "system user user assistant+tool_calls tool" {
		t.Fatalf("roles after recovery = %q", got)
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
		{"refusal.json", "the model refused", "I'm sorry, I can't assist with that request."},
		{"truncated.json", "output token limit", "To compute 12 x 7, I will first"},
		{"unknown_tool.json", "names a tool that does not exist; the tools are: calculator, finish", "get_current_weather"},
		{"malformed_arguments.json", "the arguments are not a JSON object", `{"left":12,"operation":"multiply","right":`},
		// Text is no action: a model thinking aloud must not end the run.
		{"text_only.json", "text but no tool call, and only tool calls are acted on; call a tool to go on, or call finish", "12 x 7 = 84."},
		// Arguments cut off by the token limit: the model must learn why,
		// not just that they are not JSON (it would repeat the call).
		{"length_tool_call.json", "output token limit in the middle of a tool call, so no call of it was run; make smaller calls", ""},
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
			if inv.Usage == nil || inv.Usage.InputTokens != 82 {
				t.Fatalf("usage = %+v, want the reply's", inv.Usage)
			}
		})
	}
}

func TestFinishTool(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
		answer     string
		invalid    string
	}{
		{name: "answer", body: `{"answer":"12 x 7 = 84."}`, answer: "12 x 7 = 84."},
		{name: "missing answer", body: `{}`, invalid: "do not match its schema"},
		{name: "extra property", body: `{"answer":"x","confidence":1}`, invalid: "do not match its schema"},
		{name: "answer not a string", body: `{"answer":84}`, invalid: "do not match its schema"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var resp map[string]any
			if err := json.Unmarshal(testdata(t, "finish_call.json"), &resp); err != nil {
				t.Fatal(err)
			}
			msg := resp["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
			msg["tool_calls"].([]any)[0].(map[string]any)["function"].(map[string]any)["arguments"] = tt.body
			body, _ := json.Marshal(resp)
			s := newServer(t, reply{status: http.StatusOK, body: body})
			a, err := modeltest.Ask(t, context.Background(), newModel(t, s, nil), modeltest.Task, agent.NewHistory())
			if tt.invalid != "" {
				var inv *agent.InvalidOutputError
				if !errors.As(err, &inv) || !strings.Contains(inv.Message, tt.invalid) {
					t.Fatalf("err = %v, want invalid output containing %q", err, tt.invalid)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if a.Finish == nil || a.Finish.Answer != tt.answer {
				t.Fatalf("action = %+v", a)
			}
			jsonEqual(t, "raw", a.Raw, `{"type":"finish","answer":"12 x 7 = 84."}`)
		})
	}
}

func TestMissingUsage(t *testing.T) {
	t.Parallel()
	s := newServer(t, ok(t, "no_usage.json"))
	a, err := modeltest.Ask(t, context.Background(), newModel(t, s, nil), modeltest.Task, agent.NewHistory())
	if err != nil {
		t.Fatal(err)
	}
	if a.Finish == nil || a.Usage != nil {
		t.Fatalf("action = %+v, want a finish without usage", a)
	}
}

// Parallel tool calls are one turn: one step, one request, each call's
// observation tied to its call id in the trace, and the next request
// carries both calls in one assistant message followed by their results.
func TestParallelToolCallsAreOneTurn(t *testing.T) {
	t.Parallel()
	s := newServer(t, ok(t, "parallel_tool_calls.json"), ok(t, "finish_call.json"))
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
		"1 model_action call_first1",
		"1 model_action call_second2",
		"1 observation call_first1 " + trace.Summary("84"),
		"1 observation call_second2 " + trace.Summary("4"),
		"2 model_action",
	}
	if diff := cmp.Diff(want, modeltest.CallTrace(events)); diff != "" {
		t.Fatalf("trace (-want +got):\n%s", diff)
	}
	var usage []*gen.Usage
	for _, ev := range events {
		if ev.EventType == gen.TraceEventTypeModelAction {
			usage = append(usage, ev.Usage)
		}
	}
	if usage[0] == nil || usage[1] != nil || usage[2] == nil {
		t.Fatalf("usage belongs to a turn's first action only: %v", usage)
	}
	msgs := messages(t, s.requests()[1])
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

// A finish after a call in the same reply ends the run in that step,
// after the call ran.
func TestFinishAfterCallInOneTurn(t *testing.T) {
	t.Parallel()
	s := newServer(t, ok(t, "parallel_finish.json"))
	res, events, err := runTask(t, newModel(t, s, nil), agent.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitReason != gen.ExitReasonFinished || res.StepsUsed != 1 || *res.Answer != "12 x 7 = 84." {
		t.Fatalf("result = %+v", res)
	}
	want := []string{"1 model_action call_calc9", "1 model_action", "1 observation call_calc9 " + trace.Summary("84")}
	if diff := cmp.Diff(want, modeltest.CallTrace(events)); diff != "" {
		t.Fatalf("trace (-want +got):\n%s", diff)
	}
}

// A call whose arguments break the tool's schema gets an error
// observation; the other call of the turn still runs.
func TestInvalidCallAmongValidOnes(t *testing.T) {
	t.Parallel()
	s := newServer(t, ok(t, "parallel_invalid_argument.json"), ok(t, "finish_call.json"))
	res, events, err := runTask(t, newModel(t, s, nil), agent.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitReason != gen.ExitReasonFinished || res.StepsUsed != 2 {
		t.Fatalf("result = %+v", res)
	}
	var errs []bool
	for _, ev := range events {
		if ev.EventType == gen.TraceEventTypeObservation {
			errs = append(errs, *ev.IsError)
		}
	}
	if !slices.Equal(errs, []bool{true, false}) {
		t.Fatalf("observations failed = %v, want the bad call only", errs)
	}
	msgs := messages(t, s.requests()[1])
	if msgs[3]["tool_call_id"] != "call_bad1" || !strings.HasPrefix(msgs[3]["content"].(string), "ERROR (invalid_arguments)") {
		t.Fatalf("the bad call's result = %v", msgs[3])
	}
	if msgs[4]["tool_call_id"] != "call_good2" || msgs[4]["content"] != "84" {
		t.Fatalf("the good call's result = %v", msgs[4])
	}
}

// One malformed call spoils the whole reply: no call of it runs, the step
// is invalid-output feedback, and the next request says which call was
// wrong.
func TestMalformedCallAmongValidOnes(t *testing.T) {
	t.Parallel()
	s := newServer(t, ok(t, "parallel_malformed.json"), ok(t, "finish_call.json"))
	res, events, err := runTask(t, newModel(t, s, nil), agent.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitReason != gen.ExitReasonFinished || res.StepsUsed != 2 {
		t.Fatalf("result = %+v", res)
	}
	if got := modeltest.CallTrace(events); !slices.Equal(got, []string{"2 model_action"}) {
		t.Fatalf("trace = %q, want no call of the malformed reply run", got)
	}
	msgs := messages(t, s.requests()[1])
	if got := roles(msgs); got != "system user user" {
		t.Fatalf("roles = %q", got)
	}
	if text := msgs[2]["content"].(string); !strings.Contains(text, "tool call 2 (calculator)") {
		t.Fatalf("feedback = %q, want it to name the second call", text)
	}
}

// The Model keeps no state: asking twice with the same history asks the
// provider twice, for the same turn.
func TestStateless(t *testing.T) {
	t.Parallel()
	s := newServer(t, ok(t, "parallel_tool_calls.json"), ok(t, "parallel_tool_calls.json"))
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
		ok(t, "tool_call.json"),
	)
	a, err := modeltest.Ask(t, context.Background(), newModel(t, s, nil), modeltest.Task, agent.NewHistory())
	if err != nil {
		t.Fatal(err)
	}
	if a.ToolCall == nil {
		t.Fatalf("action = %+v", a)
	}
	if n := s.count(); n != 2 {
		t.Fatalf("%d requests, want 2", n)
	}
	// A lower bound only: the SDK waited as long as Retry-After asked.
	times := s.arrivals()
	if gap := times[1].Sub(times[0]); gap < 950*time.Millisecond {
		t.Fatalf("retried after %v, before Retry-After's 1s", gap)
	}
}

func TestServerErrorsExhaustRetries(t *testing.T) {
	t.Parallel()
	fail := reply{status: http.StatusInternalServerError, header: map[string]string{"Retry-After": "0"}, body: testdata(t, "error_500.json")}
	s := newServer(t, fail, fail, fail)
	m := newModel(t, s, func(c *openai.Config) { c.MaxRetries = 2 })
	res, events, err := runTask(t, m, agent.Options{})
	var pe *model.ProviderError
	if !errors.As(err, &pe) || pe.Retries != 2 {
		t.Fatalf("Run error %v, want a *model.ProviderError after 2 retries", err)
	}
	want := "openai: request failed after 2 retries: 500 Internal Server Error (server_error)"
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
	if strings.Contains(*res.Error, "Sorry about that") {
		t.Fatalf("the error repeats the provider's message: %q", *res.Error)
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
	if got := err.Error(); got != "openai: request failed: 401 Unauthorized (invalid_api_key)" {
		t.Fatalf("error = %q", got)
	}
	if s.count() != 1 {
		t.Fatalf("%d requests, want 1", s.count())
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
	m := newModel(t, s, func(c *openai.Config) { c.Timeout = 100 * time.Millisecond; c.MaxRetries = -1 })
	_, err := modeltest.Ask(t, context.Background(), m, modeltest.Task, agent.NewHistory())
	var pe *model.ProviderError
	if !errors.As(err, &pe) || pe.Timeout != 100*time.Millisecond {
		t.Fatalf("err = %v, want a provider timeout", err)
	}
	if got := err.Error(); got != "openai: request timed out after 100ms" {
		t.Fatalf("error = %q", got)
	}
}

func TestTokenBudgetEndsRun(t *testing.T) {
	t.Parallel()
	s := newServer(t, ok(t, "tool_call.json"), ok(t, "finish_call.json"))
	res, _, err := runTask(t, newModel(t, s, nil), agent.Options{TokenBudget: 150})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitReason != gen.ExitReasonTokenBudgetExceeded || res.StepsUsed != 2 || res.Answer != nil {
		t.Fatalf("result = %+v", res)
	}
	if diff := cmp.Diff(&gen.Usage{InputTokens: 192, OutputTokens: 32}, res.Usage); diff != "" {
		t.Fatalf("usage (-want +got):\n%s", diff)
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

func TestWithEnv(t *testing.T) {
	t.Parallel()
	env := map[string]string{openai.EnvAPIKey: "sk-env", openai.EnvBaseURL: "http://localhost:11434/v1"}
	getenv := func(k string) string { return env[k] }
	got := openai.Config{Model: "m"}.WithEnv(getenv)
	if got.APIKey != "sk-env" || got.BaseURL != "http://localhost:11434/v1" {
		t.Fatalf("WithEnv = %+v", got)
	}
	got = openai.Config{Model: "m", BaseURL: "http://flag:8000/v1"}.WithEnv(getenv)
	if got.BaseURL != "http://flag:8000/v1" {
		t.Fatalf("an explicit base URL must win over %s: %q", openai.EnvBaseURL, got.BaseURL)
	}
}

// completion renders a conformance turn as a Chat Completions response.
func completion(turn modeltest.Turn, n int) []byte {
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
	finish := "tool_calls"
	call := func(name, args string) {
		msg["tool_calls"] = []any{map[string]any{
			"id": fmt.Sprintf("call_%d", n), "type": "function",
			"function": map[string]any{"name": name, "arguments": args},
		}}
	}
	switch {
	case turn.Parallel != nil:
		var calls []any
		for k, a := range turn.Parallel {
			name, args := "finish", []byte(nil)
			if a.ToolCall != nil {
				name = a.ToolCall.ToolName
				args, _ = json.Marshal(a.ToolCall.Arguments)
			} else {
				args, _ = json.Marshal(map[string]any{"answer": a.Finish.Answer})
			}
			calls = append(calls, map[string]any{
				"id": fmt.Sprintf("call_%d_%d", n, k), "type": "function",
				"function": map[string]any{"name": name, "arguments": string(args)},
			})
		}
		msg["tool_calls"] = calls
	case turn.ToolCall != nil:
		args, _ := json.Marshal(turn.ToolCall.Arguments)
		call(turn.ToolCall.ToolName, string(args))
	case turn.Finish != nil:
		args, _ := json.Marshal(map[string]any{"answer": turn.Finish.Answer})
		call("finish", string(args))
	case turn.Text != "":
		msg["content"], finish = turn.Text, "stop"
	default:
		call("calculator", modeltest.InvalidText)
	}
	body, _ := json.Marshal(map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion", "created": 1741570283, "model": "gpt-4o-mini",
		"choices": []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": 50 + n, "completion_tokens": 10, "total_tokens": 60 + n},
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
	if err := mc.FromOpenAIModelConfig(gen.OpenAIModelConfig{Provider: gen.OpenAIModelConfigProviderOpenai, Model: "gpt-4o-mini"}); err != nil {
		t.Fatal(err)
	}
	s := newServer(t, ok(t, "finish_call.json"))
	t.Setenv(openai.EnvAPIKey, "sk-from-env")
	t.Setenv(openai.EnvBaseURL, s.srv.URL)
	m, err := model.FromConfig(mc, model.Options{HTTPClient: s.srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := modeltest.Ask(t, context.Background(), m, modeltest.Task, agent.NewHistory()); err != nil {
		t.Fatal(err)
	}
	if got := s.auth(0); got != "Bearer sk-from-env" {
		t.Fatalf("Authorization = %q", got)
	}
	t.Setenv(openai.EnvAPIKey, "")
	t.Setenv(openai.EnvBaseURL, "")
	if _, err := model.FromConfig(mc, model.Options{}); !errors.Is(err, openai.ErrNoAPIKey) {
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
