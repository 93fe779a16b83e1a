package tools

import "github.com/getkin/kin-openapi/openapi3"

// SetWalkMaxEntries lowers the walks' entry cap for a test and returns the
// function that restores it.
func SetWalkMaxEntries(n int) (restore func()) {
	old := walkMaxEntries
	walkMaxEntries = n
	return func() { walkMaxEntries = old }
}

// NewRegistryFrom is NewRegistry over a parsed document, whose schemas the
// registry's definitions then share (tests edit them to make drift).
func NewRegistryFrom(doc *openapi3.T) (*Registry, error) { return newRegistry(doc) }

// InputSchema is the parsed input schema of d.
func InputSchema(d *Def) *openapi3.Schema { return d.inSchema }
