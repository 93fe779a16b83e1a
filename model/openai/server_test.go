package openai_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model/modeltest"
	"github.com/specloop/specloop/model/openai"
)

// codec is the Chat Completions wire format, as testdata's recorded
// bodies show it (TestCodecMatchesTestdata).
var codec = modeltest.Codec{
	Path: "/chat/completions",
	Key: func(r *http.Request) string {
		if key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			return key
		}
		return "" // a key anywhere else is not the bearer token the API wants
	},
	Reply: func(turn modeltest.Turn, n int, usage *gen.Usage) []byte {
		msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
		finish := "tool_calls"
		var calls []any
		for k, c := range turn.Calls() {
			calls = append(calls, map[string]any{
				"id": fmt.Sprintf("call_%d_%d", n, k), "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": c.Arguments},
			})
		}
		if calls != nil {
			msg["tool_calls"] = calls
		} else {
			msg["content"], finish = turn.Text, "stop"
		}
		resp := map[string]any{
			"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion", "created": 1741570283, "model": "gpt-4o-mini",
			"choices": []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": finish}},
		}
		if usage != nil {
			resp["usage"] = map[string]any{"prompt_tokens": usage.InputTokens, "completion_tokens": usage.OutputTokens, "total_tokens": usage.InputTokens + usage.OutputTokens}
		}
		body, _ := json.Marshal(resp)
		return body
	},
	OverWindow: func(tokens, window int) []byte {
		return fmt.Appendf(nil, `{"error":{"message":"This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, window, tokens)
	},
	Errors: []modeltest.ErrorReply{
		{Status: http.StatusTooManyRequests, File: "error_429.json", Code: "rate_limit_exceeded"},
		{Status: http.StatusInternalServerError, File: "error_500.json", Code: "server_error"},
		{Status: http.StatusUnauthorized, File: "error_401.json", Code: "invalid_api_key"},
	},
	BadRequests: []modeltest.BadRequest{
		// vLLM, DeepSeek and other compatible servers say it only in the message.
		{Name: "compatible server", Body: `{"error":{"message":"This model's maximum context length is 32768 tokens. However, you requested 40000 tokens (36000 in the messages, 4000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}}`, Over: true, Window: 32768},
		{Name: "vLLM v1", Body: `{"error":{"message":"The decoder prompt (length 9000) is longer than the maximum model length of 8192. Make sure that max_model_len is no smaller than the number of text tokens.","type":"BadRequestError","param":null,"code":400}}`, Over: true, Window: 8192},
		{Name: "llama.cpp", Body: `{"error":{"code":400,"message":"request (9000 tokens) exceeds the available context size (8192 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":8192}}`, Over: true, Window: 8192},
		{Name: "other 400", Body: `{"error":{"message":"Invalid value for 'temperature'.","type":"invalid_request_error","param":"temperature","code":"invalid_value"}}`, Over: false},
	},
	Invalid: []modeltest.InvalidReply{
		{File: "empty.json", Message: "neither a tool call nor text", Raw: "", InputTokens: 82},
		{File: "refusal.json", Message: "the model refused", Raw: "I'm sorry, I can't assist with that request.", InputTokens: 82},
		{File: "truncated.json", Message: "output token limit", Raw: "To compute 12 x 7, I will first", InputTokens: 82},
		{File: "unknown_tool.json", Message: "names a tool that does not exist; the tools are: calculator, finish", Raw: "get_current_weather", InputTokens: 82},
		{File: "malformed_arguments.json", Message: "the arguments are not a JSON object", Raw: `{"left":12,"operation":"multiply","right":`, InputTokens: 82},
		// Text is no action: a model thinking aloud must not end the run.
		{File: "text_only.json", Message: "text but no tool call, and only tool calls are acted on; call a tool to go on, or call finish", Raw: "12 x 7 = 84.", InputTokens: 82},
		// Arguments cut off by the token limit: the model must learn why,
		// not just that they are not JSON (it would repeat the call).
		{File: "length_tool_call.json", Message: "output token limit in the middle of a tool call, so no call of it was run; make smaller calls", Raw: "", InputTokens: 82},
	},
}

var provider = modeltest.Provider{
	Name:          "openai",
	Codec:         codec,
	Make:          openai.New,
	Model:         "gpt-4o-mini",
	DefaultWindow: 128_000, // gpt-4o-mini
	// The system message and the tools.
	Prefix: func(t testing.TB, body []byte) []byte {
		var req struct {
			Messages []json.RawMessage `json:"messages"`
			Tools    json.RawMessage   `json:"tools"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(req.Messages[0], []byte(`"role":"system"`)) {
			t.Fatalf("the request does not start with the system prompt: %s", req.Messages[0])
		}
		return append(append([]byte(nil), req.Messages[0]...), req.Tools...)
	},
	// The first message's content.
	System: func(t testing.TB, body []byte) string {
		var req struct {
			Messages []struct{ Role, Content string }
		}
		if err := json.Unmarshal(body, &req); err != nil || len(req.Messages) == 0 || req.Messages[0].Role != "system" {
			t.Fatalf("the request does not start with a system message (%v)", err)
		}
		return req.Messages[0].Content
	},
	Tools: func(t testing.TB, body []byte) []modeltest.ToolDef {
		var req struct {
			Tools []struct {
				Type     string
				Function struct {
					Name, Description string
					Parameters        map[string]any
				}
			}
		}
		if err := json.Unmarshal(body, &req); err != nil {
			t.Fatal(err)
		}
		var out []modeltest.ToolDef
		for _, tool := range req.Tools {
			if tool.Type != "function" {
				t.Fatalf("tool %s of type %q, want function", tool.Function.Name, tool.Type)
			}
			out = append(out, modeltest.ToolDef{Name: tool.Function.Name, Description: tool.Function.Description, Schema: tool.Function.Parameters})
		}
		return out
	},
}

func TestProvider(t *testing.T) {
	t.Parallel()
	modeltest.RunProvider(t, provider)
}

// TestCodecMatchesTestdata: what the fake server renders has the shape of
// the recorded bodies.
func TestCodecMatchesTestdata(t *testing.T) {
	t.Parallel()
	u := &gen.Usage{InputTokens: 82, OutputTokens: 17}
	for file, body := range map[string][]byte{
		"tool_call.json":           codec.Reply(modeltest.Call("calculator", map[string]any{"left": 12.0}), 0, u),
		"parallel_tool_calls.json": codec.Reply(modeltest.Parallel(modeltest.Call("calculator", nil), modeltest.Call("calculator", nil)), 0, u),
		"text_only.json":           codec.Reply(modeltest.Turn{Text: "12 x 7 = 84."}, 0, u),
		"finish_call.json":         codec.Reply(modeltest.Finish("84"), 0, nil),
	} {
		t.Run(file, func(t *testing.T) { modeltest.SameShape(t, body, modeltest.Testdata(t, file)) })
	}
}

// newModel returns a model talking to s; change adjusts the config.
func newModel(t testing.TB, s *modeltest.Server, change func(*openai.Config)) *openai.Model {
	t.Helper()
	var cfg openai.Config
	if change != nil {
		change(&cfg)
	}
	return provider.New(t, s, cfg)
}

// ok is a 200 with a testdata body.
func ok(t testing.TB, name string) modeltest.Response {
	return modeltest.OK(modeltest.Testdata(t, name))
}

// messages returns the messages of a decoded request.
func messages(t testing.TB, req map[string]any) []map[string]any {
	t.Helper()
	raw, _ := req["messages"].([]any)
	out := make([]map[string]any, len(raw))
	for i, m := range raw {
		out[i] = m.(map[string]any)
	}
	return out
}

// roles returns the role of each message, with "+tool_calls" for an
// assistant message that calls tools.
func roles(msgs []map[string]any) string {
	var parts []string
	for _, m := range msgs {
		r, _ := m["role"].(string)
		if _, ok := m["tool_calls"]; ok {
			r += "+tool_calls"
		}
		parts = append(parts, r)
	}
	return strings.Join(parts, " ")
}

// BenchmarkNextHTTP is a whole Next with a 50-step history against a local
// server that answers at once: the adapter, its HTTP layer and loopback HTTP.
func BenchmarkNextHTTP(b *testing.B) {
	modeltest.BenchmarkNext(b, provider, modeltest.Testdata(b, "tool_call.json"))
}
