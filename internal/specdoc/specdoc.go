// Package specdoc loads the embedded OpenAPI document (spec/agent.yaml) once
// with kin-openapi. It is internal so that specloop's public API carries no
// kin-openapi type: a kin-openapi upgrade changes only code inside this
// module.
//
// The document is parsed and validated once per process; callers share the
// result and must not modify it.
package specdoc

import (
	"github.com/getkin/kin-openapi/openapi3"

	"github.com/specloop/specloop/internal/specparse"
	"github.com/specloop/specloop/spec"
)

// Load returns the embedded document, parsed and validated on first use.
// Every caller (package spec's default readers included) gets the same
// *openapi3.T; treat it as read-only.
func Load() (*openapi3.T, error) { return specparse.Embedded(spec.YAML()) }

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
func Parse(data []byte) (*openapi3.T, error) { return specparse.Parse(data) }
