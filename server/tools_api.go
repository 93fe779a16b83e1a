package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/schema"
	"github.com/specloop/specloop/wiring"
)

// ListTools returns the tools a run on this server offers a model.
func (s *Server) ListTools(context.Context, gen.ListToolsRequestObject) (gen.ListToolsResponseObject, error) {
	return gen.ListTools200JSONResponse{Tools: s.runTools()}, nil
}

// Calculator invokes the calculator tool.
func (s *Server) Calculator(ctx context.Context, req gen.CalculatorRequestObject) (gen.CalculatorResponseObject, error) {
	out, err := invokeTool[gen.CalculatorInput, gen.CalculatorResult](ctx, s, req.Body, req.Params.Workspace)
	if err != nil {
		return nil, err
	}
	return gen.Calculator200JSONResponse(*out), nil
}

// ListFiles invokes the list_files tool.
func (s *Server) ListFiles(ctx context.Context, req gen.ListFilesRequestObject) (gen.ListFilesResponseObject, error) {
	out, err := invokeTool[gen.ListFilesInput, gen.ListFilesResult](ctx, s, req.Body, req.Params.Workspace)
	if err != nil {
		return nil, err
	}
	return gen.ListFiles200JSONResponse(*out), nil
}

// ReadFile invokes the read_file tool.
func (s *Server) ReadFile(ctx context.Context, req gen.ReadFileRequestObject) (gen.ReadFileResponseObject, error) {
	out, err := invokeTool[gen.ReadFileInput, gen.ReadFileResult](ctx, s, req.Body, req.Params.Workspace)
	if err != nil {
		return nil, err
	}
	return gen.ReadFile200JSONResponse(*out), nil
}

// Search invokes the search tool.
func (s *Server) Search(ctx context.Context, req gen.SearchRequestObject) (gen.SearchResponseObject, error) {
	out, err := invokeTool[gen.SearchInput, gen.SearchResult](ctx, s, req.Body, req.Params.Workspace)
	if err != nil {
		return nil, err
	}
	return gen.Search200JSONResponse(*out), nil
}

// EditFile invokes the edit_file tool.
func (s *Server) EditFile(ctx context.Context, req gen.EditFileRequestObject) (gen.EditFileResponseObject, error) {
	out, err := invokeTool[gen.EditFileInput, gen.EditFileResult](ctx, s, req.Body, req.Params.Workspace)
	if err != nil {
		return nil, err
	}
	return gen.EditFile200JSONResponse(*out), nil
}

// WriteFile invokes the write_file tool.
func (s *Server) WriteFile(ctx context.Context, req gen.WriteFileRequestObject) (gen.WriteFileResponseObject, error) {
	out, err := invokeTool[gen.WriteFileInput, gen.WriteFileResult](ctx, s, req.Body, req.Params.Workspace)
	if err != nil {
		return nil, err
	}
	return gen.WriteFile200JSONResponse(*out), nil
}

// ApplyPatch invokes the apply_patch tool.
func (s *Server) ApplyPatch(ctx context.Context, req gen.ApplyPatchRequestObject) (gen.ApplyPatchResponseObject, error) {
	out, err := invokeTool[gen.ApplyPatchInput, gen.ApplyPatchResult](ctx, s, req.Body, req.Params.Workspace)
	if err != nil {
		return nil, err
	}
	return gen.ApplyPatch200JSONResponse(*out), nil
}

// RunCommand invokes the run_command tool; without AllowCommands it is
// refused with 422 commands_disabled.
func (s *Server) RunCommand(ctx context.Context, req gen.RunCommandRequestObject) (gen.RunCommandResponseObject, error) {
	out, err := invokeTool[gen.RunCommandInput, gen.RunCommandResult](ctx, s, req.Body, req.Params.Workspace)
	if err != nil {
		return nil, err
	}
	return gen.RunCommand200JSONResponse(*out), nil
}

// invokeTool is the one implementation of every POST /v1/tools/{name}: the
// tool is the one whose input schema is In, the body becomes a ToolCall's
// arguments, and the tool runtime (validation, handler, observation) runs
// it in the named workspace exactly as it runs a model's call. A success is
// the observation's structured result; a tool error is a 422 problem with
// the tool's code; invalid arguments are a 400 naming the field.
func invokeTool[In, Out any](ctx context.Context, s *Server, body *In, workspace *string) (*Out, error) {
	def := s.toolDefs[typeName[In]()]
	if def == nil || body == nil {
		return nil, problemf(http.StatusInternalServerError, "the tool is not bound")
	}
	args, err := toArgs(ctx, body)
	if err != nil {
		return nil, err
	}
	// The checks the tool runtime makes, here to name the field in the
	// problem: the spec's schema, then the handler's Go type.
	if err := def.ValidateInput(args); err != nil {
		return nil, argumentsProblem(err)
	}
	if err := schema.Bind(args, new(In)); err != nil {
		return nil, argumentsProblem(err)
	}
	// A workspace per call: a Workspace remembers the files it changed.
	root, err := s.openTools(workspace, "workspace")
	if err != nil {
		return nil, err
	}
	defer root.Close()
	cfg := s.setupConfig()
	cfg.Root = root
	setup, err := wiring.Open(cfg)
	var we *wiring.Error
	if errors.As(err, &we) && we.Part == wiring.PartWorkspace {
		return nil, &problemError{status: http.StatusNotFound, field: "workspace", detail: "the workspace cannot be opened any more"}
	}
	if err != nil {
		return nil, err
	}
	defer setup.Close()
	rt := setup.Runtime
	obs, err := rt.Call(ctx, &gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: def.Spec.Name, Arguments: args})
	if err != nil {
		s.log.Error("tool failed internally", "tool", def.Spec.Name, "err", err)
		return nil, problemf(http.StatusInternalServerError, "the tool failed internally; see the server's log")
	}
	if !obs.IsError {
		var out Out
		if obs.Data == nil {
			return nil, problemf(http.StatusInternalServerError, "the tool returned no result")
		}
		if err := schema.Bind(*obs.Data, &out); err != nil {
			return nil, problemf(http.StatusInternalServerError, "the tool's result does not match its schema")
		}
		return &out, nil
	}
	code := deref(obs.ErrorCode)
	// The tool's message is the model's and may quote what was sent: the
	// problem gives the spec's meaning of the code instead.
	detail := toolErrorDetail(rt.Registry(), code)
	switch code {
	case gen.ErrorCodeUnknownTool:
		// The spec defines the tool, so the runtime does not offer it here:
		// only tools that run commands are ever left out of a workspace.
		if !s.cfg.AllowCommands {
			return nil, &problemError{status: http.StatusUnprocessableEntity, code: gen.ErrorCodeCommandsDisabled, detail: toolErrorDetail(rt.Registry(), gen.ErrorCodeCommandsDisabled)}
		}
		return nil, problemf(http.StatusNotFound, "the tool is not available on this server")
	case gen.ErrorCodeInvalidArguments:
		return nil, problemf(http.StatusBadRequest, "%s", clip(strings.TrimPrefix(obs.Content, "error: "), 4096))
	}
	return nil, &problemError{status: http.StatusUnprocessableEntity, code: code, detail: detail}
}

// toArgs returns the arguments of a tool call over HTTP: the body as
// strictJSON decoded it, exactly as it was on the wire, or else the bound
// input struct as JSON values.
func toArgs(ctx context.Context, body any) (map[string]any, error) {
	if v, ok := strictBody(ctx); ok {
		if m, ok := v.(map[string]any); ok {
			return m, nil
		}
		return nil, problemf(http.StatusBadRequest, "the request body must be a JSON object")
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	v, err := schema.Decode(b)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, problemf(http.StatusBadRequest, "the request body must be a JSON object")
	}
	return m, nil
}

// argumentsProblem is the 400 of arguments that do not match the tool's
// input schema or Go type, naming the field.
func argumentsProblem(err error) error {
	var se *schema.Error
	if errors.As(err, &se) {
		return badField(clip(se.Pointer, schema.MaxPointer), "%s", se.Error())
	}
	return problemf(http.StatusBadRequest, "the arguments are invalid")
}
