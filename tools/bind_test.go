package tools_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/tools"
)

// sample returns arguments with every required property of the JSON
// Schema s set to a plain valid value.
func sample(s map[string]any) map[string]any {
	args := map[string]any{}
	props := s["properties"].(map[string]any)
	required, _ := s["required"].([]any)
	for _, name := range required {
		p := props[name.(string)].(map[string]any)
		enum, _ := p["enum"].([]any)
		switch {
		case len(enum) > 0:
			args[name.(string)] = enum[0]
		case p["type"] == "string":
			args[name.(string)] = "a.txt"
		case p["type"] == "integer", p["type"] == "number":
			args[name.(string)] = 1.0
		case p["type"] == "boolean":
			args[name.(string)] = false
		case p["type"] == "array":
			args[name.(string)] = []any{}
		default:
			args[name.(string)] = map[string]any{}
		}
	}
	return args
}

// TestIntegersPastTheGoRange: every integer argument of every tool, given a
// value no Go int holds, is refused as invalid_arguments naming the field,
// whether the schema bounds it or only the Go type cannot hold it; it is
// never an internal error that ends the run.
func TestIntegersPastTheGoRange(t *testing.T) {
	t.Parallel()
	ws, err := tools.OpenWorkspace(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	rt := newRuntime(t, tools.Config{Workspace: ws})
	tested := 0
	for _, def := range rt.Registry().Defs() {
		props := def.Spec.InputSchema["properties"].(map[string]any)
		for _, name := range slices.Sorted(maps.Keys(props)) {
			if props[name].(map[string]any)["type"] != "integer" {
				continue
			}
			for _, v := range []float64{1e19, 9223372036854775807, -1e19, 1e300, -1e300} {
				args := sample(def.Spec.InputSchema)
				args[name] = v
				obs, err := rt.Call(context.Background(), call(def.Spec.Name, args))
				if err != nil {
					t.Fatalf("%s %s=%g: internal error %v", def.Spec.Name, name, v, err)
				}
				if !obs.IsError || obs.ErrorCode == nil || *obs.ErrorCode != gen.ErrorCodeInvalidArguments || !strings.Contains(obs.Content, `"/`+name+`"`) {
					t.Errorf("%s %s=%g: %+v, want invalid_arguments naming /%s", def.Spec.Name, name, v, obs, name)
				}
			}
			tested++
		}
	}
	if tested < 3 {
		t.Fatalf("only %d integer arguments found", tested)
	}
}
