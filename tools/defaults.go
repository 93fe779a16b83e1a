package tools

import (
	"time"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/spec"
)

// What a tool does with an argument the call leaves out: each value is the
// `default:` the spec gives the property, read from the embedded spec when
// the package starts, so changing a default in spec/agent.yaml changes the
// behaviour and no default is typed twice.
var (
	defaultListLimit      = spec.IntDefault[gen.ListFilesInput]("Limit")
	defaultStartLine      = spec.IntDefault[gen.ReadFileInput]("StartLine")
	defaultSearchLimit    = spec.IntDefault[gen.SearchInput]("Limit")
	defaultSearchRegex    = spec.BoolDefault[gen.SearchInput]("Regex")
	defaultIgnoreCase     = spec.BoolDefault[gen.SearchInput]("IgnoreCase")
	defaultCommandTimeout = time.Duration(spec.IntDefault[gen.RunCommandInput]("TimeoutSeconds")) * time.Second
)

// orDefault returns *p, or def when p is nil (the argument was left out).
func orDefault[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}
