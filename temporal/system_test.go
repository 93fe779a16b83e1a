package temporal_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/temporal"
)

// harnessEngine is a runner.Engine that executes each run's workflow in
// h's test environment, from the spec the runner hands it: what an API
// server gives `specloop-temporal serve`'s engine reaches the workflow's
// input unchanged.
type harnessEngine struct {
	t *testing.T
	h *harness
}

func (e harnessEngine) Execute(ctx context.Context, sp runner.Spec, event func(*gen.TraceEvent, []byte)) (gen.RunResult, error) {
	in := temporal.RunInput{Spec: sp}
	e.h.env.ExecuteWorkflow(temporal.WorkflowName, in)
	if err := e.h.env.GetWorkflowError(); err != nil {
		return gen.RunResult{}, err
	}
	var res gen.RunResult
	if err := e.h.env.GetWorkflowResult(&res); err != nil {
		return gen.RunResult{}, err
	}
	data, err := e.h.store.Events(ctx, sp.ID)
	if err != nil {
		return res, err
	}
	for line := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
		var ev gen.TraceEvent
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			return res, err
		}
		event(&ev, []byte(line))
	}
	return res, nil
}

func (harnessEngine) Follow(context.Context, string, int, func(*gen.TraceEvent, []byte)) (gen.RunResult, error) {
	return gen.RunResult{}, runner.ErrNoEngineRun
}

// runOn accepts req on a runner configured by cfg (its data directory
// and, without an Engine, its workspace root added) and returns the run's
// result once it finished.
func runOn(t *testing.T, cfg runner.Config, req gen.CreateRunRequest) gen.RunResult {
	t.Helper()
	ctx := context.Background()
	cfg.DataDir = t.TempDir()
	if cfg.WorkspaceRoot == "" {
		cfg.WorkspaceRoot = t.TempDir()
	}
	r, err := runner.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Shutdown(ctx) }()
	run, err := r.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second) // a hang guard
	for run.Status != gen.RunStatusFinished && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		if run, err = r.Get(run.Id); err != nil {
			t.Fatal(err)
		}
	}
	if run.Result == nil {
		t.Fatalf("the run did not finish: %+v", run)
	}
	res := *run.Result
	res.RunId = nil
	return res
}

// fakeOpenAI is an OpenAI-compatible server that records each request's
// system message and answers with reply(its request's messages).
type fakeOpenAI struct {
	mu      sync.Mutex
	systems []string
	reply   func(messages []map[string]any) string
}

func (f *fakeOpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Messages []map[string]any `json:"messages"`
	}
	data, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(data, &body); err != nil || len(body.Messages) == 0 {
		http.Error(w, `{"error":{"message":"bad request","type":"test"}}`, http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	system := ""
	if body.Messages[0]["role"] == "system" {
		system, _ = body.Messages[0]["content"].(string)
	}
	f.systems = append(f.systems, system)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, f.reply(body.Messages))
}

// seen returns the system messages of the requests since the last call.
func (f *fakeOpenAI) seen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.systems
	f.systems = nil
	return s
}

// toolCallReply is a chat completion calling tool name with args (JSON).
func toolCallReply(name, args string) string {
	b, _ := json.Marshal(args)
	return fmt.Sprintf(`{"id":"chatcmpl-1","object":"chat.completion","created":1741570290,"model":"gpt-test",`+
		`"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",`+
		`"function":{"name":%q,"arguments":%s}}]},"finish_reason":"tool_calls"}],`+
		`"usage":{"prompt_tokens":110,"completion_tokens":15,"total_tokens":125}}`, name, b)
}

// openAIRequest is a request for a run of model gpt-test on the
// OpenAI-compatible server of the environment.
func openAIRequest(t *testing.T) gen.CreateRunRequest {
	t.Helper()
	var mc gen.ModelConfig
	if err := mc.FromOpenAIModelConfig(gen.OpenAIModelConfig{Provider: gen.OpenAIModelConfigProviderOpenai, Model: "gpt-test"}); err != nil {
		t.Fatal(err)
	}
	return gen.CreateRunRequest{Task: gen.Task{Prompt: "multiply 12 by 7"}, Model: mc}
}

// The API server's --system-file reaches the model on both engines: a
// runner configured with a system prompt (as serve is) runs on the
// embedded engine and on the workflow, whose worker builds its models as
// specloop-temporal worker does (runner.ModelsWithSystem, the provider from
// the environment), and every request the provider gets starts with that
// prompt. Not parallel: the provider's base URL is in the environment, as
// in production.
func TestEnginesSendTheServersSystemPrompt(t *testing.T) {
	const prompt = "You are the deployment's own agent. Call {{finish}} with the answer."
	fake := &fakeOpenAI{reply: func([]map[string]any) string { return toolCallReply("finish", `{"answer":"84"}`) }}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	t.Setenv("OPENAI_BASE_URL", srv.URL)
	t.Setenv("OPENAI_API_KEY", "test-key")

	want := runOn(t, runner.Config{System: prompt}, openAIRequest(t))
	embedded := fake.seen()

	h := noCommands(newHarness(t)) // as the embedded runner: no commands
	h.acts.Models, h.acts.SystemModels = nil, runner.ModelsWithSystem
	got := runOn(t, runner.Config{System: prompt, Engine: harnessEngine{t, h}}, openAIRequest(t))
	onTemporal := fake.seen()

	if want.ExitReason != gen.ExitReasonFinished {
		t.Fatalf("embedded run: %+v", want)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("RunResult differs (-embedded +temporal):\n%s", diff)
	}
	for name, systems := range map[string][]string{"embedded": embedded, "temporal": onTemporal} {
		if len(systems) == 0 {
			t.Errorf("%s: no request reached the provider", name)
		}
		for i, s := range systems {
			if !strings.HasPrefix(s, "You are the deployment's own agent. Call finish") {
				t.Errorf("%s: request %d's system prompt is %.80q, not the server's", name, i, s)
			}
		}
	}
}

// A worker whose models take no system prompt (Models alone) does not
// run a run that carries one without it: the run ends model_error,
// naming the API server's --system-file.
func TestWorkerWithoutSystemModelsRefusesASystemPrompt(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	in := scriptInput([]string{finish}, "", 0)
	in.System = "the server's prompt"
	res, _ := h.run(t, in)
	if res.ExitReason != gen.ExitReasonModelError || res.Error == nil || !strings.Contains(*res.Error, "--system-file") {
		t.Fatalf("result %+v (error %q), want model_error naming --system-file", res, ptrText(res.Error))
	}
}
