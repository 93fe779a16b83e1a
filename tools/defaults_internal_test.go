package tools

import (
	"testing"
	"time"

	"github.com/specloop/specloop/internal/oas"
	"github.com/specloop/specloop/spec"
)

// TestDefaultsAreTheSpecs: each default a tool applies is the `default:` of
// the property in spec/agent.yaml, read here from a fresh parse of the
// document, so a default changed in the spec changes what the tool does.
func TestDefaultsAreTheSpecs(t *testing.T) {
	t.Parallel()
	doc, err := oas.Parse(spec.YAML())
	if err != nil {
		t.Fatal(err)
	}
	def := func(schema, prop string) any {
		p, _ := doc.Schemas[schema]["properties"].(map[string]any)[prop].(map[string]any)
		if p["default"] == nil {
			t.Fatalf("%s.%s has no default in the spec", schema, prop)
		}
		return p["default"]
	}
	for _, tt := range []struct {
		field string
		code  any
		spec  any
	}{
		{"ListFilesInput.limit", float64(defaultListLimit), def("ListFilesInput", "limit")},
		{"ReadFileInput.start_line", float64(defaultStartLine), def("ReadFileInput", "start_line")},
		{"SearchInput.limit", float64(defaultSearchLimit), def("SearchInput", "limit")},
		{"SearchInput.regex", defaultSearchRegex, def("SearchInput", "regex")},
		{"SearchInput.ignore_case", defaultIgnoreCase, def("SearchInput", "ignore_case")},
		{"RunCommandInput.timeout_seconds", defaultCommandTimeout.Seconds(), def("RunCommandInput", "timeout_seconds")},
	} {
		if tt.code != tt.spec {
			t.Errorf("%s: the tool applies %v, the spec says %v", tt.field, tt.code, tt.spec)
		}
	}
	if defaultCommandTimeout%time.Second != 0 {
		t.Errorf("the command timeout %s is not whole seconds", defaultCommandTimeout)
	}
}
