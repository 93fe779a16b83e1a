package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/schema"
	"github.com/specloop/specloop/model"
	"github.com/specloop/specloop/server"
	"github.com/specloop/specloop/tools"
)

// argumentCorpus is tool-call arguments as raw JSON text, valid and not,
// as a model or an HTTP client may write them.
func argumentCorpus() []struct{ tool, raw string } {
	deep := strings.Repeat("[", schema.MaxDepth+1) + strings.Repeat("]", schema.MaxDepth+1)
	return []struct{ tool, raw string }{
		// Valid, including integers written 1.0 and 1e2.
		{"read_file", `{"path":"a.txt"}`},
		{"read_file", " {\"path\":\"a.txt\"}\n"},
		{"read_file", `{"path":"a.txt","start_line":1.0}`},
		{"read_file", `{"path":"a.txt","start_line":1e0,"end_line":2E0}`},
		{"read_file", `{"path":"a.txt","end_line":1.0e1}`},
		{"read_file", `{"path":"missing.txt"}`}, // a tool error, not invalid arguments
		{"calculator", `{"left":1.0,"operation":"add","right":1e2}`},
		{"calculator", `{"left":-0,"operation":"multiply","right":0.5}`},
		{"write_file", `{"path":"w.txt","content":"<&>"}`},
		// Duplicate keys, at the top and nested.
		{"read_file", `{"path":"a.txt","path":"b.txt"}`},
		{"write_file", `{"path":"a","content":"x","path":"b"}`},
		{"calculator", `{"left":1,"operation":"add","right":2,"operation":"subtract"}`},
		// Invalid UTF-8, raw and as an escaped lone surrogate.
		{"read_file", "{\"path\":\"a\xff.txt\"}"},
		{"write_file", "{\"path\":\"u.txt\",\"content\":\"\xc3\x28\"}"},
		{"read_file", `{"path":"a\ud800.txt"}`},
		// Trailing data and excessive nesting.
		{"read_file", `{"path":"a.txt"} x`},
		{"read_file", `{"path":"a.txt"}{"path":"b.txt"}`},
		{"read_file", `{"path":"a.txt","x":` + deep + `}`},
		// Integers: fractions, strings, out of the schema's and the Go
		// type's range.
		{"read_file", `{"path":"a.txt","start_line":1.5}`},
		{"read_file", `{"path":"a.txt","start_line":0}`},
		{"read_file", `{"path":"a.txt","start_line":"1"}`},
		{"read_file", `{"path":"a.txt","start_line":1e19}`},
		{"read_file", `{"path":"a.txt","start_line":9223372036854775807}`},
		{"read_file", `{"path":"a.txt","end_line":-1e19}`},
		{"read_file", `{"path":"a.txt","start_line":1e400}`},
		// Schema errors.
		{"read_file", `{}`},
		{"read_file", `{"path":""}`},
		{"read_file", `{"path":"a.txt","extra":1}`},
		{"calculator", `{"left":1,"operation":"power","right":2}`},
		{"read_file", `[]`},
		{"read_file", `"a.txt"`},
		{"read_file", `null`},
		{"read_file", `{"path":`},
	}
}

// verdict is what became of one tool call: accepted (run, whatever the
// tool said) or refused as invalid, and the field named when refused.
type verdict struct {
	accepted bool
	field    string
}

// TestModelAndHTTPPathsAgree feeds the same arguments to the model path
// (decoded as an adapter decodes a model's tool-call arguments, parsed as
// an Action, run by the tool runtime) and to the HTTP path (POST
// /v1/tools/{name} against the real server) and requires the same verdict:
// neither path is laxer than the other, and neither answers with an
// internal error.
func TestModelAndHTTPPathsAgree(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, server.Config{})
	dir := filepath.Join(ts.cfg.WorkspaceRoot, "proj")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\ntwo\nthree\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ws, err := tools.OpenWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	rt, err := tools.New(tools.Config{Workspace: ws, DisableCommands: true})
	if err != nil {
		t.Fatal(err)
	}

	modelPath := func(tool, raw string) verdict {
		args, err := schema.Decode([]byte(raw))
		if err != nil {
			return verdict{field: pointerIn(err.Error())}
		}
		action, err := json.Marshal(map[string]any{"type": "tool_call", "tool_name": tool, "arguments": args})
		if err != nil {
			t.Fatal(err)
		}
		a, err := model.ParseAction(string(action))
		if err != nil {
			return verdict{field: strings.TrimPrefix(pointerIn(err.Error()), "/arguments")}
		}
		obs, err := rt.Call(context.Background(), a.ToolCall)
		if err != nil {
			t.Fatalf("model path, %s %q: internal error %v", tool, raw, err)
		}
		if obs.IsError && *obs.ErrorCode == gen.ErrorCodeInvalidArguments {
			return verdict{field: pointerIn(obs.Content)}
		}
		return verdict{accepted: true}
	}
	httpPath := func(tool, raw string) verdict {
		status, h, body := ts.do(http.MethodPost, "/v1/tools/"+tool+"?workspace=proj", "application/json", bytes.NewReader([]byte(raw)))
		switch {
		case status == http.StatusOK || status == http.StatusUnprocessableEntity:
			return verdict{accepted: true}
		case status == http.StatusBadRequest:
			if ct := h.Get("Content-Type"); ct != "application/problem+json" {
				t.Errorf("HTTP path, %s %q: 400 as %q", tool, raw, ct)
			}
			p := problemOf(t, body)
			if p.Field == nil {
				return verdict{}
			}
			return verdict{field: *p.Field}
		}
		t.Fatalf("HTTP path, %s %q: status %d: %s", tool, raw, status, body)
		return verdict{}
	}

	for _, c := range argumentCorpus() {
		m, h := modelPath(c.tool, c.raw), httpPath(c.tool, c.raw)
		if m.accepted != h.accepted {
			t.Errorf("%s %q: model path accepted=%v (%s), HTTP path accepted=%v (%s)", c.tool, c.raw, m.accepted, m.field, h.accepted, h.field)
			continue
		}
		// The strict decoder is shared, so where it refuses, both paths
		// name the same place.
		if _, err := schema.Decode([]byte(c.raw)); err != nil && m.field != h.field {
			t.Errorf("%s %q: model path names %q, HTTP path %q", c.tool, c.raw, m.field, h.field)
		}
	}

	// What the HTTP path accepted was the client's value, not the last
	// duplicate: no file b was written.
	if _, err := os.Stat(filepath.Join(dir, "b")); err == nil {
		t.Error("a request with a duplicate path key wrote the last one")
	}
	if b, err := os.ReadFile(filepath.Join(dir, "w.txt")); err != nil || string(b) != "<&>" {
		t.Errorf("w.txt = %q, %v", b, err)
	}
}

// pointerIn returns the JSON pointer an error message names (the first
// quoted string that starts with a slash), or "".
func pointerIn(msg string) string {
	for _, part := range strings.Split(msg, `"`) {
		if strings.HasPrefix(part, "/") {
			return part
		}
	}
	return ""
}

// TestIntegersWrittenAsFloats: issue 11's HTTP case, 1.0 and 1e2 for an
// integer, is accepted and binds as the integer.
func TestIntegersWrittenAsFloats(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, server.Config{})
	dir := filepath.Join(ts.cfg.WorkspaceRoot, "proj")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	lines := strings.Repeat("x\n", 150)
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	status, _, body := ts.do(http.MethodPost, "/v1/tools/read_file?workspace=proj", "application/json", strings.NewReader(`{"path":"a.txt","start_line":2.0,"end_line":1e2}`))
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	var res gen.ReadFileResult
	if err := json.Unmarshal(body, &res); err != nil {
		t.Fatal(err)
	}
	if res.StartLine != 2 || res.EndLine != 100 {
		t.Fatalf("lines %d to %d, want 2 to 100", res.StartLine, res.EndLine)
	}
}

// TestRunsAPIDecodesStrictly: POST /v1/runs goes through the same strict
// decoder: a duplicate key, invalid UTF-8 or trailing data is a 400 that
// names the field, not a run of whichever value encoding/json kept.
func TestRunsAPIDecodesStrictly(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, server.Config{})
	good, err := json.Marshal(calcRequest())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(good, []byte(`"prompt":`)) {
		t.Fatalf("no prompt in %s", good)
	}
	tests := []struct{ name, body, field string }{
		{"duplicate key", strings.Replace(string(good), `"prompt":`, `"prompt":"SECRET","prompt":`, 1), "/task/prompt"},
		{"invalid UTF-8", strings.Replace(string(good), `"prompt":"`, "\"prompt\":\"\xff", 1), "/task/prompt"},
		{"trailing data", string(good) + ` {}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, h, body := ts.do(http.MethodPost, "/v1/runs", "application/json", strings.NewReader(tt.body))
			if status != http.StatusBadRequest || h.Get("Content-Type") != "application/problem+json" {
				t.Fatalf("status %d (%s): %s", status, h.Get("Content-Type"), body)
			}
			p := problemOf(t, body)
			got := ""
			if p.Field != nil {
				got = *p.Field
			}
			if got != tt.field {
				t.Fatalf("field %q, want %q", got, tt.field)
			}
			if bytes.Contains(body, []byte("SECRET")) {
				t.Fatalf("the problem echoes the value: %s", body)
			}
		})
	}
}
