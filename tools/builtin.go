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

var embeddedRegistry = sync.OnceValues(func() (*Registry, error) {
	doc, err := spec.Load()
	if err != nil {
		return nil, err
	}
	return NewRegistry(doc)
})
