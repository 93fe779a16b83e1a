package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/sdk"
)

// TestModelsWithSystem: the server's system prompt (serve --system-file)
// reaches the provider, with {{finish}} naming the finish tool.
func TestModelsWithSystem(t *testing.T) {
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Messages []struct{ Content string } `json:"messages"`
		}
		_ = json.Unmarshal(body, &req)
		got <- req.Messages[0].Content
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"finish","arguments":"{\"answer\":\"ok\"}"}}]},"finish_reason":"tool_calls"}]}`)
	}))
	defer srv.Close()
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", srv.URL)
	m, err := runner.ModelsWithSystem("Be terse; end with {{finish}}.")(sdk.OpenAI("llama3.1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Next(context.Background(), &agent.Request{Task: gen.Task{Prompt: "p"}}); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "Be terse; end with finish." {
		t.Fatalf("system prompt sent = %q", s)
	}
}
