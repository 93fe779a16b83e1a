// Package mcpclient offers the tools of external MCP servers to a run, next
// to the built-in ones, with github.com/modelcontextprotocol/go-sdk.
//
// A Server is a command speaking MCP over stdio or a streamable HTTP URL,
// from the user's own configuration (`specloop run --mcp NAME=…`, or
// `specloop serve --mcp NAME=…` whose runs choose among them by name).
// Connect starts it and lists its tools; Runtime offers each as NAME__tool
// with the tool's own input schema, validates arguments against that schema
// (JSON Schema 2020-12, with draft-07's forms, through internal/schema)
// before anything reaches the server, and turns
// results into Observations: isError
// becomes an error Observation with code mcp_tool_error; a server that
// stops, times out (Config.CallTimeout) or breaks the protocol gives
// mcp_unavailable, never a hung run.
//
// What a server offers is untrusted input, since it goes into every model
// request and checks every call: at most MaxToolsPerServer tools a server
// (MaxTools in all) of at most MaxServerBytes, descriptions clipped to MaxDescriptionBytes (with a
// marker, and a warning), and schemas of at most MaxSchemaBytes and
// MaxSchemaDepth whose validation of one value costs at most
// MaxSchemaCost checks per place of the value (schemaCost), so that
// validating a call is bounded; it also returns as soon as the run is
// cancelled. A server over a cap is refused at start, naming the tool.
//
// Stdio servers are the user's configuration: they run unsandboxed, as
// the user, like the MCP servers of any desktop client, but in the root
// of the file system and with an environment of their own (BaseEnv and
// the variables Server.Env names), never specloop's, which holds the
// providers' keys and the API server's token: an MCP server may be
// anyone's program. Each runs in a process group of its own that Close
// stops entirely.
package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
)

// Runtime is a tool runtime that offers the tools of MCP sessions next to
// a base runtime's (usually a *tools.Runtime). It passes the base's
// optional abilities (the workspace patch, the sandbox) through.
type Runtime struct {
	base     agent.ToolRuntime
	sessions []*Session
	tools    map[string]*tool
	builtin  map[string]bool
	specs    []gen.ToolSpec
	names    string // every tool's name, for unknown_tool
}

var (
	_ agent.ToolRuntime = (*Runtime)(nil)
	_ agent.Patcher     = (*Runtime)(nil)
	_ agent.Sandboxed   = (*Runtime)(nil)
)

// NewRuntime adds the sessions' tools to base's. A name offered twice (two
// sessions of one name, or a base tool named like NAME__tool) is refused.
// Close closes the sessions.
func NewRuntime(base agent.ToolRuntime, sessions ...*Session) (*Runtime, error) {
	if base == nil {
		return nil, errors.New("mcpclient: a base runtime is required")
	}
	r := &Runtime{base: base, sessions: sessions, tools: map[string]*tool{}, builtin: map[string]bool{}, specs: slices.Clone(base.Specs())}
	names := make([]string, 0, len(r.specs))
	for _, s := range r.specs {
		r.builtin[s.Name] = true
		names = append(names, s.Name)
	}
	n := 0
	for _, s := range sessions {
		n += len(s.tools)
	}
	if n > MaxTools {
		return nil, fmt.Errorf("mcpclient: the MCP servers offer %d tools in all, more than the %d a run takes; use fewer servers", n, MaxTools)
	}
	for _, s := range sessions {
		for _, t := range s.tools {
			if r.builtin[t.spec.Name] || r.tools[t.spec.Name] != nil {
				return nil, fmt.Errorf("mcpclient: the tool %s is offered twice (is the server name %q given twice?)", t.spec.Name, s.server.Name)
			}
			r.tools[t.spec.Name] = t
			r.specs = append(r.specs, t.spec)
			names = append(names, t.spec.Name)
		}
	}
	r.names = strings.Join(names, ", ")
	return r, nil
}

// Open connects to every server (at once) and returns base with their
// tools added. When one fails, the others are closed and the error names
// the server.
func Open(ctx context.Context, base agent.ToolRuntime, servers []Server, cfg Config) (*Runtime, error) {
	names := map[string]bool{}
	for _, s := range servers {
		if names[s.Name] {
			return nil, fmt.Errorf("mcpclient: the server name %q is given twice", s.Name)
		}
		names[s.Name] = true
	}
	sessions := make([]*Session, len(servers))
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, srv := range servers {
		wg.Go(func() { sessions[i], errs[i] = Connect(ctx, srv, cfg) })
	}
	wg.Wait()
	closeAll := func() {
		for _, s := range sessions {
			if s != nil {
				s.Close()
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		closeAll()
		return nil, err
	}
	r, err := NewRuntime(base, sessions...)
	if err != nil {
		closeAll()
		return nil, err
	}
	return r, nil
}

// Specs returns the base's tools, then each session's.
func (r *Runtime) Specs() []gen.ToolSpec { return r.specs }

// Call runs a call of an MCP tool, after validating its arguments against
// the tool's input schema, or passes any other call to the base runtime.
func (r *Runtime) Call(ctx context.Context, call *gen.ToolCall) (gen.Observation, error) {
	if r.builtin[call.ToolName] {
		return r.base.Call(ctx, call)
	}
	obs := gen.Observation{Type: gen.ObservationTypeObservation, ToolName: call.ToolName, CallId: call.CallId}
	t, ok := r.tools[call.ToolName]
	if !ok {
		return fail(obs, gen.ErrorCodeUnknownTool, fmt.Sprintf("unknown tool %.64q; available tools: %s", call.ToolName, r.names)), nil
	}
	args := call.Arguments
	if args == nil {
		args = map[string]any{}
	}
	if err := t.input.validate(ctx, args); err != nil {
		if ctx.Err() != nil {
			return fail(obs, gen.ErrorCodeCancelled, "the tool call was cancelled"), nil
		}
		return fail(obs, gen.ErrorCodeInvalidArguments, fmt.Sprintf("invalid arguments for %s: %s", call.ToolName, describe(err))), nil
	}
	return t.call(ctx, obs, args), nil
}

// Patch returns the base runtime's patch, if it makes one.
func (r *Runtime) Patch(ctx context.Context) (string, error) {
	if p, ok := r.base.(agent.Patcher); ok {
		return p.Patch(ctx)
	}
	return "", nil
}

// SandboxInfo returns the base runtime's sandbox, if it has one. MCP
// servers are not in it.
func (r *Runtime) SandboxInfo() *gen.SandboxInfo {
	if s, ok := r.base.(agent.Sandboxed); ok {
		return s.SandboxInfo()
	}
	return nil
}

// Close closes every session (stopping stdio servers) at once.
func (r *Runtime) Close() error {
	errs := make([]error, len(r.sessions))
	var wg sync.WaitGroup
	for i, s := range r.sessions {
		wg.Go(func() { errs[i] = s.Close() })
	}
	wg.Wait()
	return errors.Join(errs...)
}
