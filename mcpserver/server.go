// Package mcpserver serves a tool runtime over the Model Context Protocol,
// with github.com/modelcontextprotocol/go-sdk: `specloop mcp` over stdio and
// /mcp (streamable HTTP) on `specloop serve`.
//
// The tools listed are exactly the runtime's (the spec's) tools. Each
// inputSchema is the spec's input schema passed through as raw JSON and
// each outputSchema the spec's result schema, so there is no second schema
// source; the SDK neither infers nor validates them. A call goes through the
// runtime like any call of a run: validation against the spec, the
// workspace's os.Root confinement, the sandbox and the spec's error codes.
// A tool failure is a CallToolResult with isError set, whose text is the
// error Observation's content and whose structuredContent is the
// Observation itself (error_code included); only protocol faults (and a
// runtime that failed internally) are protocol errors.
//
// NewHTTPHandler serves a server over streamable HTTP with its sessions
// capped, in all and per client address, and closed when idle.
package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/buildinfo"
)

// Config configures a server; the zero value logs nothing. The server
// introduces itself to clients as "specloop" with the main module's
// version.
type Config struct {
	// Logger receives the SDK's log and the errors of calls the runtime
	// failed internally (the client is told only to see the log); nil
	// discards them.
	Logger *slog.Logger
}

// New returns an MCP server whose tools are rt's tools. rt is usually a
// *tools.Runtime; its Call must be safe for concurrent use, since clients
// may call tools concurrently.
func New(rt agent.ToolRuntime, cfg Config) (*mcp.Server, error) {
	impl := &mcp.Implementation{Name: "specloop", Version: buildinfo.Version()}
	s := mcp.NewServer(impl, &mcp.ServerOptions{Logger: cfg.Logger})
	for _, spec := range rt.Specs() {
		tool, err := toolOf(spec)
		if err != nil {
			return nil, err
		}
		s.AddTool(tool, handler(rt, spec.Name, cfg.Logger))
	}
	return s, nil
}

// toolOf returns the MCP tool of a tool spec: its name and description, its
// input schema and (when the spec has one) its result schema as raw JSON.
func toolOf(spec gen.ToolSpec) (*mcp.Tool, error) {
	if t, _ := spec.InputSchema["type"].(string); t != "object" {
		// AddTool would panic: MCP requires object input schemas.
		return nil, fmt.Errorf("mcpserver: tool %q: the input schema is not of type object", spec.Name)
	}
	in, err := json.Marshal(spec.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("mcpserver: tool %q: input schema: %w", spec.Name, err)
	}
	tool := &mcp.Tool{Name: spec.Name, Description: description(spec), InputSchema: json.RawMessage(in)}
	if spec.ResultSchema != nil {
		out, err := json.Marshal(*spec.ResultSchema)
		if err != nil {
			return nil, fmt.Errorf("mcpserver: tool %q: result schema: %w", spec.Name, err)
		}
		tool.OutputSchema = json.RawMessage(out)
	}
	return tool, nil
}

// description is what a model using the tool through MCP is told: the
// description, what a call returns and how it fails, as a run's model is.
func description(spec gen.ToolSpec) string {
	d := spec.Description
	if spec.OutputDescription != "" {
		d += "\n\nReturns: " + spec.OutputDescription
	}
	if spec.ErrorDescription != "" {
		d += "\n\nErrors: " + spec.ErrorDescription
	}
	return d
}

// errRuntimeFailed is what a client learns of a runtime that failed
// internally; the error itself, which may name the host's paths, is
// logged.
var errRuntimeFailed = errors.New("the tool runtime failed; see the server's log")

func handler(rt agent.ToolRuntime, name string, logger *slog.Logger) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		call := &gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: name}
		if raw := bytes.TrimSpace(req.Params.Arguments); len(raw) > 0 && !bytes.Equal(raw, []byte("null")) {
			if err := json.Unmarshal(raw, &call.Arguments); err != nil {
				return result(notAnObject(name)), nil
			}
		}
		obs, err := rt.Call(ctx, call)
		if err != nil {
			// The runtime failed, not the tool: the client learns that
			// the call could not be answered, the operator why.
			if logger != nil {
				logger.Error("an MCP tool call failed in the runtime", "tool", name, "err", err)
			}
			return nil, errRuntimeFailed
		}
		return result(obs), nil
	}
}

// notAnObject is the error Observation of a call whose arguments are JSON
// but not an object, which the runtime (taking a map) cannot be handed.
func notAnObject(name string) gen.Observation {
	code := gen.ErrorCodeInvalidArguments
	return gen.Observation{
		Type:      gen.ObservationTypeObservation,
		ToolName:  name,
		IsError:   true,
		ErrorCode: &code,
		Content:   fmt.Sprintf("error: invalid arguments for %s: the arguments must be a JSON object", name),
	}
}

// result turns an Observation into a CallToolResult: its content as text;
// for a success its data as structuredContent, for a failure isError and
// the Observation itself as structuredContent, which carries the error
// code.
func result(obs gen.Observation) *mcp.CallToolResult {
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: obs.Content}}, IsError: obs.IsError}
	switch {
	case obs.IsError:
		res.StructuredContent = obs
	case obs.Data != nil:
		res.StructuredContent = *obs.Data
	}
	return res
}
