// Package spec embeds spec/agent.yaml, the OpenAPI document that is the single
// source of every action, observation, result, trace event and tool schema.
//
// The document is parsed and validated once per process; callers share the
// result and must not modify it.
package spec

import (
	"context"
	_ "embed"
	"fmt"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
)

//go:embed agent.yaml
var document []byte

// YAML returns the embedded OpenAPI document exactly as written.
func YAML() []byte { return document }

var load = sync.OnceValues(func() (*openapi3.T, error) { return Parse(document) })

// Load returns the embedded document, parsed and validated on first use.
// Every caller gets the same *openapi3.T; treat it as read-only.
func Load() (*openapi3.T, error) { return load() }

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
