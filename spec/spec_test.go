package spec_test

import (
	"encoding/json"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/specloop/specloop/spec"
)

func TestLoadValidates(t *testing.T) {
	doc, err := spec.Load()
	if err != nil {
		t.Fatal(err)
	}
	again, _ := spec.Load()
	if doc != again {
		t.Fatal("Load parsed the document twice; it must be loaded once")
	}
}

func BenchmarkVisitCalc(b *testing.B) {
	doc := spec.MustLoad()
	s := doc.Components.Schemas["CalculatorInput"].Value
	var v any
	json.Unmarshal([]byte(`{"left":12,"operation":"multiply","right":7}`), &v)
	for b.Loop() {
		if err := s.VisitJSON(v, openapi3.MultiErrors()); err != nil {
			b.Fatal(err)
		}
	}
}
func BenchmarkVisitAction(b *testing.B) {
	doc := spec.MustLoad()
	s := doc.Components.Schemas["Action"].Value
	var v any
	json.Unmarshal([]byte(`{"type":"tool_call","tool_name":"calculator","arguments":{"left":12,"operation":"multiply","right":7}}`), &v)
	for b.Loop() {
		if err := s.VisitJSON(v); err != nil {
			b.Fatal(err)
		}
	}
}
func BenchmarkUnmarshalAny(b *testing.B) {
	data := []byte(`{"type":"tool_call","tool_name":"calculator","arguments":{"left":12,"operation":"multiply","right":7}}`)
	for b.Loop() {
		var v any
		json.Unmarshal(data, &v)
	}
}
