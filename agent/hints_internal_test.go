package agent

import (
	"testing"

	"github.com/specloop/specloop/spec"
	"github.com/specloop/specloop/tools"
)

// The hints come from the tools' specs: the built-in tools that had
// hints typed in the loop keep them, and a line range names arguments of
// its tool's input, or a renamed argument would silently lose the hint.
func TestHintsComeFromTheToolSpecs(t *testing.T) {
	reg, err := tools.NewRegistry(spec.YAML())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"read_file", "run_command", "search", "list_files"} {
		def, ok := reg.Lookup(name)
		if !ok || def.Spec.Hints == nil {
			t.Errorf("%s has no hints", name)
		}
	}
	for _, def := range reg.Defs() {
		h := def.Spec.Hints
		if h == nil {
			continue
		}
		if h.LineRange == nil && (h.Rest == nil || h.Again == nil) {
			t.Errorf("%s's hints have neither a line range nor both texts", def.Spec.Name)
		}
		if r := h.LineRange; r != nil {
			props, _ := def.Spec.InputSchema["properties"].(map[string]any)
			for _, a := range []string{r.Path, r.Start, r.End} {
				if _, ok := props[a]; !ok {
					t.Errorf("the line range of %s names the argument %s, which its input schema does not have", def.Spec.Name, a)
				}
			}
		}
	}
}
