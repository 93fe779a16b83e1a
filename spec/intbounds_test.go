package spec_test

import (
	"fmt"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/specloop/specloop/internal/contract"
)

// maxExact is the largest integer a float64 (and so the validator and most
// JSON parsers) holds exactly: 2^53 - 1.
const maxExact = 1<<53 - 1

// Every integer in the spec has a minimum and a maximum within what a Go
// int holds and a float64 represents exactly, so validation refuses every
// value that would not bind to the generated Go type (a value past the
// type's range used to pass validation and fail the binding, ending a run
// with internal_error or a request with 500).
func TestEveryIntegerIsBounded(t *testing.T) {
	doc := contract.MustSpec()
	seen := map[*openapi3.Schema]bool{}
	count := 0
	var walk func(at string, ref *openapi3.SchemaRef)
	walk = func(at string, ref *openapi3.SchemaRef) {
		if ref == nil || ref.Value == nil || seen[ref.Value] {
			return
		}
		s := ref.Value
		seen[s] = true
		if s.Type.Is(openapi3.TypeInteger) {
			count++
			switch {
			case s.Min == nil || s.Max == nil:
				t.Errorf("%s: integer without minimum and maximum", at)
			case *s.Min < -maxExact || *s.Max > maxExact:
				t.Errorf("%s: bounds [%v, %v] are past ±(2^53-1)", at, *s.Min, *s.Max)
			}
		}
		for name, p := range s.Properties {
			walk(at+"/"+name, p)
		}
		walk(at+"/items", s.Items)
		walk(at+"/additionalProperties", s.AdditionalProperties.Schema)
		for i, list := range []openapi3.SchemaRefs{s.OneOf, s.AnyOf, s.AllOf} {
			for j, r := range list {
				walk(fmt.Sprintf("%s/%d/%d", at, i, j), r)
			}
		}
	}
	for name, ref := range doc.Components.Schemas {
		walk("#/components/schemas/"+name, ref)
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			for _, p := range append(item.Parameters, op.Parameters...) {
				if p.Value != nil {
					walk(method+" "+path+" parameter "+p.Value.Name, p.Value.Schema)
				}
			}
		}
	}
	if count == 0 {
		t.Fatal("no integer found: the walk is broken")
	}
}
