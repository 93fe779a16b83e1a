package sdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/contract"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/sdk"
	"github.com/specloop/specloop/server"
)

// The helpers build the model configurations of the spec, each one valid
// against ModelConfig, with the provider set.
func TestModelHelpers(t *testing.T) {
	t.Parallel()
	mcSchema := contract.MustSpec().Components.Schemas["ModelConfig"].Value
	for _, tt := range []struct {
		mc   gen.ModelConfig
		want string
	}{
		{sdk.OpenAI("gpt-4o-mini"), `{"model":"gpt-4o-mini","provider":"openai"}`},
		{sdk.Anthropic("claude-sonnet-4-5"), `{"model":"claude-sonnet-4-5","provider":"anthropic"}`},
		{sdk.Script(calc...), `{"provider":"script","responses":[` + quote(calc[0]) + `,` + quote(calc[1]) + `]}`},
	} {
		got, err := json.Marshal(tt.mc)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tt.want {
			t.Errorf("got %s, want %s", got, tt.want)
		}
		var v any
		_ = json.Unmarshal(got, &v)
		if err := mcSchema.VisitJSON(v); err != nil {
			t.Errorf("%s does not validate against ModelConfig: %v", got, err)
		}
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// A request without a model is refused before it is sent, with a message a
// person understands; a scripted run built with sdk.Script runs.
func TestCreateRunWithoutModel(t *testing.T) {
	t.Parallel()
	var requests atomic.Int32
	srv, err := server.New(server.Config{Config: runner.Config{DataDir: t.TempDir(), WorkspaceRoot: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	h := srv.Handler()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	c, err := sdk.New(hs.URL, sdk.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for name, mc := range map[string]gen.ModelConfig{"zero": {}, "no openai name": sdk.OpenAI(""), "no anthropic name": sdk.Anthropic("")} {
		_, err = c.CreateRun(ctx, gen.CreateRunRequest{Task: gen.Task{Prompt: "hi"}, Model: mc})
		if !errors.Is(err, sdk.ErrModelRequired) {
			t.Fatalf("%s: got %v, want ErrModelRequired", name, err)
		}
		if msg := err.Error(); !strings.Contains(msg, "the model is required") || strings.Contains(msg, "nullable") {
			t.Fatalf("%s: message %q", name, msg)
		}
	}
	if n := requests.Load(); n != 0 {
		t.Fatalf("%d requests were sent for runs without a model", n)
	}
	run, err := c.CreateRun(ctx, gen.CreateRunRequest{Task: gen.Task{Prompt: "Compute 12 x 7."}, Model: sdk.Script(calc...)})
	if err != nil {
		t.Fatal(err)
	}
	if run, err = c.Wait(ctx, run.Id); err != nil || run.Result.ExitReason != gen.ExitReasonFinished {
		t.Fatalf("scripted run: %v %+v", err, run.Result)
	}
}

// Over plain HTTP, a null model gets a 400 that names the field in words a
// person understands.
func TestNullModelProblem(t *testing.T) {
	t.Parallel()
	url := newServer(t, server.Config{})
	resp, err := http.Post(url+"/v1/runs", "application/json", strings.NewReader(`{"task":{"prompt":"hi"},"model":null}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var p gen.Problem
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusBadRequest || p.Field == nil || *p.Field != "/model" || p.Detail == nil ||
		!strings.Contains(*p.Detail, "is required") || strings.Contains(*p.Detail, "nullable") {
		t.Fatalf("%d %+v %v", resp.StatusCode, p, deref(p.Detail))
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
