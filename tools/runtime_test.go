package tools_test

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/contract"
	"github.com/specloop/specloop/spec"
	"github.com/specloop/specloop/tools"
)

func newRuntime(t testing.TB, cfg tools.Config) *tools.Runtime {
	t.Helper()
	rt, err := tools.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

func call(name string, args map[string]any) *gen.ToolCall {
	return &gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: name, Arguments: args}
}

func TestRegistryComesFromTheSpec(t *testing.T) {
	t.Parallel()
	doc := contract.MustSpec()
	reg, err := tools.NewRegistry(spec.YAML())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for path := range doc.Paths.Map() {
		if name, ok := strings.CutPrefix(path, "/v1/tools/"); ok && tools.ValidToolName(name) {
			names = append(names, name)
		}
	}
	if len(reg.Defs()) != len(names) || len(names) == 0 {
		t.Fatalf("registry has %d tools, the spec %d", len(reg.Defs()), len(names))
	}
	for _, name := range names {
		def, ok := reg.Lookup(name)
		if !ok {
			t.Fatalf("tool %s missing from the registry", name)
		}
		op := doc.Paths.Find("/v1/tools/" + name).Post
		if def.Spec.Description != op.Description || def.Spec.OutputDescription != *op.Responses.Status(200).Value.Description ||
			!reflect.DeepEqual(def.ErrorCodes, specCodes(op)) {
			t.Errorf("tool %s: spec fields differ from its operation", name)
		}
		if def.Spec.InputSchema["type"] != "object" || def.Spec.InputSchema["additionalProperties"] != false {
			t.Errorf("tool %s: input schema %v is not a closed object", name, def.Spec.InputSchema)
		}
		if strings.Contains(mustJSON(t, def.Spec.InputSchema), "$ref") {
			t.Errorf("tool %s: the model-visible input schema still has a $ref", name)
		}
	}
}

func TestCalculatorSpecShowsItsEnum(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, tools.Config{})
	specs := rt.Specs()
	if len(specs) != 1 || specs[0].Name != "calculator" {
		t.Fatalf("without a workspace only the calculator is offered, got %v", specs)
	}
	op := specs[0].InputSchema["properties"].(map[string]any)["operation"].(map[string]any)
	if got := op["enum"]; len(got.([]any)) != 4 {
		t.Fatalf("operation enum = %v", got)
	}
}

func TestCall(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, tools.Config{})
	tests := []struct {
		name    string
		call    *gen.ToolCall
		content string        // substring
		code    gen.ErrorCode // error code, "" for success
		secret  string        // must not appear in the content
	}{
		{"multiply", call("calculator", map[string]any{"left": 12.0, "operation": "multiply", "right": 7.0}), "84", "", ""},
		{"add", call("calculator", map[string]any{"left": 0.1, "operation": "add", "right": 0.2}), "0.30000000000000004", "", ""},
		{"subtract", call("calculator", map[string]any{"left": 1.0, "operation": "subtract", "right": 3.0}), "-2", "", ""},
		{"divide", call("calculator", map[string]any{"left": 1.0, "operation": "divide", "right": 4.0}), "0.25", "", ""},
		{"division by zero", call("calculator", map[string]any{"left": 1.0, "operation": "divide", "right": 0.0}), "division by zero", "division_by_zero", ""},
		{"overflow", call("calculator", map[string]any{"left": 1e308, "operation": "multiply", "right": 1e308}), "finite", "non_finite_result", ""},
		{"unknown tool", call("shell", map[string]any{}), "available tools: calculator", gen.ErrorCodeUnknownTool, ""},
		{"file tool without a workspace", call("read_file", map[string]any{"path": "x"}), "available tools: calculator", gen.ErrorCodeUnknownTool, ""},
		{"missing field", call("calculator", map[string]any{"left": 1.0, "operation": "add"}), `"/right": is required`, gen.ErrorCodeInvalidArguments, ""},
		{"bad enum", call("calculator", map[string]any{"left": 1.0, "operation": "SECRET-power", "right": 2.0}), `"/operation": must be one of add, subtract, multiply, divide`, gen.ErrorCodeInvalidArguments, "SECRET"},
		{"wrong type", call("calculator", map[string]any{"left": "SECRET-one", "operation": "add", "right": 2.0}), `"/left": must be a number`, gen.ErrorCodeInvalidArguments, "SECRET"},
		{"extra field", call("calculator", map[string]any{"left": 1.0, "operation": "add", "right": 2.0, "power": "SECRET"}), `"/power": is not allowed`, gen.ErrorCodeInvalidArguments, "SECRET"},
		{"nil arguments", call("calculator", nil), "is required", gen.ErrorCodeInvalidArguments, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obs, err := rt.Call(context.Background(), tt.call)
			if err != nil {
				t.Fatalf("Call returned a Go error for an expected failure: %v", err)
			}
			if obs.Type != gen.ObservationTypeObservation || obs.ToolName != tt.call.ToolName {
				t.Fatalf("observation header %+v", obs)
			}
			if !strings.Contains(obs.Content, tt.content) {
				t.Fatalf("content %q lacks %q", obs.Content, tt.content)
			}
			if tt.secret != "" && strings.Contains(obs.Content, tt.secret) {
				t.Fatalf("content %q echoes an argument value", obs.Content)
			}
			if tt.code == "" {
				if obs.IsError || obs.ErrorCode != nil || obs.Data == nil {
					t.Fatalf("success observation %+v", obs)
				}
				return
			}
			if !obs.IsError || obs.ErrorCode == nil || *obs.ErrorCode != tt.code || obs.Data != nil {
				t.Fatalf("error observation %+v, want code %s", obs, tt.code)
			}
		})
	}
}

func TestResultMatchesTheSpec(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, tools.Config{})
	obs, err := rt.Call(context.Background(), call("calculator", map[string]any{"left": 12.0, "operation": "multiply", "right": 7.0}))
	if err != nil {
		t.Fatal(err)
	}
	if obs.Content != "84" || (*obs.Data)["value"] != 84.0 {
		t.Fatalf("observation %+v", obs)
	}
	def, _ := rt.Registry().Lookup("calculator")
	if err := def.ValidateResult(*obs.Data); err != nil {
		t.Fatalf("result does not validate against the spec: %v", err)
	}
}

func TestInternalErrors(t *testing.T) {
	t.Parallel()
	render := func(*gen.CalculatorInput, *gen.CalculatorResult) string { return "" }
	tests := []struct {
		name string
		fn   func(context.Context, *tools.Env, *gen.CalculatorInput) (*gen.CalculatorResult, error)
	}{
		{"panic", func(context.Context, *tools.Env, *gen.CalculatorInput) (*gen.CalculatorResult, error) { panic("boom") }},
		{"plain error", func(context.Context, *tools.Env, *gen.CalculatorInput) (*gen.CalculatorResult, error) {
			return nil, errors.New("disk on fire")
		}},
		// A code outside the spec's enum would make the observation and
		// the trace invalid: it is the handler's bug, not a tool failure.
		{"code outside the enum", func(context.Context, *tools.Env, *gen.CalculatorInput) (*gen.CalculatorResult, error) {
			return nil, tools.Errorf("disk_on_fire", "the disk is on fire")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			handlers := []tools.Handler{tools.Func(tools.NeedsNothing, tt.fn, render)}
			for _, h := range tools.Builtin() {
				if tools.InputName(h) != "CalculatorInput" {
					handlers = append(handlers, h)
				}
			}
			rt := newRuntime(t, tools.Config{Handlers: handlers})
			_, err := rt.Call(context.Background(), call("calculator", map[string]any{"left": 1.0, "operation": "add", "right": 2.0}))
			var ie *tools.InternalError
			if !errors.As(err, &ie) || ie.Tool != "calculator" {
				t.Fatalf("err = %v, want *tools.InternalError", err)
			}
		})
	}
}

func TestBindingCatchesDrift(t *testing.T) {
	t.Parallel()
	reg, err := tools.NewRegistry(spec.YAML())
	if err != nil {
		t.Fatal(err)
	}
	builtin := tools.Builtin()
	if _, err := tools.Bind(reg, builtin[1:]); err == nil || !strings.Contains(err.Error(), "has no handler") {
		t.Fatalf("a missing handler must fail the binding, got %v", err)
	}
	if _, err := tools.Bind(reg, append(builtin, builtin[0])); err == nil || !strings.Contains(err.Error(), "two handlers") {
		t.Fatalf("a duplicate handler must fail the binding, got %v", err)
	}
}

// specCodes reads the x-error-codes list of an operation's 422 response as
// written in the spec.
func specCodes(op *openapi3.Operation) []gen.ErrorCode {
	var codes []gen.ErrorCode
	list, _ := op.Responses.Status(422).Value.Extensions["x-error-codes"].([]any)
	for _, v := range list {
		s, _ := v.(string)
		codes = append(codes, gen.ErrorCode(s))
	}
	return codes
}

// Config.Spec is a document (the OpenAPI library stays out of the API): the
// embedded spec passed as bytes gives the default runtime's tools, an edit
// of it shows in what the model is told, and a document that is not a spec
// is refused.
func TestConfigSpecIsADocument(t *testing.T) {
	t.Parallel()
	want := newRuntime(t, tools.Config{}).Specs()
	if got := newRuntime(t, tools.Config{Spec: spec.YAML()}).Specs(); !reflect.DeepEqual(got, want) {
		t.Errorf("the embedded spec as bytes gives other tools:\n%+v\nwant\n%+v", got, want)
	}
	const old = "Computes `left operation right` for two numbers and returns the result."
	const edited = "Computes one arithmetic operation."
	doc := bytes.Replace(spec.YAML(), []byte(old), []byte(edited), 1)
	if bytes.Equal(doc, spec.YAML()) {
		t.Fatal("the calculator's description is not in the spec any more; update the test")
	}
	found := false
	for _, s := range newRuntime(t, tools.Config{Spec: doc}).Specs() {
		if s.Name == "calculator" {
			found = s.Description == edited
		}
	}
	if !found {
		t.Error("the edited spec's calculator description is not what the runtime offers")
	}
	if _, err := tools.New(tools.Config{Spec: []byte("openapi: [not, a, spec]")}); err == nil {
		t.Error("a document that is not an OpenAPI spec must be refused")
	}
}
