package anthropic_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model/anthropic"
	"github.com/specloop/specloop/model/modeltest"
)

// codec is the Messages wire format, as testdata's recorded bodies show it
// (TestCodecMatchesTestdata).
var codec = modeltest.Codec{
	Path: "/v1/messages",
	// The key goes as x-api-key, the header the API documents.
	Key: func(r *http.Request) string { return r.Header.Get("X-Api-Key") },
	Check: func(r *http.Request) string {
		if v := r.Header.Get("Anthropic-Version"); v != "2023-06-01" {
			return "anthropic-version " + v + ", want 2023-06-01"
		}
		return ""
	},
	Reply: func(turn modeltest.Turn, n int, usage *gen.Usage) []byte {
		var content []any
		stop := "tool_use"
		for k, c := range turn.Calls() {
			input := json.RawMessage(c.Arguments)
			if c.Invalid {
				input, _ = json.Marshal(c.Arguments) // input that is a string, not an object
			}
			content = append(content, map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d_%d", n, k), "name": c.Name, "input": input})
		}
		if content == nil {
			content, stop = []any{map[string]any{"type": "text", "text": turn.Text}}, "end_turn"
		}
		resp := map[string]any{
			"id": fmt.Sprintf("msg_%d", n), "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
			"content": content, "stop_reason": stop, "stop_sequence": nil,
		}
		if usage != nil {
			resp["usage"] = map[string]any{"input_tokens": usage.InputTokens, "output_tokens": usage.OutputTokens}
		}
		body, _ := json.Marshal(resp)
		return body
	},
	OverWindow: func(tokens, window int) []byte {
		return fmt.Appendf(nil, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: %d tokens > %d maximum"},"request_id":"req_011CWAgPbMohjStFaYrkLZCm"}`, tokens, window)
	},
	Errors: []modeltest.ErrorReply{
		{Status: http.StatusTooManyRequests, File: "error_429.json", Code: "rate_limit_error"},
		{Status: http.StatusInternalServerError, File: "error_500.json", Code: "api_error"},
		{Status: 529, File: "error_529.json", Code: "overloaded_error"},
		{Status: http.StatusUnauthorized, File: "error_401.json", Code: "authentication_error"},
	},
	BadRequests: []modeltest.BadRequest{
		{Name: "prompt too long", Body: `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}`, Over: true, Window: 200000},
		{Name: "other 400", Body: `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: 100000 > 64000, which is the maximum allowed number of output tokens for claude-sonnet-4-5"}}`},
	},
	Invalid: []modeltest.InvalidReply{
		{File: "empty.json", Message: "neither a tool call nor text", InputTokens: 472},
		{File: "refusal.json", Message: "the model refused", Raw: "I can't help with that.", InputTokens: 472},
		{File: "max_tokens.json", Message: "output token limit", Raw: "To compute 12 x 7, I will first", InputTokens: 472},
		{File: "unknown_tool.json", Message: "names a tool that does not exist; the tools are: calculator, finish", Raw: "get_weather", InputTokens: 472},
		{File: "malformed_input.json", Message: "the arguments are not a JSON object", Raw: `"{\"left\": 12, \"operation\": \"multiply\""`, InputTokens: 472},
		// Text is no action: a model thinking aloud must not end the run.
		{File: "text_only.json", Message: "text but no tool call, and only tool calls are acted on; call a tool to go on, or call finish", Raw: "12 x 7 = 84.", InputTokens: 472},
		// A tool_use cut off by max_tokens holds a partial input that may
		// still be an object: it must never run.
		{File: "max_tokens_tool_use.json", Message: "output token limit in the middle of a tool call, so no call of it was run; make smaller calls", InputTokens: 472},
		{File: "context_window_stop.json", Message: "output token limit", Raw: "The answer so far is", InputTokens: 472},
	},
}

var provider = modeltest.Provider{
	Name:          "anthropic",
	Codec:         codec,
	Make:          anthropic.New,
	Model:         "claude-sonnet-4-5",
	DefaultWindow: 200_000, // claude-sonnet-4-5
	// The tools and the system blocks (the API caches tools first).
	Prefix: func(t testing.TB, body []byte) []byte {
		var req struct{ System, Tools json.RawMessage }
		if err := json.Unmarshal(body, &req); err != nil {
			t.Fatal(err)
		}
		return append(append([]byte(nil), req.Tools...), req.System...)
	},
	// The system text blocks.
	System: func(t testing.TB, body []byte) string {
		var req struct{ System []struct{ Type, Text string } }
		if err := json.Unmarshal(body, &req); err != nil || len(req.System) == 0 {
			t.Fatalf("the request has no system blocks (%v)", err)
		}
		var text strings.Builder
		for _, b := range req.System {
			text.WriteString(b.Text)
		}
		return text.String()
	},
	Tools: func(t testing.TB, body []byte) []modeltest.ToolDef {
		var req struct {
			Tools []struct {
				Name, Description string
				InputSchema       map[string]any `json:"input_schema"`
			}
		}
		if err := json.Unmarshal(body, &req); err != nil {
			t.Fatal(err)
		}
		var out []modeltest.ToolDef
		for _, tool := range req.Tools {
			out = append(out, modeltest.ToolDef{Name: tool.Name, Description: tool.Description, Schema: tool.InputSchema})
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
	u := &gen.Usage{InputTokens: 472, OutputTokens: 91}
	for file, body := range map[string][]byte{
		"tool_use.json":          codec.Reply(modeltest.Call("calculator", map[string]any{"left": 12.0}), 0, u),
		"parallel_tool_use.json": codec.Reply(modeltest.Parallel(modeltest.Call("calculator", nil), modeltest.Call("calculator", nil)), 0, u),
		"malformed_input.json":   codec.Reply(modeltest.Invalid(), 0, u),
		"text_only.json":         codec.Reply(modeltest.Turn{Text: "12 x 7 = 84."}, 0, u),
	} {
		t.Run(file, func(t *testing.T) { modeltest.SameShape(t, body, modeltest.Testdata(t, file)) })
	}
}

// newModel returns a model talking to s; change adjusts the config.
func newModel(t testing.TB, s *modeltest.Server, change func(*anthropic.Config)) *anthropic.Model {
	t.Helper()
	var cfg anthropic.Config
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

// roles describes each message as its role and its block types, e.g.
// "user[text] assistant[tool_use] user[tool_result,text]".
func roles(msgs []map[string]any) string {
	var parts []string
	for _, m := range msgs {
		var types []string
		blocks, _ := m["content"].([]any)
		for _, b := range blocks {
			typ, _ := b.(map[string]any)["type"].(string)
			types = append(types, typ)
		}
		r, _ := m["role"].(string)
		parts = append(parts, r+"["+strings.Join(types, ",")+"]")
	}
	return strings.Join(parts, " ")
}

// block returns block j of message i.
func block(msgs []map[string]any, i, j int) map[string]any {
	return msgs[i]["content"].([]any)[j].(map[string]any)
}

// BenchmarkNextHTTP is a whole Next with a 50-step history against a local
// server that answers at once: the adapter, its HTTP layer and loopback HTTP.
func BenchmarkNextHTTP(b *testing.B) {
	modeltest.BenchmarkNext(b, provider, modeltest.Testdata(b, "tool_use.json"))
}
