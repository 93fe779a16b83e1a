package tools

import (
	"time"

	"github.com/specloop/specloop/gen"
)

// What a tool does with an argument the call leaves out: each value is the
// `default:` the spec gives the property (generated into gen), so changing
// a default in spec/agent.yaml changes the behaviour and no default is
// typed twice.
const (
	defaultListLimit      = gen.DefaultListFilesInputLimit
	defaultStartLine      = gen.DefaultReadFileInputStartLine
	defaultSearchLimit    = gen.DefaultSearchInputLimit
	defaultSearchRegex    = gen.DefaultSearchInputRegex
	defaultIgnoreCase     = gen.DefaultSearchInputIgnoreCase
	defaultCommandTimeout = gen.DefaultRunCommandInputTimeoutSeconds * time.Second
)

// orDefault returns *p, or def when p is nil (the argument was left out).
func orDefault[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}
