package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/mcpclient"
	"github.com/specloop/specloop/mcpserver"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/sdk"
	"github.com/specloop/specloop/server"
	"github.com/specloop/specloop/tools"
)

// bearer adds a token to every request.
type bearer struct {
	token string
	host  string
}

func (b bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	if b.token != "" {
		req.Header.Set("Authorization", "Bearer "+b.token)
	}
	if b.host != "" {
		req.Host = b.host
	}
	return http.DefaultTransport.RoundTrip(req)
}

func mcpServerConfig(t *testing.T) server.Config {
	t.Helper()
	rt, err := tools.New(tools.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := mcpserver.New(rt, mcpserver.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return server.Config{MCPHandler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)}
}

func mcpConnect(ctx context.Context, url string, rt http.RoundTripper) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil)
	return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: rt}, MaxRetries: -1}, nil)
}

// /mcp serves the tools behind the API's token.
func TestMCPEndpoint(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, mcpServerConfig(t))
	url := ts.http.URL + "/mcp"
	ctx := context.Background()

	// Without the token: 401, like the API.
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("/mcp without a token: %d, want 401", resp.StatusCode)
	}
	if cs, err := mcpConnect(ctx, url, bearer{}); err == nil {
		cs.Close()
		t.Fatal("an MCP client without the token connected")
	}

	// With it: the spec's tools, and calls.
	cs, err := mcpConnect(ctx, url, bearer{token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	if err != nil || len(res.Tools) == 0 || res.Tools[0].Name != "calculator" {
		t.Fatalf("tools/list: %v %v", res, err)
	}
	out, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "calculator", Arguments: map[string]any{"operation": "divide", "left": 1, "right": 0}})
	if err != nil || !out.IsError {
		t.Fatalf("a division by zero: %+v %v", out, err)
	}

	// DNS rebinding: a request that reached the loopback address naming
	// another host is refused, even with the token.
	if cs, err := mcpConnect(ctx, url, bearer{token: testToken, host: "evil.example"}); err == nil {
		cs.Close()
		t.Fatal("a request naming another Host was served")
	}
}

// A run chooses among the MCP servers the server was configured with; an
// unknown name is a 400 naming it.
func TestRunWithMCPServer(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	ext := mcp.NewServer(&mcp.Implementation{Name: "weather", Version: "v1"}, nil)
	type in struct {
		City string `json:"city"`
	}
	mcp.AddTool(ext, &mcp.Tool{Name: "forecast", Description: "A city's forecast."},
		func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
			calls.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sunny in " + a.City}}}, nil, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ext }, nil))
	defer hs.Close()

	ts := newTestServer(t, server.Config{Config: runner.Config{MCPServers: []mcpclient.Server{{Name: "weather", URL: hs.URL}}}})

	bad := gen.CreateRunRequest{Task: gen.Task{Prompt: "x"}, Model: sdk.Script(`{"type":"finish","answer":"x"}`), McpServers: &[]string{"weather", "nope"}}
	data, _ := json.Marshal(bad)
	status, _, body := ts.do(http.MethodPost, "/v1/runs", "application/json", bytes.NewReader(data))
	if status != http.StatusBadRequest || !strings.Contains(string(body), `nope`) || !strings.Contains(string(body), "/mcp_servers/1") {
		t.Fatalf("an unknown MCP server: %d %s", status, body)
	}

	run := ts.create(gen.CreateRunRequest{
		Task: gen.Task{Prompt: "weather?"},
		Model: sdk.Script(
			`{"type":"tool_call","tool_name":"weather__forecast","arguments":{"city":"Oslo"}}`,
			`{"type":"finish","answer":"sunny"}`),
		McpServers: &[]string{"weather"},
	})
	run = ts.wait(run.Id)
	if run.Result == nil || run.Result.ExitReason != gen.ExitReasonFinished || calls.Load() != 1 {
		t.Fatalf("run %+v, %d calls reached the MCP server", run.Result, calls.Load())
	}
}

// The tools of the server's MCP servers are listed and callable over HTTP
// like the built-in ones, on one session kept for every call.
func TestMCPToolsOverHTTP(t *testing.T) {
	t.Parallel()
	ext := mcp.NewServer(&mcp.Implementation{Name: "weather", Version: "v1"}, nil)
	type in struct {
		City string `json:"city"`
	}
	mcp.AddTool(ext, &mcp.Tool{Name: "forecast", Description: "A city's forecast."},
		func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
			if a.City == "" {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no city"}}}, nil, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sunny in " + a.City}}}, nil, nil
		})
	var sessions atomic.Int64
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ext }, nil))
	t.Cleanup(hs.Close) // after the server's shutdown, which ends the session
	counting := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"method":"initialize"`)) {
			sessions.Add(1)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		hs.Config.Handler.ServeHTTP(w, r)
	})
	cs := httptest.NewServer(counting)
	t.Cleanup(cs.Close)

	ts := newTestServer(t, server.Config{Config: runner.Config{MCPServers: []mcpclient.Server{{Name: "weather", URL: cs.URL}}}})
	ctx := context.Background()
	specs, err := ts.sdk.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !hasTool(specs, "weather__forecast") || !hasTool(specs, "calculator") {
		t.Fatalf("GET /v1/tools lists %d tools without weather__forecast or calculator", len(specs))
	}
	for range 2 {
		got, err := callTool(ctx, ts.sdk, "", "weather__forecast", map[string]any{"city": "Oslo"})
		if err != nil || got["output"] != "sunny in Oslo" {
			t.Fatalf("weather__forecast: %v %v", got, err)
		}
	}
	_, err = callTool(ctx, ts.sdk, "", "weather__forecast", map[string]any{"city": ""})
	var apiErr *sdk.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusUnprocessableEntity || apiErr.Problem.Code == nil || *apiErr.Problem.Code != gen.ErrorCodeMcpToolError {
		t.Fatalf("a tool error of the MCP server: %v", err)
	}
	_, err = callTool(ctx, ts.sdk, "", "weather__forecast", map[string]any{"city": 1})
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusBadRequest {
		t.Fatalf("input the MCP tool's schema refuses: %v", err)
	}
	if n := sessions.Load(); n != 1 {
		t.Errorf("the server opened %d sessions with the MCP server for its tool calls, want 1", n)
	}
}
