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

// embeddedRegistry derives the embedded spec's tools once per process.
var embeddedRegistry = sync.OnceValues(func() (*Registry, error) {
	doc, err := gen.SpecDoc()
	if err != nil {
		return nil, fmt.Errorf("tools: spec: %w", err)
	}
	return newRegistry(doc, false)
})

// embeddedBound binds the embedded spec's tools to the built-in handlers
// once per process.
var embeddedBound = sync.OnceValues(func() (map[string]Handler, error) {
	reg, err := embeddedRegistry()
	if err != nil {
		return nil, err
	}
	return Bind(reg, Builtin())
})
