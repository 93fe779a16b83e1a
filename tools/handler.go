package tools

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/schema"
)

// Needs says what a tool requires from the runtime before it is offered to
// a model.
type Needs int

const (
	// NeedsNothing: the tool is pure computation (the calculator).
	NeedsNothing Needs = iota
	// NeedsWorkspace: the tool reads or writes files in the workspace.
	NeedsWorkspace
	// NeedsCommands: the tool runs processes in the workspace; it is offered
	// only when commands are allowed.
	NeedsCommands
)

// Result is what a handler produced: text for the model and the structured
// result that validates against the tool's result schema.
type Result struct {
	// Content is the result rendered as text for the model.
	Content string
	// Data is the structured result as JSON values.
	Data map[string]any
}

// Handler implements one tool. It is bound to the spec's tool whose input
// schema component has the same name as the handler's Go input type (the
// generated type in package gen), so Go never repeats a tool's name.
// Build handlers with Func.
type Handler struct {
	in   reflect.Type // the Go input type
	need Needs
	call func(ctx context.Context, env *Env, args map[string]any) (Result, error)
}

// Func adapts a typed function to a Handler. In is the tool's generated input
// type (gen.CalculatorInput, ...); Out its generated result type. fn gets
// arguments already validated against the spec; it returns a *Error for an
// expected failure (reported to the model as an error Observation) and any
// other error only when the runtime itself failed. render turns the result
// into the text the model reads.
func Func[In, Out any](needs Needs, fn func(ctx context.Context, env *Env, in *In) (*Out, error), render func(in *In, out *Out) string) Handler {
	return Handler{in: reflect.TypeFor[In](), need: needs, call: func(ctx context.Context, env *Env, args map[string]any) (Result, error) {
		var in In
		if err := schema.Bind(args, &in); err != nil {
			// A schema-valid value the Go type cannot hold (an integer past
			// its range) is the caller's mistake, not the runtime's.
			var se *schema.Error
			if errors.As(err, &se) {
				return Result{}, &argumentsError{err: se}
			}
			return Result{}, fmt.Errorf("bind arguments: %w", err)
		}
		out, err := fn(ctx, env, &in)
		if err != nil {
			return Result{}, err
		}
		data, err := toData(out)
		if err != nil {
			return Result{}, fmt.Errorf("encode result: %w", err)
		}
		return Result{Content: render(&in, out), Data: data}, nil
	}}
}

// argumentsError is arguments that passed the schema but do not fit the
// handler's input type; the runtime reports it as invalid arguments.
type argumentsError struct{ err *schema.Error }

func (e *argumentsError) Error() string { return e.err.Error() }

// Error is an expected tool failure: it becomes an Observation with is_error
// set, error_code Code and content Message. Every Code a tool returns is listed
// in the x-error-codes of its operation's 422 response in the spec.
type Error struct {
	Code    gen.ErrorCode
	Message string
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Errorf returns an expected tool failure with the given code.
func Errorf(code gen.ErrorCode, format string, args ...any) error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// InputName returns the name of a handler's input type, which is the
// component name of the input schema of the tool it implements.
func InputName(h Handler) string { return InputType(h).Name() }

// InputType returns the Go type a handler takes as input (a generated type
// of package gen); the contract tests compare its fields with the schema.
func InputType(h Handler) reflect.Type {
	t := h.in
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}
