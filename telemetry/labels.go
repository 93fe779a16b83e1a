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

// vocabulary is what the spec allows as label values.
type vocabulary struct {
	exitReasons []gen.ExitReason
	statuses    []gen.RunStatus
	errorCodes  []gen.ErrorCode
	providers   []string // the ModelConfig discriminator values
	denials     []gen.ErrorCode
	operations  []string // the operationIds
	builtin     []string // the built-in tools
}

// specVocabulary is the vocabulary of the spec, from its generated tables.
var specVocabulary = sync.OnceValue(func() *vocabulary {
	v := &vocabulary{
		exitReasons: gen.ExitReasonValues(),
		statuses:    gen.RunStatusValues(),
		errorCodes:  gen.ErrorCodeValues(),
		providers:   gen.ModelProviders(),
		denials:     gen.SandboxDenials(),
	}
	for _, op := range gen.Operations() {
		v.operations = append(v.operations, op.OperationID)
	}
	for _, t := range gen.BuiltinTools() {
		v.builtin = append(v.builtin, t.Name)
	}
	return v
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

// toolOutcome is the label of a tool call's outcome: ok, its error code,
// or error when it failed without a (known) code.
func (v *vocabulary) toolOutcome(isError bool, code *gen.ErrorCode) string {
	switch {
	case !isError:
		return outcomeOK
	case code != nil && slices.Contains(v.errorCodes, *code):
		return string(*code)
	}
	return outcomeError
}

// denied reports whether code says the confinement refused the call.
func (v *vocabulary) denied(code *gen.ErrorCode) bool {
	return code != nil && slices.Contains(v.denials, *code)
}

// isBuiltin reports whether name is a built-in tool of the spec.
func (v *vocabulary) isBuiltin(name string) bool { return slices.Contains(v.builtin, name) }
