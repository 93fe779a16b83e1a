package telemetry

import (
	"slices"
	"sync"

	"github.com/specloop/specloop/gen"
)

// Label values come only from the spec: its enums, the tool names a run
// offers and a few fixed words. A value outside them is counted under
// labelOther, so that what a model writes never becomes a time series.
const (
	labelOther = "other"
	outcomeOK  = "ok"
	// outcomeError is a failed tool call without an error code.
	outcomeError = "error"
)

// The caps on tool label values. A run's tools are the spec's built-in
// ones, which always have their own label, and tools of the user's
// configuration (custom tools, MCP servers' NAME__tool), whose names an
// MCP server chooses: of those, the first MaxRunToolLabels distinct ones
// a run calls get their own label, and at most MaxToolLabels distinct
// ones in all in the process; any other is counted as other. So 1,000
// tool names of hostile MCP servers across runs add at most MaxToolLabels
// series of each tool metric.
const (
	MaxRunToolLabels = 64
	MaxToolLabels    = 512
)

// specNames are the spec's operationIds and built-in tool names, from its
// generated tables.
var specNames = sync.OnceValue(func() (n struct{ operations, builtin []string }) {
	for _, op := range gen.Operations() {
		n.operations = append(n.operations, op.OperationID)
	}
	for _, t := range gen.BuiltinTools() {
		n.builtin = append(n.builtin, t.Name)
	}
	return n
})

// label is the label of value v: v when it is one of allowed, other for
// anything else (a model provider, an exit reason or an operationId
// outside the spec).
func label[T ~string](allowed []T, v T) string {
	if slices.Contains(allowed, v) {
		return string(v)
	}
	return labelOther
}

// toolOutcome is the label of a tool call's outcome (an observation
// event): ok, its error code, or error when it failed without a (known)
// code.
func toolOutcome(ev *gen.TraceEvent) string {
	switch {
	case ev.IsError == nil || !*ev.IsError:
		return outcomeOK
	case ev.ErrorCode != nil && slices.Contains(gen.ErrorCodeValues(), *ev.ErrorCode):
		return string(*ev.ErrorCode)
	}
	return outcomeError
}
