package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model/openai"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/sdk"
	"github.com/specloop/specloop/server"
)

// chatServer is a fake OpenAI Chat Completions endpoint: it answers each
// request with the next of its replies (an assistant message: its text
// and tool calls, as name and JSON arguments) and keeps every request's
// body.
type chatServer struct {
	*httptest.Server
	mu      sync.Mutex
	replies [][]string // text, then name and arguments pairs
	bodies  []string
}

func newChatServer(t *testing.T, replies ...[]string) *chatServer {
	c := &chatServer{replies: replies}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		defer c.mu.Unlock()
		c.bodies = append(c.bodies, string(body))
		if len(c.replies) == 0 {
			http.Error(w, `{"error":{"message":"no more replies"}}`, http.StatusBadRequest)
			return
		}
		reply := c.replies[0]
		c.replies = c.replies[1:]
		msg := map[string]any{"role": "assistant", "content": reply[0]}
		var calls []map[string]any
		for i := 1; i+1 < len(reply); i += 2 {
			calls = append(calls, map[string]any{"id": fmt.Sprintf("call_%d_%d", len(c.bodies), i), "type": "function",
				"function": map[string]any{"name": reply[i], "arguments": reply[i+1]}})
		}
		reason := "stop"
		if calls != nil {
			msg["tool_calls"], reason = calls, "tool_calls"
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "c", "object": "chat.completion", "created": 1, "model": "m",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": reason}}})
	}))
	t.Cleanup(c.Close)
	return c
}

// body returns request i's body.
func (c *chatServer) body(i int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i >= len(c.bodies) {
		return ""
	}
	return c.bodies[i]
}

// models builds every run's model as an OpenAI model talking to c.
func (c *chatServer) models(cfg gen.ModelConfig) (agent.Model, error) {
	mc, err := cfg.AsOpenAIModelConfig()
	if err != nil {
		return nil, err
	}
	return openai.New(openai.Config{Model: mc.Model, BaseURL: c.URL, APIKey: "test-key", MaxRetries: -1})
}

// The turns of the conversation the tests hold: 12 x 7 with a plan beside
// the call, then two follow-ups, the first answered by text alone.
var (
	convPlan = "I will multiply first."
	convTurn = [][]string{
		{convPlan, "calculator", `{"left":12,"operation":"multiply","right":7}`},
		{"", "finish", `{"answer":"84"}`},
		{"It is 85 now."},
		{"", "finish", `{"answer":"170"}`},
	}
	convMessages = []string{"Now add one.", "Double it."}
)

// A three-message conversation over HTTP: a run and two follow-ups
// (POST /v1/runs/{id}/messages), each run continuing the one before in
// one conversation (GET /v1/conversations/{id}); the model's text of the
// first turn and every message reach the later requests; a text-only
// reply in a follow-up is its answer; each run counts its steps from 1.
func TestConversationOverHTTP(t *testing.T) {
	t.Parallel()
	chat := newChatServer(t, convTurn...)
	ts := newTestServer(t, server.Config{Config: runner.Config{Models: chat.models}})
	first := ts.create(gen.CreateRunRequest{Task: gen.Task{Prompt: calcPrompt}, Model: sdk.OpenAI("gpt-test")})
	runs := []gen.Run{ts.wait(first.Id)}
	for _, msg := range convMessages {
		status, _, body := ts.do(http.MethodPost, "/v1/runs/"+runs[len(runs)-1].Id+"/messages", "application/json", strings.NewReader(`{"message":`+quote(msg)+`}`))
		if status != http.StatusCreated {
			t.Fatalf("continue: %d %s", status, body)
		}
		var next gen.Run
		if err := json.Unmarshal(body, &next); err != nil {
			t.Fatal(err)
		}
		runs = append(runs, ts.wait(next.Id))
	}
	for i, want := range []string{"84", "It is 85 now.", "170"} {
		res := runs[i].Result
		if res == nil || res.ExitReason != gen.ExitReasonFinished || res.Answer == nil || *res.Answer != want || res.StepsUsed != []int{2, 1, 1}[i] {
			t.Fatalf("run %d ended %+v, want finished with %q", i+1, res, want)
		}
		if runs[i].ConversationId != first.Id || (i > 0) != (runs[i].Continues != nil) || i > 0 && *runs[i].Continues != runs[i-1].Id {
			t.Errorf("run %d: conversation %q, continues %v; want conversation %s, each continuing the one before", i+1, runs[i].ConversationId, runs[i].Continues, first.Id)
		}
	}
	// The second run's request holds the first run's text, its finish
	// answered, and the message; the third holds the second's text.
	second, third := chat.body(2), chat.body(3)
	for _, want := range []string{quote(convPlan), quote(calcPrompt), quote(convMessages[0])} {
		if !strings.Contains(second, want) {
			t.Errorf("the second run's request lacks %s:\n%s", want, second)
		}
	}
	// (The text-only reply goes back as the finish it became.)
	for _, want := range []string{quote(convPlan), `It is 85 now.`, quote(convMessages[1])} {
		if !strings.Contains(third, want) {
			t.Errorf("the third run's request lacks %s:\n%s", want, third)
		}
	}
	status, _, body := ts.do(http.MethodGet, "/v1/conversations/"+first.Id, "", nil)
	var conv gen.Conversation
	if err := json.Unmarshal(body, &conv); status != http.StatusOK || err != nil || len(conv.Runs) != 3 || conv.Runs[2].Id != runs[2].Id {
		t.Fatalf("GET /v1/conversations/%s: %d %s", first.Id, status, body)
	}
	// A run of the conversation that is not its last is not continued
	// again: the chain never branches.
	status, _, body = ts.do(http.MethodPost, "/v1/runs/"+first.Id+"/messages", "application/json", strings.NewReader(`{"message":"again"}`))
	if status != http.StatusConflict || !strings.Contains(string(body), runs[1].Id) {
		t.Errorf("continuing the first run again: %d %s, want 409 naming the run that continues it", status, body)
	}
	// What a follow-up runs again is kept beside the transcript, private.
	if fi, err := os.Stat(filepath.Join(ts.cfg.DataDir, "transcripts", first.Id+".request.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the first run's request: %v, %v; want a file of mode 0600", err, fi)
	}
	// The conversation outlives the server.
	ts.close()
	again := newTestServer(t, ts.cfg)
	status, _, body = again.do(http.MethodGet, "/v1/conversations/"+first.Id, "", nil)
	if err := json.Unmarshal(body, &conv); status != http.StatusOK || err != nil || len(conv.Runs) != 3 {
		t.Fatalf("after a restart, GET /v1/conversations/%s: %d %s", first.Id, status, body)
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// A follow-up's step budget is its own: a run that spent its whole budget
// is continued with the same budget, counted from 1, and a continued run
// that is still going is refused.
func TestContinueBudgetIsFresh(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, server.Config{})
	one := 1
	req := gen.CreateRunRequest{Task: gen.Task{Prompt: calcPrompt}, Model: sdk.Script(calcResponses[0]), MaxSteps: &one}
	first := ts.wait(ts.create(req).Id)
	if first.Result.ExitReason != gen.ExitReasonMaxStepsExceeded {
		t.Fatalf("first run: %s, want max_steps_exceeded", first.Result.ExitReason)
	}
	next, err := ts.sdk.Continue(t.Context(), first.Id, "Finish now.", sdk.WithModel(sdk.Script(calcResponses[1])))
	if err != nil {
		t.Fatal(err)
	}
	res := ts.wait(next.Id).Result
	if res.ExitReason != gen.ExitReasonFinished || res.StepsUsed != 1 || *res.Answer != calcAnswer {
		t.Fatalf("the follow-up ended %s after %d steps, want finished after 1 of its own budget of 1", res.ExitReason, res.StepsUsed)
	}
}
