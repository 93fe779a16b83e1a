package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/server"
)

// FuzzCreateRun posts arbitrary bodies to POST /v1/runs: the answer is a
// 202 or a 4xx problem, never a 500 or a panic, and never repeats the
// body's text.
//
//	go test ./server -run '^$' -fuzz FuzzCreateRun -fuzztime 60s
func FuzzCreateRun(f *testing.F) {
	for _, seed := range []string{
		`{"task":{"prompt":"Compute 12 x 7."},"model":{"provider":"script","responses":["{\"type\":\"finish\",\"answer\":\"84\"}"]}}`,
		`{"task":{"prompt":"p"},"model":{"provider":"script","responses":["x"]},"max_steps":3,"workspace":"."}`,
		`{"task":{"prompt":"p"},"model":{"provider":"openai","model":"m","temperature":0.5}}`,
		`{"task":{"prompt":"p"},"model":{"provider":"anthropic","model":"m"},"token_budget":10}`,
		`{"task":{"prompt":"p"},"model":{"provider":"script","responses":[]},"check":"true"}`,
		`{"task":{"prompt":"p"},"model":{"provider":"script","responses":["x"]},"workspace":"../.."}`,
		`{"task":{"prompt":"p"},"model":{"provider":"script","responses":["x"]},"workspace":"a\u0000b"}`,
		`{"task":{"prompt":"p"},"model":{"provider":"script","responses":["x"]},"workspace":"sub/../.."}`,
		`{"task":{"prompt":"p"},"model":{"provider":["script"]}}`,
		`{"task":{"prompt":"p"},"model":{"provider":"script","responses":["x"]},"max_steps":1e400}`,
		`{"task":{"prompt":"p","prompt":"q"},"model":{"provider":"script","responses":["x"]}}`,
		`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[`,
		`{"task":null,"model":null}`,
		`null`, `"string"`, `12`, ``, `{`, "\xff\xfe",
	} {
		f.Add(seed)
	}
	srv, err := server.New(server.Config{Config: runner.Config{DataDir: f.TempDir(), WorkspaceRoot: f.TempDir(), QueueSize: 1 << 20}})
	if err != nil {
		f.Fatal(err)
	}
	// Cleanups run last first: the runs end before the directories go.
	f.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			f.Error(err)
		}
	})
	h := srv.Handler()
	f.Fuzz(func(t *testing.T, body string) {
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/v1/runs", strings.NewReader(body)) // a loopback Host: no token
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		switch {
		case w.Code == http.StatusAccepted:
			return
		case w.Code >= 500:
			t.Fatalf("status %d for %q: %s", w.Code, body, w.Body)
		case w.Header().Get("Content-Type") != "application/problem+json":
			t.Fatalf("status %d without a problem for %q", w.Code, body)
		}
		if len(body) >= 12 && strings.Contains(w.Body.String(), body) {
			t.Fatalf("the problem repeats the body: %s", w.Body)
		}
	})
}
