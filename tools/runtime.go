package tools

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/schema"
	"github.com/specloop/specloop/internal/textclip"
	"github.com/specloop/specloop/sandbox"
)

// Config configures a Runtime. The zero value is a runtime with the built-in
// handlers, the embedded spec and no workspace (so only tools that need no
// files are offered).
type Config struct {
	// Spec is the OpenAPI document (YAML or JSON) that defines the tools;
	// nil means the embedded spec.
	Spec []byte
	// Handlers implement the tools; nil means Builtin().
	Handlers []Handler
	// Workspace is where file tools and commands work; nil offers no file
	// tools.
	Workspace *Workspace
	// DisableCommands hides run_command (and any tool that runs processes)
	// from the model even when a workspace is set.
	DisableCommands bool
	// Extra are documents of custom tools (see LoadSpec), merged with the
	// built-in ones. New refuses a custom tool without a handler, one whose
	// name or input schema name is taken, and one that runs commands when
	// the runtime offers none (no workspace, or DisableCommands).
	Extra []*Spec
	// Sandbox is how commands are confined (the zero value: the strongest
	// sandbox available, no network, a read-only .git). New fails when
	// commands are offered and the sandbox is unavailable.
	Sandbox sandbox.Policy
}

// Runtime executes tool calls: it looks the tool up, validates the arguments
// against the spec, runs the handler and returns an Observation.
type Runtime struct {
	reg     *Registry
	env     *Env
	enabled map[string]*boundTool
	specs   []gen.ToolSpec
	names   string
}

type boundTool struct {
	def     *Def
	handler Handler
}

// InternalError is a tool handler failing in a way that is not a tool error:
// a Go error that is not a *Error, or a panic. The run must stop.
type InternalError struct {
	Tool  string
	Err   error
	Stack []byte // set for panics
}

func (e *InternalError) Error() string {
	return fmt.Sprintf("tool %s failed internally: %v", e.Tool, e.Err)
}

func (e *InternalError) Unwrap() error { return e.Err }

// New builds a runtime: it binds every tool of the spec to the handler whose
// input type has the tool's input schema name, and fails when a tool has no
// handler or a handler matches no tool.
func New(cfg Config) (*Runtime, error) {
	reg, bound, err := bindingFor(cfg.Spec, cfg.Handlers)
	if err != nil {
		return nil, err
	}
	var custom map[string]bool
	if len(cfg.Extra) > 0 {
		if reg, bound, custom, err = withExtra(reg, bound, cfg.Extra); err != nil {
			return nil, err
		}
	}
	r := &Runtime{
		reg:     reg,
		env:     &Env{Workspace: cfg.Workspace},
		enabled: map[string]*boundTool{},
	}
	if cfg.Workspace != nil && !cfg.DisableCommands {
		sb, err := sandbox.New(cfg.Sandbox)
		if err != nil {
			return nil, fmt.Errorf("commands: %w", err)
		}
		r.env.Sandbox = sb
	}
	var names []string
	for _, def := range reg.Defs() {
		h := bound[def.Spec.Name]
		switch h.need {
		case NeedsWorkspace:
			if cfg.Workspace == nil {
				continue
			}
		case NeedsCommands:
			if cfg.Workspace == nil || cfg.DisableCommands {
				if custom[def.Spec.Name] {
					why := "commands are disabled"
					if cfg.Workspace == nil {
						why = "it has no workspace"
					}
					return nil, fmt.Errorf("tools: custom tool %q runs a command, and this runtime offers no commands (%s)", def.Spec.Name, why)
				}
				continue
			}
		}
		r.enabled[def.Spec.Name] = &boundTool{def: def, handler: h}
		r.specs = append(r.specs, def.Spec)
		names = append(names, def.Spec.Name)
	}
	r.names = strings.Join(names, ", ")
	return r, nil
}

// binding is a registry's tools and their handlers, by tool name.
type binding struct {
	reg   *Registry
	bound map[string]Handler
}

// bindingFor returns the registry of doc (the embedded spec when nil) and
// its tools bound to handlers (Builtin() when nil).
func bindingFor(doc []byte, handlers []Handler) (*Registry, map[string]Handler, error) {
	var e binding
	var err error
	if doc == nil {
		e, err = embedded()
	} else {
		e.reg, err = NewRegistry(doc)
	}
	if err != nil || handlers == nil && e.bound != nil {
		return e.reg, e.bound, err
	}
	if handlers == nil {
		handlers = Builtin()
	}
	bound, err := Bind(e.reg, handlers)
	return e.reg, bound, err
}

// Bind pairs each tool of reg with its handler. It reports every tool
// without a handler and every handler without a tool.
func Bind(reg *Registry, handlers []Handler) (map[string]Handler, error) {
	byInput := map[string]Handler{}
	for _, h := range handlers {
		name := InputName(h)
		if _, dup := byInput[name]; dup {
			return nil, fmt.Errorf("tools: two handlers take %s", name)
		}
		byInput[name] = h
	}
	bound := map[string]Handler{}
	var problems []string
	for _, def := range reg.Defs() {
		h, ok := byInput[def.InputSchemaName]
		if !ok {
			problems = append(problems, fmt.Sprintf("tool %q (input %s) has no handler", def.Spec.Name, def.InputSchemaName))
			continue
		}
		bound[def.Spec.Name] = h
		delete(byInput, def.InputSchemaName)
	}
	for name := range byInput {
		problems = append(problems, fmt.Sprintf("handler for %s matches no tool in the spec", name))
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("tools: spec and handlers differ: %s", strings.Join(problems, "; "))
	}
	return bound, nil
}

// Specs returns the model-visible specs of the enabled tools, sorted by name.
// The slice is shared: do not modify it.
func (r *Runtime) Specs() []gen.ToolSpec { return r.specs }

// Registry returns every tool the runtime's spec defines, enabled or not.
func (r *Runtime) Registry() *Registry { return r.reg }

// Workspace returns the runtime's workspace, or nil.
func (r *Runtime) Workspace() *Workspace { return r.env.Workspace }

// Call executes one tool call. Every expected failure (unknown tool, invalid
// arguments, a tool error) is an Observation with IsError set; the returned
// error is non-nil only for an *InternalError. Arguments are invalid when
// they do not match the tool's input schema, or when the handler's Go input
// type cannot hold them (an integer past its range): both name the field.
func (r *Runtime) Call(ctx context.Context, call *gen.ToolCall) (gen.Observation, error) {
	obs, _, err := r.CallField(ctx, call)
	return obs, err
}

// CallField is Call that also returns, when the arguments are invalid, what
// is wrong with them and where (nil for every other outcome): the server's
// problem names the field.
func (r *Runtime) CallField(ctx context.Context, call *gen.ToolCall) (gen.Observation, *schema.Error, error) {
	obs := gen.Observation{Type: gen.ObservationTypeObservation, ToolName: call.ToolName, CallId: call.CallId}
	t, ok := r.enabled[call.ToolName]
	if !ok {
		return fail(obs, gen.ErrorCodeUnknownTool, fmt.Sprintf("unknown tool %q; available tools: %s", textclip.Clip(call.ToolName, 64), r.names)), nil, nil
	}
	args := call.Arguments
	if args == nil {
		args = map[string]any{}
	}
	if err := t.def.ValidateInput(args); err != nil {
		var se *schema.Error
		if !errors.As(err, &se) {
			se = &schema.Error{Reason: "does not match the schema"} // the whole value
		}
		return fail(obs, gen.ErrorCodeInvalidArguments, fmt.Sprintf("invalid arguments for %s: %v", call.ToolName, err)), se, nil
	}
	res, err := r.invoke(ctx, t, args)
	if err != nil {
		var te *Error
		var ae *argumentsError
		switch {
		case errors.As(err, &ae):
			return fail(obs, gen.ErrorCodeInvalidArguments, fmt.Sprintf("invalid arguments for %s: %v", call.ToolName, ae.err)), ae.err, nil
		case errors.As(err, &te) && te.Code.Valid():
			return fail(obs, te.Code, te.Message), nil, nil
		case te != nil:
			// A code outside the spec's enum is a handler's bug; recorded
			// as it is, it would make the observation and the trace invalid.
			return obs, nil, &InternalError{Tool: call.ToolName, Err: fmt.Errorf("the handler returned the error code %q, which is not in the spec's ErrorCode enum", textclip.Clip(string(te.Code), 64))}
		case ctx.Err() != nil && errors.Is(err, ctx.Err()):
			return fail(obs, gen.ErrorCodeCancelled, "the tool call was cancelled"), nil, nil
		}
		var ie *InternalError
		if !errors.As(err, &ie) {
			ie = &InternalError{Tool: call.ToolName, Err: err}
		}
		return obs, nil, ie
	}
	obs.Content = res.Content
	obs.Data = &res.Data
	return obs, nil, nil
}

// In returns a runtime with r's tools (those r offers, bound once) working
// in ws, under r's sandbox: a server binds its tools once and runs each
// call in the workspace the request names. ws stays the caller's to close.
func (r *Runtime) In(ws *Workspace) *Runtime {
	c := *r
	c.env = &Env{Workspace: ws, Sandbox: r.env.Sandbox}
	return &c
}

func (r *Runtime) invoke(ctx context.Context, t *boundTool, args map[string]any) (res Result, err error) {
	if ws := r.env.Workspace; ws != nil {
		command, writes := t.handler.need == NeedsCommands, t.def.Spec.WritesFiles
		if command || writes {
			// The call waits until the workspace is free for it: alone
			// when it writes, else with other commands. It is released
			// when the call has ended (a command's processes are all gone
			// by then).
			n := int64(1)
			if writes {
				n = maxSharedCalls
			}
			if err := ws.calls.Acquire(ctx, n); err != nil {
				return Result{}, err
			}
			defer ws.calls.Release(n)
		}
	}
	defer func() {
		if p := recover(); p != nil {
			err = &InternalError{Tool: t.def.Spec.Name, Err: fmt.Errorf("panic: %v", p), Stack: debug.Stack()}
		}
	}()
	return t.handler.call(ctx, r.env, args)
}

func fail(obs gen.Observation, code gen.ErrorCode, message string) gen.Observation {
	obs.IsError = true
	obs.ErrorCode = &code
	obs.Content = "error: " + message
	return obs
}
