package spec_test

import (
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/specloop/specloop/internal/contract"
	"github.com/specloop/specloop/spec"
)

// TestSpecQuality checks the rules every schema and operation of
// spec/agent.yaml follows (see internal/contract.CheckSpec).
func TestSpecQuality(t *testing.T) {
	doc, err := contract.ParseSpec(spec.YAML())
	if err != nil {
		t.Fatal(err)
	}
	if ps := contract.CheckSpec(doc); len(ps) > 0 {
		t.Fatalf("spec/agent.yaml breaks the spec rules (%d problems):\n%s", len(ps), contract.Format(ps))
	}
}

// TestSpecQualityCatches breaks one rule at a time in a private copy of the
// spec and expects a problem that says where and what.
func TestSpecQualityCatches(t *testing.T) {
	schema := func(doc *openapi3.T, name string) *openapi3.Schema { return doc.Components.Schemas[name].Value }
	tests := []struct {
		name string
		edit func(doc *openapi3.T)
		want []string // every part appears in one problem line
	}{
		{"property without description",
			func(doc *openapi3.T) { schema(doc, "CalculatorInput").Properties["left"].Value.Description = "" },
			[]string{"schema CalculatorInput", "/left", "no description"}},
		{"nested property without description",
			func(doc *openapi3.T) { schema(doc, "ToolCall").Properties["call_id"].Value.Description = "" },
			[]string{"schema ToolCall", "/call_id", "no description"}},
		{"component without description",
			func(doc *openapi3.T) { schema(doc, "Usage").Description = "" },
			[]string{"schema Usage", "component has no description"}},
		{"keyword the validator ignores",
			func(doc *openapi3.T) {
				schema(doc, "CalculatorInput").Properties["left"].Value.PropertyNames = &openapi3.SchemaRef{Value: &openapi3.Schema{}}
			},
			[]string{"schema CalculatorInput", "/left", "propertyNames"}},
		{"anyOf",
			func(doc *openapi3.T) {
				s := schema(doc, "CalculatorInput")
				s.AnyOf = openapi3.SchemaRefs{s.Properties["left"]}
			},
			[]string{"schema CalculatorInput", "anyOf"}},
		{"oneOf without discriminator",
			func(doc *openapi3.T) { schema(doc, "Action").Discriminator = nil },
			[]string{"schema Action", "no discriminator"}},
		{"mapping misses a member",
			func(doc *openapi3.T) { delete(schema(doc, "HistoryItem").Discriminator.Mapping, "model_feedback") },
			[]string{"schema HistoryItem", "ModelFeedback has no discriminator mapping"}},
		{"mapping not one-to-one",
			func(doc *openapi3.T) {
				m := schema(doc, "Action").Discriminator.Mapping
				m["call"] = m["tool_call"]
			},
			[]string{"schema Action", "one-to-one"}},
		{"inline oneOf member",
			func(doc *openapi3.T) {
				s := schema(doc, "ModelConfig")
				s.OneOf[0] = &openapi3.SchemaRef{Value: s.OneOf[0].Value}
			},
			[]string{"schema ModelConfig", "member 0 is not a $ref"}},
		{"member does not pin the discriminator",
			func(doc *openapi3.T) { schema(doc, "Finish").Properties["type"].Value.Enum = nil },
			[]string{"schema Action", "Finish must pin type"}},
		{"input object not closed",
			func(doc *openapi3.T) {
				schema(doc, "CalculatorInput").AdditionalProperties = openapi3.AdditionalProperties{}
			},
			[]string{"schema CalculatorInput", "additionalProperties: false"}},
		{"union member object not closed",
			func(doc *openapi3.T) {
				schema(doc, "Observation").AdditionalProperties = openapi3.AdditionalProperties{}
			},
			[]string{"schema Observation", "additionalProperties: false"}},
		{"number without format double",
			func(doc *openapi3.T) { schema(doc, "CalculatorInput").Properties["right"].Value.Format = "" },
			[]string{"schema CalculatorInput", "/right", "format: double"}},
		{"optional and nullable",
			func(doc *openapi3.T) { schema(doc, "ReadFileInput").Properties["start_line"].Value.Nullable = true },
			[]string{"schema ReadFileInput", "/start_line", "optional and nullable"}},
		{"operation without summary",
			func(doc *openapi3.T) { doc.Paths.Find("/v1/runs").Get.Summary = "" },
			[]string{"listRuns", "no summary"}},
		{"operation without operationId",
			func(doc *openapi3.T) { doc.Paths.Find("/healthz").Get.OperationID = "" },
			[]string{"GET /healthz", "no operationId"}},
		{"body without 413",
			func(doc *openapi3.T) { doc.Paths.Find("/v1/runs").Post.Responses.Delete("413") },
			[]string{"createRun", "request body", "413"}},
		{"token without 401",
			func(doc *openapi3.T) { doc.Paths.Find("/v1/tools").Get.Responses.Delete("401") },
			[]string{"listTools", "needs a token", "401"}},
		{"error response not a problem",
			func(doc *openapi3.T) {
				r := doc.Paths.Find("/v1/runs/{run_id}/cancel").Post.Responses.Value("409")
				r.Value = &openapi3.Response{Description: r.Value.Description, Content: openapi3.NewContentWithJSONSchemaRef(doc.Components.Schemas["Run"])}
			},
			[]string{"cancelRun", "error response 409", "application/problem+json"}},
		{"no error responses",
			func(doc *openapi3.T) {
				rs := doc.Paths.Find("/healthz").Get.Responses
				rs.Delete("500")
				rs.Delete("403")
			},
			[]string{"getHealth", "no error response"}},
		{"invalid example",
			func(doc *openapi3.T) {
				ex := doc.Paths.Find("/v1/tools/calculator").Post.RequestBody.Value.Content.Get("application/json").Examples["multiply"]
				ex.Value.Value = map[string]any{"left": 12.0, "operation": "contract_not_an_operation", "right": 7.0}
			},
			[]string{"spec", "kin-openapi rejects"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := contract.ParseSpec(spec.YAML())
			if err != nil {
				t.Fatal(err)
			}
			tt.edit(doc)
			report := contract.Format(contract.CheckSpec(doc))
			for _, line := range strings.Split(report, "\n") {
				if containsAll(line, tt.want) {
					return
				}
			}
			t.Errorf("no problem mentions all of %q; the report:\n%s", tt.want, report)
		})
	}
}

// TestSpecQualityScope: output objects may stay open, and an explicit
// `additionalProperties: true` is a deliberate open map even in an input.
func TestSpecQualityScope(t *testing.T) {
	doc, err := contract.ParseSpec(spec.YAML())
	if err != nil {
		t.Fatal(err)
	}
	doc.Components.Schemas["RunResult"].Value.AdditionalProperties = openapi3.AdditionalProperties{}
	if ps := contract.CheckSpec(doc); len(ps) > 0 {
		t.Fatalf("an open output object was reported:\n%s", contract.Format(ps))
	}
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return s != ""
}
