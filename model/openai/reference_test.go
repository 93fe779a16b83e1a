package openai_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model/internal/adapt"
	"github.com/specloop/specloop/model/modeltest"
	"github.com/specloop/specloop/model/openai"
)

// systemPlaceholder stands for the adapter's system prompt in the reference
// fixtures; the test puts the prompt in (its wording is the adapter's own,
// not the API's).
const systemPlaceholder = "<the adapter's system prompt>"

// toOpenAI is a transport that sends every request to srv, so a Model
// configured for OpenAI's own API (which decides max_completion_tokens)
// talks to a local server.
type toOpenAI struct{ srv *url.URL }

func (t toOpenAI) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.URL.Scheme, r.URL.Host = t.srv.Scheme, t.srv.Host
	return http.DefaultTransport.RoundTrip(r)
}

// TestRequestMatchesReference compares the body the adapter sends, field by
// field and value by value, with testdata/request_reference.json: a Chat
// Completions request written by hand from OpenAI's API reference (function
// tools, an assistant message with tool_calls answered by tool messages
// with the same tool_call_id, temperature, max_completion_tokens) for the
// same task, tools and history.
func TestRequestMatchesReference(t *testing.T) {
	t.Parallel()
	var (
		mu   sync.Mutex
		sent []byte
	)
	answer := modeltest.Testdata(t, "finish_call.json")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		sent = body
		mu.Unlock()
		if r.URL.Path != "/v1/chat/completions" {
			t.Errorf("request to %s, want /v1/chat/completions", r.URL.Path)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)

	weather := []gen.ToolSpec{{
		Name:        "get_current_weather",
		Description: "Get the current weather in a given location",
		InputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"location": map[string]any{"type": "string", "description": "The city and state, e.g. San Francisco, CA"},
				"unit":     map[string]any{"type": "string", "enum": []any{"celsius", "fahrenheit"}},
			},
			"required": []any{"location"},
		},
	}}
	temp := 0.2
	m, err := openai.New(openai.Config{
		Model:           "gpt-4o-mini",
		APIKey:          modeltest.APIKey,
		HTTPClient:      &http.Client{Transport: toOpenAI{u}},
		Temperature:     &temp,
		MaxOutputTokens: 256,
	})
	if err != nil {
		t.Fatal(err)
	}
	boston, paris := "call_abc123", "call_def456"
	code := gen.ErrorCodeInvalidArguments
	history := agent.NewHistory(
		agent.Item{ToolCall: &gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: "get_current_weather", CallId: &boston, Arguments: map[string]any{"location": "Boston, MA"}}},
		agent.Item{Observation: &gen.Observation{Type: gen.ObservationTypeObservation, ToolName: "get_current_weather", CallId: &boston, Content: `{"temperature":22,"unit":"celsius"}`}},
		agent.Item{ToolCall: &gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: "get_current_weather", CallId: &paris, Arguments: map[string]any{"location": "Paris, France", "unit": "kelvin"}}},
		agent.Item{Observation: &gen.Observation{Type: gen.ObservationTypeObservation, ToolName: "get_current_weather", CallId: &paris, IsError: true, ErrorCode: &code, Content: "unit must be celsius or fahrenheit"}},
	)
	task := gen.Task{Prompt: "What's the weather like in Boston and in Paris today?"}
	if _, err := m.Next(context.Background(), &agent.Request{Task: task, History: history, Tools: weather}); err != nil {
		t.Fatal(err)
	}

	var want, got map[string]any
	if err := json.Unmarshal(modeltest.Testdata(t, "request_reference.json"), &want); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if err := json.Unmarshal(sent, &got); err != nil {
		t.Fatalf("the body is not JSON: %v\n%s", err, sent)
	}
	system := want["messages"].([]any)[0].(map[string]any)
	if system["content"] != systemPlaceholder {
		t.Fatalf("the fixture's first message is not the system placeholder: %v", system)
	}
	system["content"] = adapt.SystemPrompt("")
	// Arguments are JSON text: compare them as values, not as spellings.
	decodeArguments(t, want)
	decodeArguments(t, got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("request (-reference +sent):\n%s", diff)
	}
}

// decodeArguments replaces the JSON text of every tool call's arguments in
// a request by the value it encodes.
func decodeArguments(t *testing.T, req map[string]any) {
	t.Helper()
	for _, msg := range messages(t, req) {
		calls, _ := msg["tool_calls"].([]any)
		for _, c := range calls {
			fn := c.(map[string]any)["function"].(map[string]any)
			var v any
			if err := json.Unmarshal([]byte(fn["arguments"].(string)), &v); err != nil {
				t.Fatalf("arguments %q are not JSON: %v", fn["arguments"], err)
			}
			fn["arguments"] = v
		}
	}
}
