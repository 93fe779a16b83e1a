package tools_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
	"github.com/specloop/specloop/tools"
)

// intField is one integer property of a tool's input schema.
type intField struct {
	tool, name string
	schema     map[string]any
}

// integerFields returns every integer property of every tool's input
// schema, as the spec defines them.
func integerFields(t *testing.T, reg *tools.Registry) []intField {
	t.Helper()
	var out []intField
	for _, def := range reg.Defs() {
		for name, p := range def.Spec.InputSchema["properties"].(map[string]any) {
			if p := p.(map[string]any); p["type"] == "integer" {
				out = append(out, intField{tool: def.Spec.Name, name: name, schema: p})
			}
		}
	}
	slices.SortFunc(out, func(a, b intField) int { return strings.Compare(a.tool+"/"+a.name, b.tool+"/"+b.name) })
	if len(out) == 0 {
		t.Fatal("the spec's tools have no integer field: the walk tests nothing")
	}
	return out
}

// validArguments builds arguments that satisfy every required property of
// s, from the schema alone, so that the only problem of a call is the
// value under test.
func validArguments(t *testing.T, s map[string]any) map[string]any {
	t.Helper()
	args := map[string]any{}
	required, _ := s["required"].([]any)
	for _, r := range required {
		name := r.(string)
		p := s["properties"].(map[string]any)[name].(map[string]any)
		enum, _ := p["enum"].([]any)
		switch {
		case len(enum) > 0:
			args[name] = enum[0]
		case p["type"] == "string":
			minLength, _ := p["minLength"].(float64)
			args[name] = strings.Repeat("a", max(int(minLength), 1))
		case p["type"] == "integer", p["type"] == "number":
			v := 1.0
			if m, ok := p["minimum"].(float64); ok {
				v = max(v, m)
			}
			args[name] = v
		case p["type"] == "boolean":
			args[name] = false
		default:
			t.Fatalf("no valid value for required property %s of type %v", name, p["type"])
		}
	}
	return args
}

// outOfRange lists the JSON number literals past the range of an
// integer field: past every Go integer type, and just past the schema's
// own bounds.
func outOfRange(s map[string]any) []string {
	vals := []string{"1e19", "-1e19", "9223372036854775808", "-9223372036854775809", "18446744073709551616", "1e300"}
	if m, ok := s["maximum"].(float64); ok {
		vals = append(vals, strconv.FormatFloat(m+1, 'f', -1, 64))
	}
	if m, ok := s["minimum"].(float64); ok {
		vals = append(vals, strconv.FormatFloat(m-1, 'f', -1, 64))
	}
	return vals
}

// Every integer field of every tool has bounds within its Go type's range,
// so that a value a model can send is refused by validation, naming the
// field, and never reaches the handler's binding (which used to fail and
// end the run with internal_error).
func TestIntegerFieldsOutOfRangeAreInvalidArguments(t *testing.T) {
	t.Parallel()
	rt := wsRuntime(t, t.TempDir())
	for _, f := range integerFields(t, rt.Registry()) {
		maxV, hasMax := f.schema["maximum"].(float64)
		minV, hasMin := f.schema["minimum"].(float64)
		if !hasMax || maxV > 1<<53 || !hasMin || minV < -(1<<53) {
			t.Errorf("%s %s: integer without a minimum and a maximum that an int holds and a float64 represents exactly", f.tool, f.name)
		}
		def, _ := rt.Registry().Lookup(f.tool)
		for _, lit := range outOfRange(f.schema) {
			t.Run(f.tool+"/"+f.name+"="+lit, func(t *testing.T) {
				args := mustJSON(t, validArguments(t, def.Spec.InputSchema))
				args = strings.TrimSuffix(args, "}")
				if args != "{" {
					args += ","
				}
				args += fmt.Sprintf("%q:%s}", f.name, lit)
				// The model path: the text a model writes, parsed as the loop does.
				action, err := model.ParseAction(fmt.Sprintf(`{"type":"tool_call","tool_name":%q,"arguments":%s}`, f.tool, args))
				if err != nil {
					t.Fatalf("parse: %v", err)
				}
				obs, err := rt.Call(t.Context(), action.ToolCall)
				if err != nil {
					t.Fatalf("the call failed internally: %v", err)
				}
				if !obs.IsError || code(obs) != string(gen.ErrorCodeInvalidArguments) || !strings.Contains(obs.Content, strconv.Quote("/"+f.name)) {
					t.Fatalf("observation = %q (code %s), want invalid_arguments naming /%s", obs.Content, code(obs), f.name)
				}
				if len(lit) >= 5 && strings.Contains(obs.Content, lit) {
					t.Fatalf("the observation echoes the value: %q", obs.Content)
				}
			})
		}
	}
}
