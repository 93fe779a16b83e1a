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

// embedded derives the embedded spec's tools and binds them to the
// built-in handlers once per process: most runtimes of a process use both.
var embedded = sync.OnceValues(func() (binding, error) {
	doc, err := gen.SpecDoc()
	if err != nil {
		return binding{}, fmt.Errorf("tools: spec: %w", err)
	}
	reg, err := newRegistry(doc, false)
	if err != nil {
		return binding{}, err
	}
	bound, err := Bind(reg, Builtin())
	return binding{reg, bound}, err
})
