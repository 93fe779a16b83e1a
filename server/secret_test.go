package server_test

import (
	"context"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/server"
)

// TestSecretsNeverLeak: a provider key in the server's environment and the
// server's token never appear in a response, a trace, the run log or the
// server's log, even when the provider echoes the key back in its error.
func TestSecretsNeverLeak(t *testing.T) {
	const key = "sk-test-SECRET-8c1f"
	var mu sync.Mutex
	var gotAuth []string
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		gotAuth = append(gotAuth, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":{"message":"Incorrect API key provided: `+key+`","type":"invalid_request_error","code":"invalid_api_key"}}`)
	}))
	defer provider.Close()
	t.Setenv("OPENAI_API_KEY", key)
	t.Setenv("OPENAI_BASE_URL", provider.URL)
	t.Setenv("SPECLOOP_TOKEN", testToken)

	ts := newTestServer(t, server.Config{Config: runner.Config{AllowCommands: true}})
	ctx := context.Background()
	var bodies []string
	record := func(_ int, _ http.Header, body []byte) { bodies = append(bodies, string(body)) }

	// A run with the openai provider, which fails on the provider's 401.
	record(ts.do("POST", "/v1/runs", "application/json", strings.NewReader(`{"task":{"prompt":"hi"},"model":{"provider":"openai","model":"gpt-test"}}`)))
	var created gen.Run
	runs := decodeReply[gen.RunList](t, ts.answer(ts.raw.ListRuns(ctx, nil)), http.StatusOK)
	if len(runs.Runs) != 1 {
		t.Fatalf("list: %+v", runs)
	}
	created = runs.Runs[0]
	run := ts.wait(created.Id)
	if run.Result.ExitReason != gen.ExitReasonModelError {
		t.Errorf("the openai run ended %s, want model_error", run.Result.ExitReason)
	}
	mu.Lock()
	if len(gotAuth) == 0 || gotAuth[0] != "Bearer "+key {
		t.Errorf("the provider did not get the key from the environment")
	}
	mu.Unlock()
	for _, path := range []string{"/v1/runs/" + created.Id, "/v1/runs/" + created.Id + "/events", "/v1/runs", "/v1/tools", "/openapi.yaml", "/healthz"} {
		record(ts.do("GET", path, "", nil))
	}
	// Commands run with an allowlisted environment.
	record(ts.do("POST", "/v1/tools/run_command", "application/json", strings.NewReader(`{"command":"env"}`)))
	// Failures: a wrong token, a bad body.
	record(ts.do("GET", "/v1/runs", "", nil, "Authorization", "Bearer "+key))
	record(ts.do("POST", "/v1/runs", "application/json", strings.NewReader(`{"task":{"prompt":"`+key+`"},"model":{"provider":"nope"}}`)))
	ts.close() // flushes the run log

	for i, b := range bodies {
		for _, secret := range []string{key, testToken} {
			if strings.Contains(b, secret) {
				t.Errorf("response %d contains a secret: %s", i, b)
			}
		}
	}
	err := filepath.WalkDir(ts.cfg.DataDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, secret := range []string{key, testToken} {
			if strings.Contains(string(data), secret) {
				t.Errorf("%s contains a secret", path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{key, testToken} {
		if strings.Contains(ts.logBuf.String(), secret) {
			t.Errorf("the server's log contains a secret")
		}
	}
}
