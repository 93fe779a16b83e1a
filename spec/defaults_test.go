package spec_test

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/go-cmp/cmp"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/specdoc"
	"github.com/specloop/specloop/spec"
)

// specDefaults lists every default the spec writes: "Schema.property" or
// "operationId.parameter", with its value.
func specDefaults(doc *openapi3.T) map[string]any {
	out := map[string]any{}
	for name, ref := range doc.Components.Schemas {
		for prop, p := range ref.Value.Properties {
			if p.Value != nil && p.Value.Default != nil {
				out[name+"."+prop] = p.Value.Default
			}
		}
	}
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			for _, p := range op.Parameters {
				if p.Value != nil && p.Value.Schema != nil && p.Value.Schema.Value.Default != nil {
					out[op.OperationID+"."+p.Value.Name] = p.Value.Schema.Value.Default
				}
			}
		}
	}
	return out
}

// TestDefaultsAreSpecData: every default is a `default:` keyword, read by
// the code that applies it (spec.Default with the generated type), never
// prose beside a Go literal. A new default must be added here and read
// where it applies; the consumers compare their value with the spec's in
// their own tests (tools/defaults_test.go, agent, server).
func TestDefaultsAreSpecData(t *testing.T) {
	doc, err := specdoc.Parse(spec.YAML())
	if err != nil {
		t.Fatal(err)
	}
	got := specDefaults(doc)
	read := map[string]any{
		"CreateRunRequest.max_steps":             spec.Default[gen.CreateRunRequest]("MaxSteps"),
		"CreateRunRequest.max_observation_bytes": spec.Default[gen.CreateRunRequest]("MaxObservationBytes"),
		"CreateRunRequest.max_observation_lines": spec.Default[gen.CreateRunRequest]("MaxObservationLines"),
		"ListFilesInput.limit":                   spec.Default[gen.ListFilesInput]("Limit"),
		"ReadFileInput.start_line":               spec.Default[gen.ReadFileInput]("StartLine"),
		"SearchInput.regex":                      spec.Default[gen.SearchInput]("Regex"),
		"SearchInput.ignore_case":                spec.Default[gen.SearchInput]("IgnoreCase"),
		"SearchInput.limit":                      spec.Default[gen.SearchInput]("Limit"),
		"RunCommandInput.timeout_seconds":        spec.Default[gen.RunCommandInput]("TimeoutSeconds"),
		"listRuns.limit":                         spec.Default[gen.ListRunsParams]("Limit"),
	}
	if diff := cmp.Diff(read, got); diff != "" {
		t.Errorf("the spec's defaults differ from the ones the code reads (-read +spec); read each new default where it applies and list it here:\n%s", diff)
	}
	if spec.IntDefault[gen.ListRunsParams]("Limit") != int(got["listRuns.limit"].(float64)) {
		t.Error("IntDefault differs from the spec's default")
	}
	if spec.BoolDefault[gen.SearchInput]("Regex") != got["SearchInput.regex"].(bool) {
		t.Error("BoolDefault differs from the spec's default")
	}
	// A default written in prose is one the code would have to type again.
	prose := regexp.MustCompile(`\b(\d+|true|false) when absent`)
	var found []string
	walkDescriptions(doc, func(where, d string) {
		if prose.MatchString(d) {
			found = append(found, fmt.Sprintf("%s: %q", where, d))
		}
	})
	if len(found) > 0 {
		t.Errorf("defaults written in prose; make them `default:` keywords:\n%s", strings.Join(found, "\n"))
	}
}

func walkDescriptions(doc *openapi3.T, f func(where, d string)) {
	for _, name := range slices.Sorted(maps.Keys(doc.Components.Schemas)) {
		s := doc.Components.Schemas[name].Value
		f(name, s.Description)
		for prop, p := range s.Properties {
			if p.Value != nil {
				f(name+"."+prop, p.Value.Description)
			}
		}
	}
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			for _, p := range op.Parameters {
				if p.Value != nil {
					f(op.OperationID+"."+p.Value.Name, p.Value.Description)
				}
			}
		}
	}
}

func TestDefaultPanicsWithoutOne(t *testing.T) {
	for name, f := range map[string]func(){
		"no default":   func() { spec.Default[gen.SearchInput]("Pattern") },
		"no field":     func() { spec.Default[gen.SearchInput]("NoSuchField") },
		"not a number": func() { spec.IntDefault[gen.SearchInput]("Regex") },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}
