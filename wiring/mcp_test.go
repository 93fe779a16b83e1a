package wiring_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/mcpclient"
	"github.com/specloop/specloop/wiring"
)

func weatherServer(t *testing.T) string {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "weather", Version: "v1"}, nil)
	type in struct {
		City string `json:"city"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "forecast", Description: "The forecast of a city."},
		func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sunny in " + a.City}}}, nil, nil
		})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	return ts.URL
}

// MCP servers of the Config are connected by Open: the options' tools are
// the built-ins and theirs, the workspace patch still reaches the run, and
// Close ends the sessions.
func TestOpenAddsMCPServers(t *testing.T) {
	dir := t.TempDir()
	s, err := wiring.Open(wiring.Config{Dir: dir, DisableCommands: true, MCPServers: []mcpclient.Server{{Name: "weather", URL: weatherServer(t)}}})
	if err != nil {
		t.Fatal(err)
	}
	if s.MCP == nil || s.Options.Tools != s.MCP {
		t.Fatal("the options' tools are not the MCP runtime")
	}
	names := map[string]bool{}
	for _, spec := range s.Options.Tools.Specs() {
		names[spec.Name] = true
	}
	if !names["weather__forecast"] || !names["read_file"] {
		t.Fatalf("tools offered: %v", names)
	}
	obs, err := s.Options.Tools.Call(context.Background(), &gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: "weather__forecast", Arguments: map[string]any{"city": "Oslo"}})
	if err != nil || obs.Content != "sunny in Oslo" {
		t.Fatalf("%+v %v", obs, err)
	}
	if _, ok := s.Options.Tools.(agent.Patcher); !ok {
		t.Fatal("the MCP runtime hides the workspace patch")
	}
	mr := s.MCP
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	obs, _ = mr.Call(context.Background(), &gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: "weather__forecast", Arguments: map[string]any{"city": "Oslo"}})
	if !obs.IsError {
		t.Fatal("a call after Close still reached the server")
	}
}

// A server that cannot be started fails Open with PartMCP, naming it.
func TestOpenMCPFailure(t *testing.T) {
	dir := t.TempDir()
	_, err := wiring.Open(wiring.Config{Dir: dir, DisableCommands: true, MCPServers: []mcpclient.Server{{Name: "gone", Command: []string{filepath.Join(dir, "no-such-server")}}}})
	var we *wiring.Error
	if !errors.As(err, &we) || we.Part != wiring.PartMCP || !strings.Contains(err.Error(), `"gone"`) {
		t.Fatalf("Open: %v", err)
	}
}
