package contract

import (
	"context"
	"fmt"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/specloop/specloop/spec"
)

// Spec returns the embedded document as kin-openapi parses and validates
// it, once per process, for the tests that check the code against the
// spec with the reference implementation of OpenAPI. (The specloop
// command reads the spec through gen.SpecDoc, without kin-openapi.) Every
// caller gets the same *openapi3.T; treat it as read-only.
func Spec() (*openapi3.T, error) { return embedded() }

var embedded = sync.OnceValues(func() (*openapi3.T, error) { return ParseSpec(spec.YAML()) })

// MustSpec is Spec for tests that cannot continue without the spec.
func MustSpec() *openapi3.T {
	doc, err := Spec()
	if err != nil {
		panic(err)
	}
	return doc
}

// ParseSpec parses and validates an OpenAPI document with kin-openapi.
// Tests use it to load edited copies of the spec (to prove that drift is
// caught).
func ParseSpec(data []byte) (*openapi3.T, error) {
	doc, err := openapi3.NewLoader().LoadFromData(data)
	if err != nil {
		return nil, fmt.Errorf("spec: parse: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("spec: invalid: %w", err)
	}
	return doc, nil
}
