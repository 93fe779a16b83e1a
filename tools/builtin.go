package tools

import (
	"sync"

	"github.com/specloop/specloop/spec"
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
		runCommandHandler,
	}
}

// binding is a registry with its tools bound to handlers.
type binding struct {
	reg   *Registry
	bound map[string]Handler
}

// embeddedBinding derives the embedded spec's tools and binds the built-in
// handlers once per process.
var embeddedBinding = sync.OnceValues(func() (binding, error) {
	doc, err := spec.Load()
	if err != nil {
		return binding{}, err
	}
	reg, err := NewRegistry(doc)
	if err != nil {
		return binding{}, err
	}
	bound, err := Bind(reg, Builtin())
	return binding{reg: reg, bound: bound}, err
})
