package agent

import (
	"testing"

	"github.com/specloop/specloop/spec"
	"github.com/specloop/specloop/tools"
)

// The hints name the built-in tools and read their arguments: each name
// must be a tool of the spec, and each argument a property of its input,
// or a renamed tool would silently lose its hints.
func TestHintsNameSpecTools(t *testing.T) {
	reg, err := tools.NewRegistry(spec.YAML())
	if err != nil {
		t.Fatal(err)
	}
	args := map[string][]string{"read_file": {"path", "start_line", "end_line"}, "search": {"pattern", "path", "glob", "limit"}, "list_files": {"glob"}}
	for name := range toolHints {
		def, ok := reg.Lookup(name)
		if !ok {
			t.Errorf("the hints name %q, which is no tool of the spec", name)
			continue
		}
		props, _ := def.Spec.InputSchema["properties"].(map[string]any)
		for _, a := range args[name] {
			if _, ok := props[a]; !ok {
				t.Errorf("the hints of %s name the argument %s, which its input schema does not have", name, a)
			}
		}
	}
}
