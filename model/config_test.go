package model_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
	"github.com/specloop/specloop/model/anthropic"
	"github.com/specloop/specloop/model/modeltest"
	"github.com/specloop/specloop/model/openai"
)

// TestFromConfig: each of the spec's model configurations gives its model,
// with the configuration's settings; anything else is ErrInvalidConfig.
func TestFromConfig(t *testing.T) {
	var script gen.ModelConfig
	if err := script.FromScriptModelConfig(gen.ScriptModelConfig{Provider: gen.ScriptModelConfigProviderScript, Responses: []string{`{"type":"finish","answer":"x"}`}}); err != nil {
		t.Fatal(err)
	}
	m, err := model.FromConfig(script, model.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if a, err := modeltest.Ask(t, context.Background(), m, modeltest.Task, agent.NewHistory()); err != nil || a.Finish == nil || a.Finish.Answer != "x" {
		t.Fatalf("script: %+v, %v", a, err)
	}

	// An OpenAI-compatible server records the request.
	body, err := os.ReadFile("openai/testdata/finish_call.json")
	if err != nil {
		t.Fatal(err)
	}
	var sent map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(data, &sent)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	temp, maxOut, window := 0.5, 300, 20_000
	var oc gen.ModelConfig
	if err := oc.FromOpenAIModelConfig(gen.OpenAIModelConfig{Provider: gen.OpenAIModelConfigProviderOpenai, Model: "llama3.1", Temperature: &temp, MaxOutputTokens: &maxOut, ContextWindow: &window}); err != nil {
		t.Fatal(err)
	}
	// Options.BaseURL wins over the environment's.
	env := func(k string) string { return map[string]string{openai.EnvBaseURL: "http://env.invalid/v1"}[k] }
	m, err = model.FromConfig(oc, model.Options{BaseURL: srv.URL, Getenv: env, System: "Be terse; end with {{finish}}."})
	if err != nil {
		t.Fatal(err)
	}
	if w := m.(agent.ContextSizer).ContextWindow(); w != window {
		t.Fatalf("window %d, want the configuration's %d", w, window)
	}
	if _, err := modeltest.Ask(t, context.Background(), m, modeltest.Task, agent.NewHistory()); err != nil {
		t.Fatal(err)
	}
	msgs, _ := sent["messages"].([]any)
	if sent["model"] != "llama3.1" || sent["temperature"] != 0.5 || sent["max_tokens"] != 300.0 || len(msgs) == 0 ||
		msgs[0].(map[string]any)["content"] != "Be terse; end with finish." {
		t.Fatalf("request = %v", sent)
	}

	var ac gen.ModelConfig
	if err := ac.FromAnthropicModelConfig(gen.AnthropicModelConfig{Provider: gen.AnthropicModelConfigProviderAnthropic, Model: "claude-sonnet-4-5", ContextWindow: &window}); err != nil {
		t.Fatal(err)
	}
	m, err = model.FromConfig(ac, model.Options{Getenv: func(k string) string { return map[string]string{anthropic.EnvAPIKey: "k"}[k] }})
	if err != nil || m.(agent.ContextSizer).ContextWindow() != window {
		t.Fatalf("anthropic: %v, %v", m, err)
	}
	if _, err := model.FromConfig(ac, model.Options{Getenv: func(string) string { return "" }}); !errors.Is(err, anthropic.ErrNoAPIKey) {
		t.Fatalf("anthropic without a key: %v", err)
	}
	if _, err := model.FromConfig(gen.ModelConfig{}, model.Options{}); !errors.Is(err, model.ErrInvalidConfig) {
		t.Fatalf("an empty configuration: %v, want ErrInvalidConfig", err)
	}
}
