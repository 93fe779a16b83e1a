package tools

import (
	"sync"
	"time"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/spec"
)

// toolDefaults is what a tool does with an argument the call leaves out:
// each value is the `default:` the spec gives the property, so changing a
// default in spec/agent.yaml changes the behaviour and no default is typed
// twice.
type toolDefaults struct {
	listLimit      int
	startLine      int
	searchLimit    int
	searchRegex    bool
	ignoreCase     bool
	commandTimeout time.Duration
}

// defaults reads the tools' defaults from the embedded spec on first use
// (not at package init: a program that never calls a tool never parses the
// spec for them).
var defaults = sync.OnceValue(func() toolDefaults {
	return toolDefaults{
		listLimit:      spec.IntDefault[gen.ListFilesInput]("Limit"),
		startLine:      spec.IntDefault[gen.ReadFileInput]("StartLine"),
		searchLimit:    spec.IntDefault[gen.SearchInput]("Limit"),
		searchRegex:    spec.BoolDefault[gen.SearchInput]("Regex"),
		ignoreCase:     spec.BoolDefault[gen.SearchInput]("IgnoreCase"),
		commandTimeout: time.Duration(spec.IntDefault[gen.RunCommandInput]("TimeoutSeconds")) * time.Second,
	}
})

// orDefault returns *p, or def when p is nil (the argument was left out).
func orDefault[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}
