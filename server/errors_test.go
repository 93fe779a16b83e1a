package server_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/sdk"
	"github.com/specloop/specloop/server"
)

// secretValue is put into invalid fields; no response may repeat it.
const secretValue = "SECRET-VALUE-4242"

// TestBadRequest: every invalid request is a 400 problem that names the
// field and never repeats the submitted value.
func TestBadRequest(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "") // so that the provider is unavailable
	t.Setenv("ANTHROPIC_BASE_URL", "")
	ts := newTestServer(t, server.Config{})
	if err := os.WriteFile(filepath.Join(ts.cfg.WorkspaceRoot, "file.txt"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	script := `{"provider":"script","responses":["{}"]}`
	tests := []struct {
		name, method, path, body string
		header                   []string
		field                    string
	}{
		{"missing task", "POST", "/v1/runs", `{"model":` + script + `}`, nil, "/task"},
		{"empty prompt", "POST", "/v1/runs", `{"task":{"prompt":""},"model":` + script + `}`, nil, "/task/prompt"},
		{"prompt not a string", "POST", "/v1/runs", `{"task":{"prompt":12345},"model":` + script + `}`, nil, "/task/prompt"},
		{"unknown field", "POST", "/v1/runs", `{"task":{"prompt":"p"},"model":` + script + `,"` + secretValue + `":1}`, nil, ""},
		{"unknown nested field", "POST", "/v1/runs", `{"task":{"prompt":"p","` + secretValue + `":1},"model":` + script + `}`, nil, "/task"},
		{"max_steps zero", "POST", "/v1/runs", `{"task":{"prompt":"p"},"model":` + script + `,"max_steps":0}`, nil, "/max_steps"},
		{"unknown provider", "POST", "/v1/runs", `{"task":{"prompt":"p"},"model":{"provider":"` + secretValue + `"}}`, nil, "/model/provider"},
		{"script without responses", "POST", "/v1/runs", `{"task":{"prompt":"p"},"model":{"provider":"script"}}`, nil, "/model/responses"},
		{"responses not strings", "POST", "/v1/runs", `{"task":{"prompt":"p"},"model":{"provider":"script","responses":[1]}}`, nil, "/model/responses/0"},
		{"workspace escapes", "POST", "/v1/runs", `{"task":{"prompt":"p"},"model":` + script + `,"workspace":"../` + secretValue + `"}`, nil, "/workspace"},
		{"workspace absolute", "POST", "/v1/runs", `{"task":{"prompt":"p"},"model":` + script + `,"workspace":"/etc"}`, nil, "/workspace"},
		{"workspace is a file", "POST", "/v1/runs", `{"task":{"prompt":"p"},"model":` + script + `,"workspace":"file.txt"}`, nil, "/workspace"},
		{"check without commands", "POST", "/v1/runs", `{"task":{"prompt":"p"},"model":` + script + `,"check":"` + secretValue + `"}`, nil, "/check"},
		{"setup without commands", "POST", "/v1/runs", `{"task":{"prompt":"p"},"model":` + script + `,"setup":"` + secretValue + `"}`, nil, "/setup"},
		{"setup too long", "POST", "/v1/runs", `{"task":{"prompt":"p"},"model":` + script + `,"setup":"` + strings.Repeat("x", 4097) + `"}`, nil, "/setup"},
		{"provider unavailable", "POST", "/v1/runs", `{"task":{"prompt":"p"},"model":{"provider":"anthropic","model":"m"}}`, nil, "/model/provider"},
		{"not json", "POST", "/v1/runs", `{"task": ` + secretValue, nil, ""},
		{"wrong content type", "POST", "/v1/runs", `{}`, []string{"Content-Type", "text/plain"}, "Content-Type"},
		{"limit not a number", "GET", "/v1/runs?limit=" + secretValue, ``, nil, "limit"},
		{"limit too large", "GET", "/v1/runs?limit=100000", ``, nil, "limit"},
		{"status unknown", "GET", "/v1/runs?status=" + secretValue, ``, nil, "status"},
		{"cursor forged", "GET", "/v1/runs?cursor=" + secretValue, ``, nil, "cursor"},
		{"run id pattern", "GET", "/v1/runs/bad.id", ``, nil, "run_id"},
		{"after negative", "GET", "/v1/runs/abc/events?after=-1", ``, nil, "after"},
		{"tool argument", "POST", "/v1/tools/calculator", `{"left":1,"operation":"` + secretValue + `","right":2}`, nil, "/operation"},
		{"tool workspace escapes", "POST", "/v1/tools/calculator?workspace=../x", `{"left":1,"operation":"add","right":2}`, nil, "workspace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ct := ""
			if tt.body != "" {
				ct = "application/json"
			}
			status, h, body := ts.do(tt.method, tt.path, ct, strings.NewReader(tt.body), tt.header...)
			if status != http.StatusBadRequest {
				t.Fatalf("status %d, want 400: %s", status, body)
			}
			if ct := h.Get("Content-Type"); ct != "application/problem+json" {
				t.Errorf("content type %q", ct)
			}
			t.Logf("%s", body)
			p := problemOf(t, body)
			if p.Status != 400 || p.Title == "" || p.Type == "" {
				t.Errorf("problem %s", body)
			}
			if tt.field != "" && (p.Field == nil || *p.Field != tt.field) {
				t.Errorf("field: got %s, want %q", fmtProblem(p), tt.field)
			}
			if bytes.Contains(body, []byte(secretValue)) {
				t.Errorf("the problem repeats the submitted value: %s", body)
			}
		})
	}
}

// TestUnauthorized: without the right token every operation but the
// public ones is a 401.
func TestUnauthorized(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, server.Config{})
	for _, tt := range []struct{ name, auth string }{
		{"no header", ""},
		{"wrong token", "Bearer wrong-token"},
		{"token prefix", "Bearer " + testToken[:len(testToken)-1]},
		{"basic scheme", "Basic " + testToken},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, path := range []string{"/v1/runs", "/v1/tools", "/v1/runs/abc", "/no/such/route"} {
				status, h, body := ts.do("GET", path, "", nil, "Authorization", tt.auth)
				if status != http.StatusUnauthorized {
					t.Fatalf("GET %s: status %d, want 401: %s", path, status, body)
				}
				if !strings.HasPrefix(h.Get("WWW-Authenticate"), "Bearer") {
					t.Errorf("WWW-Authenticate %q", h.Get("WWW-Authenticate"))
				}
				if p := problemOf(t, body); p.Status != 401 {
					t.Errorf("problem %s", body)
				}
				if bytes.Contains(body, []byte(testToken)) {
					t.Errorf("the token appears in the response")
				}
			}
		})
	}
	t.Run("public operations", func(t *testing.T) {
		for _, path := range []string{"/healthz", "/openapi.yaml"} {
			if status, _, body := ts.do("GET", path, "", nil, "Authorization", ""); status != http.StatusOK {
				t.Errorf("GET %s without a token: %d %s", path, status, body)
			}
		}
	})
	t.Run("sdk error", func(t *testing.T) {
		c, err := sdk.New(ts.http.URL, sdk.Config{Token: "wrong"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.GetRun(context.Background(), "abc")
		var apiErr *sdk.APIError
		if !errors.As(err, &apiErr) || apiErr.Status != 401 || !errors.Is(err, sdk.ErrUnauthorized) {
			t.Fatalf("err = %v", err)
		}
	})
}

// TestNotFound: unknown runs, routes and workspaces are 404 problems;
// a wrong method is a 405 problem.
func TestNotFound(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, server.Config{})
	for _, tt := range []struct {
		name, method, path, body string
		status                   int
	}{
		{"unknown run", "GET", "/v1/runs/nosuchrun", "", 404},
		{"unknown run events", "GET", "/v1/runs/nosuchrun/events", "", 404},
		{"unknown run cancel", "POST", "/v1/runs/nosuchrun/cancel", "", 404},
		{"unknown route", "GET", "/v2/nothing", "", 404},
		{"unknown tool", "POST", "/v1/tools/no_such_tool", `{}`, 404},
		{"missing workspace", "POST", "/v1/runs", `{"task":{"prompt":"p"},"model":{"provider":"script","responses":["x"]},"workspace":"absent"}`, 404},
		{"missing tool workspace", "POST", "/v1/tools/calculator?workspace=absent", `{"left":1,"operation":"add","right":2}`, 404},
		{"wrong method", "DELETE", "/v1/runs", "", 405},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ct := ""
			if tt.body != "" {
				ct = "application/json"
			}
			status, h, body := ts.do(tt.method, tt.path, ct, strings.NewReader(tt.body))
			if status != tt.status {
				t.Fatalf("status %d, want %d: %s", status, tt.status, body)
			}
			if h.Get("Content-Type") != "application/problem+json" || problemOf(t, body).Status != tt.status {
				t.Errorf("not a problem: %s", body)
			}
		})
	}
	_, err := ts.sdk.GetRun(context.Background(), "nosuchrun")
	if !errors.Is(err, sdk.ErrNotFound) {
		t.Errorf("sdk GetRun: %v, want ErrNotFound", err)
	}
}

// TestTooLarge: bodies over the limit are 413 problems, whether the size
// is announced or not.
func TestTooLarge(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, server.Config{BodyLimit: 1024})
	big := `{"task":{"prompt":"` + strings.Repeat("a", 2048) + `"},"model":{"provider":"script","responses":["x"]}}`
	t.Run("content length", func(t *testing.T) {
		status, _, body := ts.do("POST", "/v1/runs", "application/json", strings.NewReader(big))
		if status != http.StatusRequestEntityTooLarge || problemOf(t, body).Status != 413 {
			t.Fatalf("status %d: %s", status, body)
		}
	})
	t.Run("chunked", func(t *testing.T) {
		// An io.Reader of unknown length is sent chunked.
		status, _, body := ts.do("POST", "/v1/runs", "application/json", io.MultiReader(strings.NewReader(big)))
		if status != http.StatusRequestEntityTooLarge || problemOf(t, body).Status != 413 {
			t.Fatalf("status %d: %s", status, body)
		}
	})
	t.Run("sdk", func(t *testing.T) {
		_, err := ts.sdk.CreateRun(context.Background(), gen.CreateRunRequest{Task: gen.Task{Prompt: strings.Repeat("a", 2048)}, Model: sdk.Script("x")})
		if !errors.Is(err, sdk.ErrTooLarge) {
			t.Fatalf("err = %v, want ErrTooLarge", err)
		}
	})
}
