package tools

import (
	"fmt"
	"sync"

	"github.com/specloop/specloop/gen"
)

// Builtin returns the handlers of every tool in the embedded spec.
func Builtin() []Handler {
	return []Handler{
		calculatorHandler,
		listFilesHandler,
		readFileHandler,
		searchHandler,
		editFileHandler,
		writeFileHandler,
		applyPatchHandler,
		runCommandHandler,
	}
}

// binding is a registry with its tools bound to handlers.
type binding struct {
	reg   *Registry
	bound map[string]Handler
}

// embeddedRegistry derives the embedded spec's tools once per process.
var embeddedRegistry = sync.OnceValues(func() (*Registry, error) {
	doc, err := gen.SpecDoc()
	if err != nil {
		return nil, fmt.Errorf("tools: spec: %w", err)
	}
	return newRegistry(doc)
})

// embeddedBinding binds the embedded spec's tools to the built-in handlers
// once per process.
var embeddedBinding = sync.OnceValues(func() (binding, error) {
	reg, err := embeddedRegistry()
	if err != nil {
		return binding{}, err
	}
	bound, err := Bind(reg, Builtin())
	return binding{reg: reg, bound: bound}, err
})
