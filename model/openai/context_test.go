package openai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
	"github.com/specloop/specloop/model/modeltest"
	"github.com/specloop/specloop/model/openai"
)

func TestContextWindow(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	tests := []struct {
		model    string
		override int
		want     int
	}{
		{"gpt-4.1-mini", 0, 1_047_576},
		{"gpt-4o-mini", 0, 128_000},
		{"o4-mini", 0, 200_000},
		{"o3", 0, 200_000},
		{"gpt-5-codex", 0, 272_000},
		{"openai/gpt-4o", 0, 128_000},
		{"llama3.1:8b", 0, 32_768},
		{"gpt-4o", 16_000, 16_000},
	}
	for _, tt := range tests {
		m := newModel(t, s, func(c *openai.Config) { c.Model, c.ContextWindow = tt.model, tt.override })
		if got := m.ContextWindow(); got != tt.want {
			t.Errorf("%s (override %d): window %d, want %d", tt.model, tt.override, got, tt.want)
		}
	}
}

// TestContextLengthExceeded: besides OpenAI's own code (TestContext),
// compatible servers' "maximum context length" message wraps
// agent.ErrContextLength; other 400s do not.
func TestContextLengthExceeded(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		over bool
	}{
		{"compatible server", `{"error":{"message":"This model's maximum context length is 32768 tokens. However, you requested 40000 tokens (36000 in the messages, 4000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}}`, true},
		{"other 400", `{"error":{"message":"Invalid value for 'temperature'.","type":"invalid_request_error","param":"temperature","code":"invalid_value"}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, reply{status: http.StatusBadRequest, body: []byte(tt.body)})
			_, err := newModel(t, s, nil).Next(context.Background(), modeltest.Request(t, agent.NewHistory()))
			var pe *model.ProviderError
			if !errors.As(err, &pe) || errors.Is(err, agent.ErrContextLength) != tt.over {
				t.Fatalf("err = %v, want a ProviderError that is over the window: %v", err, tt.over)
			}
		})
	}
}

// TestSummarize: one call, Next's request with its prefix unchanged,
// the instruction last and no tool allowed; the reply's text and usage come
// back.
func TestSummarize(t *testing.T) {
	t.Parallel()
	summary := `{"id":"chatcmpl-S","object":"chat.completion","created":1741570283,"model":"gpt-4o-mini",
"choices":[{"index":0,"message":{"role":"assistant","content":"  The task: compute 12 x 7. Done so far: 3 additions.  "},"finish_reason":"stop"}],
"usage":{"prompt_tokens":900,"completion_tokens":40,"total_tokens":940}}`
	s := newServer(t, ok(t, "finish_call.json"), reply{status: http.StatusOK, body: []byte(summary)}, ok(t, "text_only.json"))
	m := newModel(t, s, nil)
	h := modeltest.LongHistory(3, 50)
	if _, err := m.Next(context.Background(), modeltest.Request(t, h)); err != nil {
		t.Fatal(err)
	}
	sreq := modeltest.Request(t, h)
	sreq.Summarize = true
	got, err := m.Next(context.Background(), sreq)
	text, usage := got.Summary, got.Usage
	if err != nil {
		t.Fatal(err)
	}
	if text != "The task: compute 12 x 7. Done so far: 3 additions." || usage == nil || *usage != (gen.Usage{InputTokens: 900, OutputTokens: 40}) {
		t.Fatalf("summary %q, usage %+v", text, usage)
	}
	turn, sum := s.requests()[0], s.requests()[1]
	if sum["tool_choice"] != "none" {
		t.Fatalf("tool_choice = %v, want none", sum["tool_choice"])
	}
	turnMsgs, sumMsgs := messages(t, turn), messages(t, sum)
	if len(sumMsgs) != len(turnMsgs)+1 {
		t.Fatalf("the summary request has %d messages, want Next's %d and the instruction", len(sumMsgs), len(turnMsgs))
	}
	for i := range turnMsgs {
		if a, b := mustJSON(t, turnMsgs[i]), mustJSON(t, sumMsgs[i]); a != b {
			t.Fatalf("message %d differs from Next's:\n%s\n%s", i, a, b)
		}
	}
	last := sumMsgs[len(sumMsgs)-1]
	if last["role"] != "user" || !strings.Contains(last["content"].(string), "Write a summary") {
		t.Fatalf("last message = %v, want the summary instruction", last)
	}
	if mustJSON(t, turn["tools"]) != mustJSON(t, sum["tools"]) {
		t.Fatal("the summary request's tools differ from Next's: the cached prefix is lost")
	}
	// A reply without text is no summary. (text_only.json has text; an
	// empty reply has none.)
	s2 := newServer(t, ok(t, "empty.json"))
	if _, err := newModel(t, s2, nil).Next(context.Background(), sreq); err == nil {
		t.Fatal("a summary request answered by an empty reply succeeded")
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSystemPrompt: the default prompt is the code-task prompt with the
// finish tool named; Config.System replaces it.
func TestSystemPrompt(t *testing.T) {
	t.Parallel()
	s := newServer(t, ok(t, "finish_call.json"), ok(t, "finish_call.json"))
	ctx := context.Background()
	if _, err := newModel(t, s, nil).Next(ctx, modeltest.Request(t, agent.NewHistory())); err != nil {
		t.Fatal(err)
	}
	if _, err := newModel(t, s, func(c *openai.Config) { c.System = "Be brief. End with {{finish}}." }).Next(ctx, modeltest.Request(t, agent.NewHistory())); err != nil {
		t.Fatal(err)
	}
	def := messages(t, s.requests()[0])[0]["content"].(string)
	for _, want := range []string{"call finish with a short summary", "[… 120 lines, 8450 bytes omitted; … …]", "relative to the workspace root", "completion check"} {
		if !strings.Contains(def, want) {
			t.Errorf("the default system prompt lacks %q", want)
		}
	}
	if strings.Contains(def, "{{") {
		t.Errorf("the default system prompt has a placeholder left: %q", def)
	}
	if got := messages(t, s.requests()[1])[0]["content"]; got != "Be brief. End with finish." {
		t.Fatalf("system prompt = %q, want the Config's with the finish tool named", got)
	}
}

func TestContext(t *testing.T) {
	t.Parallel()
	modeltest.RunContext(t, contextSuite)
}

// BenchmarkHarnessOverhead reports the harness every request carries, the
// system prompt and the tool definitions with all built-in tools, as
// prefix-bytes (ns/op is only the time to extract it).
func BenchmarkHarnessOverhead(b *testing.B) {
	modeltest.BenchmarkOverhead(b, contextSuite)
}

var contextSuite = modeltest.ContextSuite{
	New: func(t testing.TB, window int, turns []modeltest.Turn) modeltest.StandIn {
		s := scripted(t, turns)
		s.window = window
		return modeltest.StandIn{Model: newModel(t, s, func(c *openai.Config) { c.ContextWindow = window }), Sent: s.raw}
	},
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
}
