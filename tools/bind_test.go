package tools_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/tools"
)

// sample returns arguments with every required property of s set to a
// plain valid value.
func sample(s *openapi3.Schema) map[string]any {
	args := map[string]any{}
	for _, name := range s.Required {
		p := s.Properties[name].Value
		switch {
		case len(p.Enum) > 0:
			args[name] = p.Enum[0]
		case p.Type.Is(openapi3.TypeString):
			args[name] = "a.txt"
		case p.Type.Is(openapi3.TypeInteger), p.Type.Is(openapi3.TypeNumber):
			args[name] = 1.0
		case p.Type.Is(openapi3.TypeBoolean):
			args[name] = false
		case p.Type.Is(openapi3.TypeArray):
			args[name] = []any{}
		default:
			args[name] = map[string]any{}
		}
	}
	return args
}

// TestIntegersPastTheGoRange: every integer argument of every tool, given a
// value no Go int holds, is refused as invalid_arguments naming the field,
// whether the schema bounds it or only the Go type cannot hold it; it is
// never an internal error that ends the run.
func TestIntegersPastTheGoRange(t *testing.T) {
	ws, err := tools.OpenWorkspace(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	rt := newRuntime(t, tools.Config{Workspace: ws})
	tested := 0
	for _, def := range rt.Registry().Defs() {
		for _, name := range slices.Sorted(maps.Keys(tools.InputSchema(def).Properties)) {
			if !tools.InputSchema(def).Properties[name].Value.Type.Is(openapi3.TypeInteger) {
				continue
			}
			for _, v := range []float64{1e19, 9223372036854775807, -1e19, 1e300, -1e300} {
				args := sample(tools.InputSchema(def))
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
