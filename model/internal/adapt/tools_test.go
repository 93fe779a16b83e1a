package adapt

import (
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/go-cmp/cmp"
	"github.com/specloop/specloop/internal/specdoc"
)

// TestDeriveFinish: the finish tool is the spec's Finish without the
// discriminator, and a Finish that uses $ref is refused rather than sent to
// a provider that cannot resolve it.
func TestDeriveFinish(t *testing.T) {
	doc, err := specdoc.Load()
	if err != nil {
		t.Fatal(err)
	}
	fin, err := deriveFinish(doc)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"type":                 "object",
		"description":          doc.Components.Schemas["Finish"].Value.Description,
		"additionalProperties": false,
		"required":             []any{"answer"},
		"properties": map[string]any{
			"answer": map[string]any{"type": "string", "description": doc.Components.Schemas["Finish"].Value.Properties["answer"].Value.Description},
		},
	}
	if diff := cmp.Diff(want, fin.parameters); diff != "" {
		t.Fatalf("finish parameters (-want +got):\n%s", diff)
	}

	withRef := &openapi3.T{Components: &openapi3.Components{Schemas: openapi3.Schemas{
		"Action": doc.Components.Schemas["Action"],
		"Finish": openapi3.NewSchemaRef("", &openapi3.Schema{
			Type: &openapi3.Types{openapi3.TypeObject},
			Properties: openapi3.Schemas{
				"answer": openapi3.NewSchemaRef("#/components/schemas/Answer", openapi3.NewStringSchema()),
			},
		}),
	}}}
	if _, err := deriveFinish(withRef); err == nil || !strings.Contains(err.Error(), "$ref") {
		t.Fatalf("a Finish with $ref: err = %v, want one naming $ref", err)
	}
}
