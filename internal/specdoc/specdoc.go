// Package specdoc parses the embedded OpenAPI document (spec/agent.yaml)
// with kin-openapi, once per process, for the code that needs the
// document itself: the validators (request, tool input, trace event) and
// the tools' registry. Constants (defaults, bounds, enums, tool traits)
// are generated into gen instead, so reading them parses nothing. It is
// internal so that specloop's public API carries no kin-openapi type: a
// kin-openapi upgrade changes only code inside this module.
package specdoc

import (
	"context"
	"fmt"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/specloop/specloop/spec"
)

// Load returns the embedded document, parsed and validated on first use.
// Every caller gets the same *openapi3.T; treat it as read-only.
func Load() (*openapi3.T, error) { return embedded() }

var embedded = sync.OnceValues(func() (*openapi3.T, error) { return Parse(spec.YAML()) })

// MustLoad is Load for callers that cannot continue without the spec; the
// embedded document is tested, so it panics only on a broken build.
func MustLoad() *openapi3.T {
	doc, err := Load()
	if err != nil {
		panic(err)
	}
	return doc
}

// Parse parses and validates an OpenAPI document. Tests use it to load edited
// copies of the spec (to prove that drift is caught).
func Parse(data []byte) (*openapi3.T, error) {
	doc, err := openapi3.NewLoader().LoadFromData(data)
	if err != nil {
		return nil, fmt.Errorf("spec: parse: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("spec: invalid: %w", err)
	}
	return doc, nil
}
