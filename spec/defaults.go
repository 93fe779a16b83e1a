package spec

import (
	"fmt"
	"math"
	"reflect"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/specloop/specloop/internal/specparse"
)

// mustLoad is the embedded document, parsed once per process (the same
// *openapi3.T internal/specdoc.Load returns). The embedded document is
// tested, so it panics only on a broken build.
func mustLoad() *openapi3.T {
	doc, err := specparse.Embedded(document)
	if err != nil {
		panic(err)
	}
	return doc
}

// Default returns the default the embedded document gives the property
// that field (a Go field name) of T holds, where T is a generated type
// named after its component schema (gen.ListFilesInput is the schema
// ListFilesInput) or a generated parameters type (gen.ListRunsParams holds
// the parameters of the operation listRuns). It panics when the document
// gives no default: the names come from generated code, so that is a broken
// build, which the spec's tests catch. The value is as kin-openapi decodes
// JSON: float64 for numbers, bool, string.
func Default[T any](field string) any {
	v, err := defaultOf(mustLoad(), reflect.TypeFor[T](), field)
	if err != nil {
		panic(err)
	}
	return v
}

// IntDefault is Default for an integer property.
func IntDefault[T any](field string) int {
	v := Default[T](field)
	f, ok := v.(float64)
	if !ok || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		panic(fmt.Sprintf("spec: the default of %s.%s is not an integer", reflect.TypeFor[T]().Name(), field))
	}
	return int(f)
}

// BoolDefault is Default for a boolean property.
func BoolDefault[T any](field string) bool {
	v, ok := Default[T](field).(bool)
	if !ok {
		panic(fmt.Sprintf("spec: the default of %s.%s is not a boolean", reflect.TypeFor[T]().Name(), field))
	}
	return v
}

// defaultOf finds the schema of the property field of t holds in doc, and
// returns its default.
func defaultOf(doc *openapi3.T, t reflect.Type, field string) (any, error) {
	f, ok := t.FieldByName(field)
	if !ok {
		return nil, fmt.Errorf("spec: %s has no field %s", t.Name(), field)
	}
	prop, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if prop == "" || prop == "-" {
		return nil, fmt.Errorf("spec: %s.%s has no JSON name", t.Name(), field)
	}
	var s *openapi3.Schema
	if op, ok := strings.CutSuffix(t.Name(), "Params"); ok {
		s = paramSchema(doc, op, prop)
	} else if ref := doc.Components.Schemas[t.Name()]; ref != nil && ref.Value != nil {
		if p := ref.Value.Properties[prop]; p != nil {
			s = p.Value
		}
	}
	if s == nil {
		return nil, fmt.Errorf("spec: no schema for %s.%s (%s)", t.Name(), field, prop)
	}
	if s.Default == nil {
		return nil, fmt.Errorf("spec: %s.%s (%s) has no default", t.Name(), field, prop)
	}
	return s.Default, nil
}

// paramSchema is the schema of parameter name of the operation whose
// operationId is op (compared as the generator names it, case aside).
func paramSchema(doc *openapi3.T, op, name string) *openapi3.Schema {
	for _, item := range doc.Paths.Map() {
		for _, o := range item.Operations() {
			if !strings.EqualFold(o.OperationID, op) {
				continue
			}
			for _, p := range o.Parameters {
				if p.Value != nil && p.Value.Name == name && p.Value.Schema != nil {
					return p.Value.Schema.Value
				}
			}
		}
	}
	return nil
}
