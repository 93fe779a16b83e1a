package tools_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/contract"
	"github.com/specloop/specloop/spec"
	"github.com/specloop/specloop/tools"
)

// TestContractTools is the tool contract: every tool of spec/agent.yaml has
// a handler (and every handler a tool), and the inputs generated from each
// input schema and the spec's examples only ever get a result valid
// against the tool's result schema or an error the tool's error
// description names. See internal/contract.CheckTools.
func TestContractTools(t *testing.T) {
	t.Parallel()
	doc, err := contract.Spec()
	if err != nil {
		t.Fatal(err)
	}
	ps := contract.CheckTools(context.Background(), doc, tools.Builtin(), t.TempDir())
	if len(ps) > 0 {
		t.Fatalf("the tools drifted from spec/agent.yaml (%d problems):\n%s", len(ps), contract.Format(ps))
	}
}

// contractDoc parses a private copy of the embedded spec, safe to edit.
func contractDoc(t *testing.T, yaml []byte) *openapi3.T {
	t.Helper()
	doc, err := contract.ParseSpec(yaml)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// builtinRegistry is the registry of the embedded spec.
func builtinRegistry(t *testing.T) *tools.Registry {
	t.Helper()
	reg, err := tools.NewRegistry(spec.YAML())
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// onlyTools removes every tool but names from doc and returns the handlers
// of handlers that take the inputs of the tools kept: a drift test about
// some tools checks only those, and the check costs their calls only.
func onlyTools(t *testing.T, doc *openapi3.T, handlers []tools.Handler, names ...string) []tools.Handler {
	t.Helper()
	var inputs []string
	for _, def := range builtinRegistry(t).Defs() {
		if slices.Contains(names, def.Spec.Name) {
			inputs = append(inputs, def.InputSchemaName)
		} else {
			doc.Paths.Delete("/v1/tools/" + def.Spec.Name)
		}
	}
	if len(inputs) != len(names) {
		t.Fatalf("the spec lacks one of the tools %q", names)
	}
	return slices.DeleteFunc(slices.Clone(handlers), func(h tools.Handler) bool { return !slices.Contains(inputs, tools.InputName(h)) })
}

// inputSchema is the input schema of the tool name in doc, which a test
// edits to make drift.
func inputSchema(t *testing.T, doc *openapi3.T, name string) *openapi3.Schema {
	t.Helper()
	def, ok := builtinRegistry(t).Lookup(name)
	if !ok {
		t.Fatalf("the spec has no %s tool", name)
	}
	return doc.Components.Schemas[def.InputSchemaName].Value
}

// checkDrift runs the tool contract over doc with handlers and returns the
// problems as text; it fails the test when there are none.
func checkDrift(t *testing.T, doc *openapi3.T, handlers []tools.Handler) string {
	t.Helper()
	ps := contract.CheckTools(context.Background(), doc, handlers, t.TempDir())
	if len(ps) == 0 {
		t.Fatal("the contract check saw no drift")
	}
	return contract.Format(ps)
}

// wantProblem fails unless one line of the report contains every part.
func wantProblem(t *testing.T, report string, parts ...string) {
	t.Helper()
	for _, line := range strings.Split(report, "\n") {
		if containsAll(line, parts) {
			return
		}
	}
	t.Errorf("no problem mentions all of %q; the report:\n%s", parts, report)
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// TestContractCatchesDrift is the seed case: the spec gains an
// operation the calculator never implements, and another tool gains a
// required field its handler never sees; the unchanged handlers must fail
// the contract with messages that name the tool, the field and the value.
func TestContractCatchesDrift(t *testing.T) {
	t.Parallel()
	const enumLine = "enum: [add, subtract, multiply, divide]"
	if !bytes.Contains(spec.YAML(), []byte(enumLine)) {
		t.Fatalf("spec/agent.yaml no longer has the line %q this test edits; update the test", enumLine)
	}
	yaml := bytes.Replace(spec.YAML(), []byte(enumLine), []byte("enum: [add, subtract, multiply, divide, power]"), 1)
	doc := contractDoc(t, yaml)

	// A required field added to read_file's input (the parsed document is
	// edited: with the examples now invalid, the YAML would not load).
	readFile := inputSchema(t, doc, "read_file")
	readFile.Properties["encoding_version"] = &openapi3.SchemaRef{Value: &openapi3.Schema{
		Type: &openapi3.Types{openapi3.TypeInteger}, Description: "The encoding version.",
	}}
	readFile.Required = append(readFile.Required, "encoding_version")

	report := checkDrift(t, doc, onlyTools(t, doc, tools.Builtin(), "calculator", "read_file"))
	t.Logf("problems reported:\n%s", report)
	wantProblem(t, report, "calculator", "/operation", `"power"`, "unsupported_operation", "do not list")
	wantProblem(t, report, "read_file", "/encoding_version", "has none")
	wantProblem(t, report, "read_file", "/encoding_version", "example")
}

// TestContractCatchesNewEnumValues adds a value to each enum of each tool's
// input schema in turn: whatever the enum, the unchanged handler must be
// caught rejecting the value the spec now allows.
func TestContractCatchesNewEnumValues(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("proves the checker, not the tools; runs without -short")
	}
	const added = "contract_added_value"
	n := 0
	for _, def := range builtinRegistry(t).Defs() {
		props := def.Spec.InputSchema["properties"].(map[string]any)
		for _, prop := range slices.Sorted(maps.Keys(props)) {
			if _, ok := props[prop].(map[string]any)["enum"]; !ok {
				continue
			}
			n++
			t.Run(def.Spec.Name+"/"+prop, func(t *testing.T) {
				doc := contractDoc(t, spec.YAML())
				s := inputSchema(t, doc, def.Spec.Name).Properties[prop].Value
				s.Enum = append(s.Enum, added)
				report := checkDrift(t, doc, tools.Builtin())
				wantProblem(t, report, def.Spec.Name, "/"+prop, `"`+added+`"`)
			})
		}
	}
	if n == 0 {
		t.Fatal("no tool input has an enum: the drift this test proves is not exercised")
	}
}

// TestContractCatchesMissingHandlers removes each handler in turn.
func TestContractCatchesMissingHandlers(t *testing.T) {
	t.Parallel()
	doc := contractDoc(t, spec.YAML())
	reg := builtinRegistry(t)
	for i, h := range tools.Builtin() {
		name := tools.InputName(h)
		t.Run(name, func(t *testing.T) {
			var tool string
			for _, d := range reg.Defs() {
				if d.InputSchemaName == name {
					tool = d.Spec.Name
				}
			}
			if tool == "" {
				t.Fatalf("handler %s matches no tool", name)
			}
			handlers := slices.Delete(slices.Clone(tools.Builtin()), i, i+1)
			report := checkDrift(t, doc, handlers)
			wantProblem(t, report, tool, "no handler")
		})
	}
}

// TestContractCatchesHandlerWithoutTool removes a tool from the spec: its
// handler is left implementing nothing.
func TestContractCatchesHandlerWithoutTool(t *testing.T) {
	t.Parallel()
	doc := contractDoc(t, spec.YAML())
	input := reflect.TypeFor[gen.CalculatorInput]().Name()
	for path, item := range doc.Paths.Map() {
		if op := item.Post; op != nil && op.RequestBody != nil &&
			strings.HasSuffix(op.RequestBody.Value.Content.Get("application/json").Schema.Ref, "/"+input) {
			doc.Paths.Delete(path)
		}
	}
	report := checkDrift(t, doc, tools.Builtin())
	wantProblem(t, report, input, "no tool of the spec")
}

// badCalculatorResult has a field CalculatorResult does not declare.
type badCalculatorResult struct {
	Value float64 `json:"value"`
	Extra string  `json:"extra"`
}

// TestContractCatchesBadHandlers swaps the calculator's handler for ones
// that break the contract in the other ways a handler can.
func TestContractCatchesBadHandlers(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("proves the checker, not the tools; runs without -short")
	}
	doc := contractDoc(t, spec.YAML())
	calc := reflect.TypeFor[gen.CalculatorInput]().Name()
	tests := []struct {
		name    string
		handler tools.Handler
		want    []string
	}{
		{
			"result not valid against the result schema",
			tools.Func(tools.NeedsNothing, func(_ context.Context, _ *tools.Env, in *gen.CalculatorInput) (*badCalculatorResult, error) {
				return &badCalculatorResult{Value: in.Left, Extra: "x"}, nil
			}, func(*gen.CalculatorInput, *badCalculatorResult) string { return "" }),
			[]string{"calculator", "result does not validate", "/extra"},
		},
		{
			"error code the spec does not name",
			tools.Func(tools.NeedsNothing, func(_ context.Context, _ *tools.Env, in *gen.CalculatorInput) (*gen.CalculatorResult, error) {
				if in.Operation == gen.CalculatorOperationSubtract {
					return nil, tools.Errorf("not_implemented", "subtract is not implemented")
				}
				return &gen.CalculatorResult{Value: 1}, nil
			}, func(*gen.CalculatorInput, *gen.CalculatorResult) string { return "" }),
			[]string{"calculator", "/operation", `"subtract"`, "not_implemented", "not in the spec's ErrorCode enum"},
		},
		{
			"internal failure",
			tools.Func(tools.NeedsNothing, func(_ context.Context, _ *tools.Env, in *gen.CalculatorInput) (*gen.CalculatorResult, error) {
				if in.Right < 0 {
					return nil, fmt.Errorf("boom")
				}
				return &gen.CalculatorResult{Value: 1}, nil
			}, func(*gen.CalculatorInput, *gen.CalculatorResult) string { return "" }),
			[]string{"calculator", "/right", "-1", "failed internally"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			handlers := slices.Clone(tools.Builtin())
			for i, h := range handlers {
				if tools.InputName(h) == calc {
					handlers[i] = tt.handler
				}
			}
			wantProblem(t, checkDrift(t, doc, onlyTools(t, doc, handlers, "calculator")), tt.want...)
		})
	}
}

// TestContractCatchesUndeclaredCode: a handler that fails with a code the
// spec defines but its operation does not list (x-error-codes) is drift,
// and the contract names the tool and the code.
func TestContractCatchesUndeclaredCode(t *testing.T) {
	t.Parallel()
	doc := contractDoc(t, spec.YAML())
	calc, ok := builtinRegistry(t).Lookup("calculator")
	if !ok {
		t.Fatal("the spec has no calculator tool")
	}
	if calc.Declares(gen.ErrorCodeHardLink) {
		t.Fatal("the calculator lists hard_link; pick a code it does not list")
	}
	rogue := tools.Func(tools.NeedsNothing, func(_ context.Context, _ *tools.Env, in *gen.CalculatorInput) (*gen.CalculatorResult, error) {
		if in.Operation == gen.CalculatorOperationDivide {
			return nil, tools.Errorf(gen.ErrorCodeHardLink, "not a calculator failure")
		}
		return &gen.CalculatorResult{Value: in.Left + in.Right}, nil
	}, func(_ *gen.CalculatorInput, out *gen.CalculatorResult) string { return fmt.Sprint(out.Value) })
	handlers := slices.Clone(tools.Builtin())
	replaced := false
	for i, h := range handlers {
		if tools.InputName(h) == "CalculatorInput" {
			handlers[i], replaced = rogue, true
		}
	}
	if !replaced {
		t.Fatal("no built-in handler takes CalculatorInput")
	}
	report := checkDrift(t, doc, onlyTools(t, doc, handlers, "calculator"))
	wantProblem(t, report, "calculator", "hard_link", "do not list", "division_by_zero")
}
