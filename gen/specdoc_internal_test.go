package gen

import (
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/specloop/specloop/internal/oas"
	"github.com/specloop/specloop/spec"
)

// BenchmarkSpecDoc is what a process pays, once, for the spec's schemas:
// decoding the generated JSON, against reading the YAML with internal/oas.
//
//	go test -run '^$' -bench SpecDoc ./gen
func BenchmarkSpecDoc(b *testing.B) {
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := json.Unmarshal([]byte(specDocJSON), new(oas.Doc)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("yaml", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := oas.Parse(spec.YAML()); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestSpecDoc: the generated document is the one internal/oas reads from
// the spec (gen's freshness test keeps it so), and it decodes.
func TestSpecDoc(t *testing.T) {
	doc, err := SpecDoc()
	if err != nil {
		t.Fatal(err)
	}
	if _, _, op, ok := doc.Operation("createRun"); !ok || op.Request == nil || op.Request.Schema["type"] != "object" {
		t.Fatalf("createRun: %+v", op)
	}
	if doc.Schemas["Turn"]["required"] == nil {
		t.Fatalf("Turn: %v", doc.Schemas["Turn"])
	}
}
