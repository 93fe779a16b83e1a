// Package specparse parses and validates an OpenAPI document with
// kin-openapi, and holds the one parse of the embedded spec/agent.yaml that
// every package of the process shares. It imports nothing of specloop, so
// that both package spec (for its default readers) and internal/specdoc
// (for everything else) can use it without an import cycle.
package specparse

import (
	"context"
	"fmt"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
)

// Parse parses and validates an OpenAPI document.
func Parse(data []byte) (*openapi3.T, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(data)
	if err != nil {
		return nil, fmt.Errorf("spec: parse: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("spec: invalid: %w", err)
	}
	return doc, nil
}

var (
	once   sync.Once
	shared []byte
	doc    *openapi3.T
	err    error
)

// Embedded returns the embedded document (spec.YAML(), which package spec
// passes in), parsed and validated on the first call; every later call gets
// the same *openapi3.T. It panics when called with other bytes than the
// first call: there is one embedded document, parsed once.
func Embedded(data []byte) (*openapi3.T, error) {
	once.Do(func() {
		shared = data
		doc, err = Parse(data)
	})
	if len(data) != len(shared) || (len(data) > 0 && &data[0] != &shared[0]) {
		panic("specparse: Embedded called with a document other than the embedded spec")
	}
	return doc, err
}
