package adapt

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/specloop/specloop/gen"
)

// TestDeriveFinish: the finish tool is the spec's Finish without the
// discriminator and the reasoning, and deriving it leaves the shared
// document as it was.
func TestDeriveFinish(t *testing.T) {
	doc, err := gen.SpecDoc()
	if err != nil {
		t.Fatal(err)
	}
	finish := doc.Schemas["Finish"]
	fin, err := deriveFinish(doc.Schemas)
	if err != nil {
		t.Fatal(err)
	}
	answer := finish["properties"].(map[string]any)["answer"].(map[string]any)
	want := map[string]any{
		"type":                 "object",
		"description":          finish["description"],
		"additionalProperties": false,
		"required":             []any{"answer"},
		"properties": map[string]any{
			"answer": map[string]any{"type": "string", "description": answer["description"]},
		},
	}
	if diff := cmp.Diff(want, fin.Tools[0].Parameters); diff != "" {
		t.Fatalf("finish parameters (-want +got):\n%s", diff)
	}
	if props := finish["properties"].(map[string]any); props["type"] == nil || props["reasoning"] == nil {
		t.Fatalf("deriving the finish tool changed the spec's Finish: %v", finish)
	}
	if _, err := deriveFinish(map[string]map[string]any{"Finish": finish}); err == nil {
		t.Fatal("a spec without an Action discriminator derived a finish tool")
	}
}
