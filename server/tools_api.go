package server

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"

	"github.com/labstack/echo/v4"
	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/schema"
	"github.com/specloop/specloop/mcpclient"
	"github.com/specloop/specloop/tools"
)

// toolRoute is the echo path of callTool, POST /v1/tools/{name}, which the
// server registers itself (gen/server.cfg.yaml leaves it out of the
// generated server): it runs on the body strictJSON decoded, so the body
// is decoded once, validated once (by the tool runtime) and bound once
// (into the handler's input).
const toolRoute = "/v1/tools/:name"

// errShuttingDown is the tool set's answer once Shutdown closed it.
var errShuttingDown = errors.New("the server is shutting down")

// toolSet is what callTool and listTools serve: the runner's built-in and
// custom tools, bound once on the workspace root (a call runs them in the
// workspace it names), and the tools of the configured MCP servers,
// connected by the first request that needs them and kept until Shutdown.
type toolSet struct {
	base *tools.Runtime // runner.Runner.Tools

	mu      sync.Mutex
	mcp     *mcpclient.Runtime // base with the MCP servers' tools, once connected
	closed  bool
	servers []mcpclient.Server
	config  mcpclient.Config
}

// all returns the runtime of every tool the server serves, connecting the
// MCP servers the first time. A failure to connect is not kept: the next
// request tries again.
func (t *toolSet) all(ctx context.Context) (agent.ToolRuntime, error) {
	if len(t.servers) == 0 {
		return t.base, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, errShuttingDown
	}
	if t.mcp == nil {
		mr, err := mcpclient.Open(ctx, t.base, t.servers, t.config)
		if err != nil {
			return nil, err
		}
		t.mcp = mr
	}
	return t.mcp, nil
}

// close stops the MCP servers.
func (t *toolSet) close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	if t.mcp == nil {
		return nil
	}
	err := t.mcp.Close()
	t.mcp = nil
	return err
}

// ListTools returns exactly the tools callTool serves.
func (s api) ListTools(ctx context.Context, _ gen.ListToolsRequestObject) (gen.ListToolsResponseObject, error) {
	rt, err := s.toolRuntime(ctx)
	if err != nil {
		return nil, err
	}
	return gen.ListTools200JSONResponse{Tools: rt.Specs()}, nil
}

func (s *Server) toolRuntime(ctx context.Context) (agent.ToolRuntime, error) {
	rt, err := s.tools.all(ctx)
	if errors.Is(err, errShuttingDown) {
		return nil, problemf(http.StatusServiceUnavailable, "the server is shutting down")
	}
	if err != nil {
		s.log.Error("the MCP servers cannot be reached", "err", err)
		return nil, problemf(http.StatusInternalServerError, "the server's MCP servers cannot be reached; see the server's log")
	}
	return rt, nil
}

// callTool serves POST /v1/tools/{name}: the body is the tool's input, run
// by the tool runtime exactly as a model's call, in the workspace the
// query names. A success is the tool's structured result; a tool error is
// a 422 problem with the tool's code; invalid arguments are a 400 naming
// the field.
func (s *Server) callTool(c echo.Context) error {
	ctx := c.Request().Context()
	name := c.Param("name")
	args, err := toolInput(c)
	if err != nil {
		return err
	}
	rt, err := s.toolRuntime(ctx)
	if err != nil {
		return err
	}
	reg := s.tools.base.Registry()
	if !slices.ContainsFunc(rt.Specs(), func(t gen.ToolSpec) bool { return t.Name == name }) {
		def, builtin := reg.Lookup(name)
		if !builtin || s.cfg.AllowCommands {
			return problemf(http.StatusNotFound, "no such tool on this server (GET /v1/tools lists them)")
		}
		// The only built-in tools a server leaves out are those that run
		// commands: their input is still checked (no runtime will), then
		// refused.
		if err := def.ValidateInput(args); err != nil {
			return invalidInput(schemaErr(err))
		}
		return toolProblem(gen.ErrorCodeCommandsDisabled)
	}
	var workspace *string
	if q := c.QueryParams(); q.Has("workspace") {
		w := q.Get("workspace")
		workspace = &w
	}
	// The directory the name resolves to now, which the call then uses
	// alone.
	clean, dir, err := s.rn.OpenWorkspace(workspace, "workspace")
	if err != nil {
		return err
	}
	defer dir.Close()
	if s.wsHook != nil {
		s.wsHook(clean)
	}
	call := &gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: name, Arguments: args}
	var obs gen.Observation
	var invalid *schema.Error
	if _, local := reg.Lookup(name); local {
		ws, err := tools.OpenWorkspaceIn(dir, ".")
		if err != nil {
			return &problemError{status: http.StatusNotFound, field: "workspace", detail: "the workspace cannot be opened any more"}
		}
		defer ws.Close()
		obs, invalid, err = s.tools.base.In(ws).CallField(ctx, call)
		if err != nil {
			return s.toolInternal(name, err)
		}
	} else if obs, err = rt.Call(ctx, call); err != nil {
		return s.toolInternal(name, err)
	}
	if !obs.IsError {
		result := map[string]any{"output": obs.Content}
		if obs.Data != nil {
			result = *obs.Data
		}
		return c.JSON(http.StatusOK, result)
	}
	code := deref(obs.ErrorCode)
	switch code {
	case gen.ErrorCodeUnknownTool:
		return problemf(http.StatusNotFound, "no such tool on this server (GET /v1/tools lists them)")
	case gen.ErrorCodeInvalidArguments:
		if invalid != nil {
			return invalidInput(invalid)
		}
		// An MCP tool's: its server's schema, whose messages may quote
		// the input.
		return problemf(http.StatusBadRequest, "the input does not match the tool's input schema")
	}
	return toolProblem(code)
}

func (s *Server) toolInternal(name string, err error) error {
	s.log.Error("tool failed internally", "tool", name, "err", err)
	return problemf(http.StatusInternalServerError, "the tool failed internally; see the server's log")
}

// toolInput is the body strictJSON decoded, which must be a JSON object.
func toolInput(c echo.Context) (map[string]any, error) {
	v := c.Request().Context().Value(bodyKey{})
	if v == nil {
		return nil, noBody(c.Request(), "the request body is required: the tool's input, a JSON object")
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, problemf(http.StatusBadRequest, "the request body must be a JSON object (the tool's input)")
	}
	return m, nil
}

// invalidInput is the 400 of a tool input that does not match the tool's
// schema or its handler's Go type.
func invalidInput(e *schema.Error) error {
	return fieldProblem(e, "the input", "has a property the tool's input schema does not allow")
}

// toolProblem is the 422 of a tool error: its code, and what the spec's
// ErrorCode schema says it means. It is the spec's text, never the tool's
// message, which is written for the model and quotes the path, glob or
// expression it was given.
func toolProblem(code gen.ErrorCode) *problemError {
	detail := code.Meaning()
	if detail == "" {
		detail = "the tool failed with an error code the spec does not define"
	}
	return &problemError{status: http.StatusUnprocessableEntity, code: code, detail: detail}
}
