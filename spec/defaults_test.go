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
	"github.com/specloop/specloop/internal/contract"
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

// TestDefaultsAreSpecData: every default is a `default:` keyword, which
// the generator turns into a constant of gen (Default + Schema + Property)
// that the code applying it uses, never prose beside a Go literal. A new
// default must be added here and used where it applies; the consumers
// compare their value with the spec's in their own tests
// (tools/defaults_test.go, agent, server).
func TestDefaultsAreSpecData(t *testing.T) {
	doc, err := contract.ParseSpec(spec.YAML())
	if err != nil {
		t.Fatal(err)
	}
	got := specDefaults(doc)
	read := map[string]any{
		"CreateRunRequest.max_steps":             float64(gen.DefaultCreateRunRequestMaxSteps),
		"CreateRunRequest.max_observation_bytes": float64(gen.DefaultCreateRunRequestMaxObservationBytes),
		"CreateRunRequest.max_observation_lines": float64(gen.DefaultCreateRunRequestMaxObservationLines),
		"CreateRunRequest.transcript":            gen.DefaultCreateRunRequestTranscript,
		"CreateRunRequest.project_docs":          gen.DefaultCreateRunRequestProjectDocs,
		"CreateRunRequest.project_docs_limit":    float64(gen.DefaultCreateRunRequestProjectDocsLimit),
		"CreateRunRequest.isolation":             gen.DefaultCreateRunRequestIsolation,
		"CreateRunRequest.commit":                gen.DefaultCreateRunRequestCommit,
		"EvalTask.commit":                        gen.DefaultEvalTaskCommit,
		"ListFilesInput.limit":                   float64(gen.DefaultListFilesInputLimit),
		"ReadFileInput.start_line":               float64(gen.DefaultReadFileInputStartLine),
		"SearchInput.regex":                      gen.DefaultSearchInputRegex,
		"SearchInput.ignore_case":                gen.DefaultSearchInputIgnoreCase,
		"SearchInput.limit":                      float64(gen.DefaultSearchInputLimit),
		"RunCommandInput.timeout_seconds":        float64(gen.DefaultRunCommandInputTimeoutSeconds),
		"listRuns.limit":                         float64(gen.DefaultListRunsParamsLimit),
	}
	if diff := cmp.Diff(read, got); diff != "" {
		t.Errorf("the spec's defaults differ from the generated constants (-generated +spec); run go generate ./gen, use each new default where it applies and list it here:\n%s", diff)
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
