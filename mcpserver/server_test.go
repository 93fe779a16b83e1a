package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/contract"
	"github.com/specloop/specloop/mcpserver"
	"github.com/specloop/specloop/sandbox"
	"github.com/specloop/specloop/tools"
)

// connect serves rt over in-memory transports and returns a client session.
func connect(tb testing.TB, rt *tools.Runtime) *mcp.ClientSession {
	tb.Helper()
	return connectWith(tb, rt, mcpserver.Config{})
}

// connectWith is connect for any runtime and server configuration.
func connectWith(tb testing.TB, rt agent.ToolRuntime, cfg mcpserver.Config) *mcp.ClientSession {
	tb.Helper()
	srv, err := mcpserver.New(rt, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cs.Close() })
	return cs
}

// runtime is every built-in tool on a fixture workspace, commands
// unconfined (the sandbox has its own tests; these test the protocol).
func runtime(t *testing.T) (*tools.Runtime, string) {
	t.Helper()
	dir := t.TempDir()
	if err := contract.WriteFixture(dir); err != nil {
		t.Fatal(err)
	}
	ws, err := tools.OpenWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	rt, err := tools.New(tools.Config{Workspace: ws, Sandbox: sandbox.Policy{Backend: sandbox.None}})
	if err != nil {
		t.Fatal(err)
	}
	return rt, dir
}

func TestListsExactlyTheSpecTools(t *testing.T) {
	rt, _ := runtime(t)
	cs := connect(t, rt)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got, want []string
	byName := map[string]*mcp.Tool{}
	for _, tool := range res.Tools {
		got = append(got, tool.Name)
		byName[tool.Name] = tool
	}
	// Every tool the spec defines is offered (a workspace and commands
	// are set), and nothing else.
	for _, d := range rt.Registry().Defs() {
		want = append(want, d.Spec.Name)
	}
	sort.Strings(got)
	if !slices.Equal(got, want) {
		t.Fatalf("tools listed %v, the spec has %v", got, want)
	}
	for _, spec := range rt.Specs() {
		tool := byName[spec.Name]
		same(t, spec.Name+" inputSchema", tool.InputSchema, spec.InputSchema)
		if spec.ResultSchema == nil {
			if tool.OutputSchema != nil {
				t.Errorf("%s: outputSchema %v, but the spec has no result schema", spec.Name, tool.OutputSchema)
			}
			continue
		}
		same(t, spec.Name+" outputSchema", tool.OutputSchema, *spec.ResultSchema)
		if !strings.HasPrefix(tool.Description, spec.Description) {
			t.Errorf("%s: description %q does not start with the spec's", spec.Name, tool.Description)
		}
	}
}

// same compares two JSON values by their encodings (encoding/json sorts
// object keys, so equal values encode to the same bytes).
func same(t *testing.T, what string, got, want any) {
	t.Helper()
	g, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	w, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if string(g) != string(w) {
		t.Errorf("%s differs from the spec:\n got %s\nwant %s", what, g, w)
	}
}

// examples returns each tool's first request example from the spec.
func examples(t *testing.T) map[string]map[string]any {
	t.Helper()
	doc, err := contract.Spec()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for path, item := range doc.Paths.Map() {
		name, ok := strings.CutPrefix(path, "/v1/tools/")
		if !ok || strings.Contains(name, "{") || item.Post == nil {
			continue
		}
		mt := item.Post.RequestBody.Value.Content.Get("application/json")
		keys := make([]string, 0, len(mt.Examples))
		for k := range mt.Examples {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if len(keys) == 0 {
			t.Fatalf("tool %s has no request example", name)
		}
		data, _ := json.Marshal(mt.Examples[keys[0]].Value.Value)
		var args map[string]any
		if err := json.Unmarshal(data, &args); err != nil {
			t.Fatal(err)
		}
		out[name] = args
	}
	return out
}

func TestCallsEveryToolValidAndInvalid(t *testing.T) {
	ex := examples(t)
	for _, name := range toolNames(t) {
		t.Run(name, func(t *testing.T) {
			rt, _ := runtime(t)
			cs := connect(t, rt)
			args, ok := ex[name]
			if !ok {
				t.Fatalf("no example for %s", name)
			}
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
			if err != nil {
				t.Fatalf("valid call: protocol error %v", err)
			}
			if res.IsError {
				t.Fatalf("valid call failed: %s", text(res))
			}
			// The same call straight on a runtime gives the same result.
			rt2, _ := runtime(t)
			obs, err := rt2.Call(context.Background(), &gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: name, Arguments: args})
			if err != nil || obs.IsError {
				t.Fatalf("direct call: %v %s", err, obs.Content)
			}
			if name != "run_command" { // its result has a duration
				if text(res) != obs.Content {
					t.Errorf("content through MCP %q, directly %q", text(res), obs.Content)
				}
				same(t, "structuredContent", res.StructuredContent, *obs.Data)
			}

			// Every input schema is closed: an undeclared property is
			// refused by the runtime's validation, as data.
			bad := map[string]any{"not_a_property": 1}
			for k, v := range args {
				bad[k] = v
			}
			res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: bad})
			if err != nil {
				t.Fatalf("invalid call: protocol error %v", err)
			}
			wantError(t, res, gen.ErrorCodeInvalidArguments)
		})
	}
}

func toolNames(t *testing.T) []string {
	rt, _ := runtime(t)
	var names []string
	for _, s := range rt.Specs() {
		names = append(names, s.Name)
	}
	return names
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// wantError checks that res is a tool failure with code, carried in the
// structured content (the spec's Observation).
func wantError(t *testing.T, res *mcp.CallToolResult, code gen.ErrorCode) {
	t.Helper()
	if !res.IsError {
		t.Fatalf("isError is false; content %q", text(res))
	}
	data, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var obs gen.Observation
	if err := json.Unmarshal(data, &obs); err != nil {
		t.Fatalf("structuredContent %s is not an Observation: %v", data, err)
	}
	if obs.ErrorCode == nil || *obs.ErrorCode != code {
		t.Fatalf("error code %v, want %s (content %q)", obs.ErrorCode, code, text(res))
	}
	if !strings.HasPrefix(text(res), "error: ") {
		t.Errorf("content %q does not say it is an error", text(res))
	}
}

func TestArgumentsNotAnObjectAreInvalidArguments(t *testing.T) {
	rt, _ := runtime(t)
	cs := connect(t, rt)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "read_file", Arguments: []int{1, 2}})
	if err != nil {
		t.Fatalf("protocol error %v", err)
	}
	wantError(t, res, gen.ErrorCodeInvalidArguments)
}

func TestUnknownToolIsAProtocolError(t *testing.T) {
	rt, _ := runtime(t)
	cs := connect(t, rt)
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{}}); err == nil {
		t.Fatal("calling a tool that is not listed succeeded")
	}
}

// An escape through MCP is refused like any other: a relative path out
// of the workspace, an absolute path, and a symbolic link out of it.
func TestEscapeRefused(t *testing.T) {
	rt, dir := runtime(t)
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("top secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	cs := connect(t, rt)
	for _, call := range []struct {
		tool string
		args map[string]any
	}{
		{"read_file", map[string]any{"path": "../" + filepath.Base(outside) + "/secret.txt"}},
		{"read_file", map[string]any{"path": secret}},
		{"read_file", map[string]any{"path": "link/secret.txt"}},
		{"write_file", map[string]any{"path": "link/new.txt", "content": "x"}},
	} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: call.tool, Arguments: call.args})
		if err != nil {
			t.Fatalf("%s %v: protocol error %v", call.tool, call.args, err)
		}
		if !res.IsError || strings.Contains(text(res), "top secret") {
			t.Fatalf("%s %v was not refused: %q", call.tool, call.args, text(res))
		}
		wantError(t, res, gen.ErrorCodeOutsideWorkspace)
	}
	if _, err := os.Stat(filepath.Join(outside, "new.txt")); err == nil {
		t.Fatal("write_file wrote outside the workspace")
	}
}

// On the wire, each tool's inputSchema and outputSchema are the spec's
// schemas byte for byte (as encoding/json encodes the runtime's specs):
// read from a raw tools/list exchange, not through a client's decoding.
func TestSchemasOnTheWire(t *testing.T) {
	rt, _ := runtime(t)
	srv, err := mcpserver.New(rt, mcpserver.Config{})
	if err != nil {
		t.Fatal(err)
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var resp struct {
		Result struct {
			Tools []struct {
				Name         string          `json:"name"`
				InputSchema  json.RawMessage `json:"inputSchema"`
				OutputSchema json.RawMessage `json:"outputSchema"`
			} `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil || len(resp.Result.Tools) == 0 {
		t.Fatalf("tools/list: %d %s (%v)", rec.Code, rec.Body.Bytes(), err)
	}
	specs := map[string]gen.ToolSpec{}
	for _, s := range rt.Specs() {
		specs[s.Name] = s
	}
	for _, tool := range resp.Result.Tools {
		spec := specs[tool.Name]
		want, _ := json.Marshal(spec.InputSchema)
		if !bytes.Equal(tool.InputSchema, want) {
			t.Errorf("%s: inputSchema on the wire\n%s\nthe spec's\n%s", tool.Name, tool.InputSchema, want)
		}
		if spec.ResultSchema != nil {
			want, _ := json.Marshal(*spec.ResultSchema)
			if !bytes.Equal(tool.OutputSchema, want) {
				t.Errorf("%s: outputSchema on the wire\n%s\nthe spec's\n%s", tool.Name, tool.OutputSchema, want)
			}
		}
	}
}
