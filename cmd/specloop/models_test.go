package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/specloop/specloop/gen"
)

// provider is a fake model provider: it answers POSTs to path with bodies
// in order and records the requests' tool names.
type provider struct {
	mu     sync.Mutex
	bodies []string
	status []int
	tools  [][]string
	auth   []string
	system []string // each request's system prompt
}

func (p *provider) serve(t *testing.T, path string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path {
			t.Errorf("request to %s, want %s", r.URL.Path, path)
		}
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Tools []struct {
				Name     string `json:"name"`
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			} `json:"tools"`
			Messages []struct {
				Role    string `json:"role"`
				Content any    `json:"content"`
			} `json:"messages"`
			System []struct {
				Text string `json:"text"`
			} `json:"system"`
		}
		_ = json.Unmarshal(body, &req)
		p.mu.Lock()
		defer p.mu.Unlock()
		var names []string
		for _, tool := range req.Tools {
			names = append(names, tool.Name+tool.Function.Name)
		}
		p.tools = append(p.tools, names)
		switch {
		case len(req.System) > 0:
			p.system = append(p.system, req.System[0].Text)
		case len(req.Messages) > 0 && req.Messages[0].Role == "system":
			text, _ := req.Messages[0].Content.(string)
			p.system = append(p.system, text)
		}
		p.auth = append(p.auth, r.Header.Get("Authorization")+r.Header.Get("X-Api-Key"))
		if len(p.bodies) == 0 {
			t.Errorf("unexpected request")
			w.WriteHeader(http.StatusTeapot)
			return
		}
		status := http.StatusOK
		if len(p.status) > 0 {
			status, p.status = p.status[0], p.status[1:]
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, p.bodies[0])
		p.bodies = p.bodies[1:]
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

const (
	openaiToolCall = `{"id":"chatcmpl-1","object":"chat.completion","created":1741570283,"model":"gpt-4o-mini",
"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",
"function":{"name":"calculator","arguments":"{\"left\":12,\"operation\":\"multiply\",\"right\":7}"}}]},"finish_reason":"tool_calls"}],
"usage":{"prompt_tokens":80,"completion_tokens":20,"total_tokens":100}}`
	openaiAnswer = `{"id":"chatcmpl-2","object":"chat.completion","created":1741570284,"model":"gpt-4o-mini",
"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_2","type":"function",
"function":{"name":"finish","arguments":"{\"answer\":\"12 x 7 = 84.\"}"}}]},"finish_reason":"tool_calls"}],
"usage":{"prompt_tokens":120,"completion_tokens":8,"total_tokens":128}}`
	openaiError       = `{"error":{"message":"The server had an error","type":"server_error","param":null,"code":null}}`
	anthropicToolCall = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5",
"content":[{"type":"tool_use","id":"toolu_1","name":"calculator","input":{"left":12,"operation":"multiply","right":7}}],
"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":400,"output_tokens":50}}`
	anthropicAnswer = `{"id":"msg_2","type":"message","role":"assistant","model":"claude-sonnet-4-5",
"content":[{"type":"tool_use","id":"toolu_2","name":"finish","input":{"answer":"12 x 7 = 84."}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":500,"output_tokens":9}}`
)

func clearProviderEnv(t *testing.T) {
	for _, k := range []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"} {
		t.Setenv(k, "")
	}
}

func TestRunProviderModels(t *testing.T) {
	tests := []struct {
		name     string
		path     string
		bodies   []string
		env      map[string]string
		model    string
		urlFlag  bool // pass the server as --base-url (else through the environment)
		auth     string
		wantUsed gen.Usage
	}{
		{"openai", "/chat/completions", []string{openaiToolCall, openaiAnswer}, map[string]string{"OPENAI_API_KEY": "sk-env"}, "openai:gpt-4o-mini", true, "Bearer sk-env", gen.Usage{InputTokens: 200, OutputTokens: 28}},
		{"openai via OPENAI_BASE_URL, no key", "/chat/completions", []string{openaiToolCall, openaiAnswer}, nil, "openai:llama3.1", false, "", gen.Usage{InputTokens: 200, OutputTokens: 28}},
		{"anthropic", "/v1/messages", []string{anthropicToolCall, anthropicAnswer}, map[string]string{"ANTHROPIC_API_KEY": "sk-ant-env"}, "anthropic:claude-sonnet-4-5", true, "sk-ant-env", gen.Usage{InputTokens: 900, OutputTokens: 59}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearProviderEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			p := &provider{bodies: tt.bodies}
			url := p.serve(t, tt.path)
			tmp := t.TempDir()
			args := []string{"run", "--model", tt.model, "--workspace", tmp, "--no-commands", "--json"}
			if tt.urlFlag {
				args = append(args, "--base-url", url)
			} else {
				t.Setenv("OPENAI_BASE_URL", url)
			}
			code, stdout, stderr := specloop(t, append(args, prompt)...)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			var res gen.RunResult
			if err := json.Unmarshal([]byte(stdout), &res); err != nil {
				t.Fatal(err)
			}
			if res.ExitReason != gen.ExitReasonFinished || *res.Answer != "12 x 7 = 84." || *res.Usage != tt.wantUsed {
				t.Fatalf("result = %+v", res)
			}
			if p.auth[0] != tt.auth {
				t.Fatalf("credentials sent = %q, want %q", p.auth[0], tt.auth)
			}
			// The tools offered are the run's: the workspace tools without
			// run_command, and finish.
			names := strings.Join(p.tools[0], " ")
			if !strings.Contains(names, "read_file") || strings.Contains(names, "run_command") || !strings.HasSuffix(names, " finish") {
				t.Fatalf("tools offered: %s", names)
			}
		})
	}
}

// TestRunSystemFile: --system-file replaces the default system prompt of
// either provider, with {{finish}} naming the finish tool.
func TestRunSystemFile(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "system.md")
	if err := os.WriteFile(file, []byte("Be terse. Call {{finish}} when done.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ model, path, call, answer string }{
		{"openai:gpt-4o-mini", "/chat/completions", openaiToolCall, openaiAnswer},
		{"anthropic:claude-sonnet-4-5", "/v1/messages", anthropicToolCall, anthropicAnswer},
	} {
		t.Run(tt.model, func(t *testing.T) {
			clearProviderEnv(t)
			p := &provider{bodies: []string{tt.call, tt.answer}}
			url := p.serve(t, tt.path)
			code, _, stderr := specloop(t, "run", "--model", tt.model, "--base-url", url, "--system-file", file, "--context-window", "50000", "--workspace", tmp, "--no-commands", "--json", prompt)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if len(p.system) != 2 || p.system[0] != "Be terse. Call finish when done." || p.system[1] != p.system[0] {
				t.Fatalf("system prompts sent = %q", p.system)
			}
		})
	}
}

func TestRunProviderErrorIsModelError(t *testing.T) {
	clearProviderEnv(t)
	t.Setenv("OPENAI_API_KEY", "sk-env")
	p := &provider{bodies: []string{openaiError, openaiError, openaiError, openaiError}, status: []int{500, 500, 500, 500}}
	url := p.serve(t, "/chat/completions")
	code, stdout, stderr := specloop(t, "run", "--model", "openai:gpt-4o-mini", "--base-url", url, "--workspace", t.TempDir(), "--json", prompt)
	if code != exitModelError {
		t.Fatalf("exit %d, want %d (model_error): %s", code, exitModelError, stderr)
	}
	want := "openai: request failed after 3 retries: 500 Internal Server Error (server_error)"
	if !strings.Contains(stdout, want) {
		t.Fatalf("the result's error does not name the provider:\n%s", stdout)
	}
}

func TestRunModelUsageErrors(t *testing.T) {
	clearProviderEnv(t)
	tmp := t.TempDir()
	noRaw := filepath.Join(tmp, "plain.jsonl")
	empty := filepath.Join(tmp, "empty.md")
	if err := os.WriteFile(empty, []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := specloop(t, "run", "--script", "testdata/calculator.script", "--trace", noRaw, "--workspace", t.TempDir(), "--json", prompt); code != exitOK {
		t.Fatalf("recording: exit %d: %s", code, stderr)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"openai without key", []string{"--model", "openai:gpt-4o-mini"}, "set OPENAI_API_KEY"},
		{"anthropic without key", []string{"--model", "anthropic:claude-sonnet-4-5"}, "set ANTHROPIC_API_KEY"},
		{"no provider", []string{"--model", "gpt-4o-mini"}, "--model must be openai:MODEL, anthropic:MODEL, replay:RUN_ID|FILE or verify:TRACE_FILE"},
		{"unknown provider", []string{"--model", "gemini:pro"}, `unknown provider "gemini"`},
		{"bad base URL", []string{"--model", "openai:m", "--base-url", "localhost:11434"}, "absolute http or https URL"},
		{"missing trace", []string{"--model", "verify:" + filepath.Join(tmp, "missing.jsonl")}, "--model: replay:"},
		{"missing transcript", []string{"--model", "replay:" + filepath.Join(tmp, "missing.jsonl")}, "--model: replay:"},
		{"trace without raw responses", []string{"--model", "verify:" + noRaw}, "record the run with --record-raw"},
		{"a trace to replay", []string{"--model", "replay:" + noRaw}, "is a trace, not a transcript; --model verify:" + noRaw},
		{"verify with base URL", []string{"--model", "verify:" + noRaw, "--base-url", "http://x"}, "--base-url does not apply to --model verify:TRACE_FILE"},
		{"replay with base URL", []string{"--model", "replay:" + noRaw, "--base-url", "http://x"}, "--base-url does not apply"},
		{"replay with system file", []string{"--model", "replay:" + noRaw, "--system-file", noRaw}, "--system-file does not apply"},
		{"replay with context window", []string{"--model", "replay:" + noRaw, "--context-window", "9000"}, "--context-window does not apply"},
		{"negative context window", []string{"--model", "openai:m", "--context-window", "-1"}, "--context-window must be 0 (the model family's default) or between 1024 and"},
		{"tiny context window", []string{"--model", "openai:m", "--context-window", "1000"}, "--context-window must be 0"},
		{"missing system file", []string{"--model", "openai:m", "--base-url", "http://x", "--system-file", filepath.Join(tmp, "none.md")}, "--system-file: open"},
		{"empty system file", []string{"--model", "openai:m", "--base-url", "http://x", "--system-file", empty}, "is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"run", "--workspace", tmp}, tt.args...)
			code, _, stderr := specloop(t, append(args, prompt)...)
			if code != exitUsage || !strings.Contains(stderr, tt.want) {
				t.Fatalf("exit %d, stderr %q; want usage error with %q", code, stderr, tt.want)
			}
		})
	}
}

func TestRunVerify(t *testing.T) {
	tmp := t.TempDir()
	tracePath := filepath.Join(tmp, "run.jsonl")
	code, recorded, stderr := specloop(t, "run", "--script", "testdata/calculator.script", "--record-raw", "--max-steps", "3", "--trace", tracePath, "--workspace", t.TempDir(), "--json", prompt)
	if code != exitOK {
		t.Fatalf("recording: exit %d: %s", code, stderr)
	}
	code, replayed, stderr := specloop(t, "run", "--model", "verify:"+tracePath, "--workspace", t.TempDir(), "--json", prompt)
	if code != exitOK {
		t.Fatalf("replay: exit %d: %s", code, stderr)
	}
	var a, b gen.RunResult
	if err := json.Unmarshal([]byte(recorded), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(replayed), &b); err != nil {
		t.Fatal(err)
	}
	if *a.Answer != *b.Answer || a.StepsUsed != b.StepsUsed || a.ExitReason != b.ExitReason {
		t.Fatalf("replayed %+v, recorded %+v", b, a)
	}
	// Another task is a divergence: a model error that says so.
	code, stdout, _ := specloop(t, "run", "--model", "verify:"+tracePath, "--workspace", tmp, "--json", "another task")
	if code != exitModelError || !strings.Contains(stdout, "replay diverged from the recorded run: the task differs") {
		t.Fatalf("exit %d, result %s", code, stdout)
	}
}

// TestRemoteModelContextWindow: --context-window goes with a --remote run
// in the spec's model configuration, as it configures a local one.
func TestRemoteModelContextWindow(t *testing.T) {
	for _, window := range []int{0, 20000} {
		f := &runFlags{model: "openai:gpt-4o", contextWindow: window}
		mc, err := modelConfig(f)
		if err != nil {
			t.Fatal(err)
		}
		o, err := mc.AsOpenAIModelConfig()
		if err != nil || o.Model != "gpt-4o" || (window == 0) != (o.ContextWindow == nil) || (o.ContextWindow != nil && *o.ContextWindow != window) {
			t.Fatalf("window %d: %+v, %v", window, o, err)
		}
		f.model = "anthropic:claude-sonnet-4-5"
		if mc, err = modelConfig(f); err != nil {
			t.Fatal(err)
		}
		a, err := mc.AsAnthropicModelConfig()
		if err != nil || a.Model != "claude-sonnet-4-5" || (window == 0) != (a.ContextWindow == nil) {
			t.Fatalf("window %d: %+v, %v", window, a, err)
		}
	}
}
