package mcpserver_test

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/tools"
)

// BenchmarkCall measures a calculator call through MCP (in-memory
// transport: the protocol's encoding and dispatch, no network) against the
// same call on the runtime directly.
func BenchmarkCall(b *testing.B) {
	rt, err := tools.New(tools.Config{})
	if err != nil {
		b.Fatal(err)
	}
	args := map[string]any{"operation": "multiply", "left": 12.0, "right": 7.0}
	b.Run("direct", func(b *testing.B) {
		call := &gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: "calculator", Arguments: args}
		for b.Loop() {
			if obs, err := rt.Call(context.Background(), call); err != nil || obs.IsError {
				b.Fatal(err, obs.Content)
			}
		}
	})
	b.Run("mcp", func(b *testing.B) {
		cs := connect(b, rt)
		params := &mcp.CallToolParams{Name: "calculator", Arguments: args}
		for b.Loop() {
			if res, err := cs.CallTool(context.Background(), params); err != nil || res.IsError {
				b.Fatal(err)
			}
		}
	})
}
