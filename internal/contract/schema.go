package contract

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/specdoc"
)

// fieldError is a schema violation found by kin-openapi: where, and why,
// without the value.
type fieldError struct {
	Pointer string
	Reason  string
}

func (e *fieldError) Error() string {
	if e.Pointer == "" {
		return e.Reason
	}
	return e.Pointer + ": " + e.Reason
}

// kinCheck validates value against s with kin-openapi, the reference
// validator of the spec, and words a violation as the runtime does
// (internal/schema). It returns nil or a *fieldError.
func kinCheck(s *openapi3.Schema, value any, opts ...openapi3.SchemaValidationOption) *fieldError {
	err := s.VisitJSON(value, opts...)
	if err == nil {
		return nil
	}
	return fromSchemaError(err)
}

// componentName is the schema component a generated type was generated
// from: the Go type name, which oapi-codegen keeps.
func componentName[T any]() string { return reflect.TypeFor[T]().Name() }

// component returns the named schema component of doc.
func component(doc *openapi3.T, name string) (*openapi3.Schema, error) {
	if doc.Components == nil || doc.Components.Schemas[name] == nil || doc.Components.Schemas[name].Value == nil {
		return nil, fmt.Errorf("the spec has no schema component %s", name)
	}
	return doc.Components.Schemas[name].Value, nil
}

// ValidateJSON validates one JSON document against the schema component
// named name of the embedded spec (e.g. "RunResult", "ToolSpec"), with
// kin-openapi. The error names the field, never the value.
func ValidateJSON(name string, data []byte) error {
	doc, err := specdoc.Load()
	if err != nil {
		return err
	}
	return validateJSON(doc, name, data)
}

func validateJSON(doc *openapi3.T, name string, data []byte) error {
	s, err := component(doc, name)
	if err != nil {
		return err
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if fe := kinCheck(s, v, openapi3.VisitAsResponse()); fe != nil {
		return fmt.Errorf("%s: %w", name, fe)
	}
	return nil
}

// CheckToolSpecs validates the model-visible tool specs (a runtime's
// Specs()) against the spec's ToolSpec schema, and checks that each input
// schema is self-contained (no $ref a model could not resolve).
func CheckToolSpecs(doc *openapi3.T, specs []gen.ToolSpec) []Problem {
	var ps []Problem
	name := componentName[gen.ToolSpec]()
	for _, ts := range specs {
		data, err := json.Marshal(ts)
		if err != nil {
			ps = append(ps, Problem{Subject: ts.Name, Message: "the tool spec does not encode: " + err.Error()})
			continue
		}
		if err := validateJSON(doc, name, data); err != nil {
			ps = append(ps, Problem{Subject: ts.Name, Message: "the model-visible tool spec does not validate: " + err.Error()})
		}
		if strings.Contains(string(data), `"$ref"`) {
			ps = append(ps, Problem{Subject: ts.Name, Message: "the model-visible tool spec contains a $ref; its schemas must be self-contained"})
		}
	}
	return ps
}
