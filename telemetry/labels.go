package telemetry

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/specdoc"
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

// toolPathPrefix is where the spec has its built-in tools' operations.
const toolPathPrefix = "/v1/tools/"

// sandboxDenialsKey is the extension of the ErrorCode schema that lists the
// codes of calls the workspace's confinement refused.
const sandboxDenialsKey = "x-sandbox-denials"

// vocabulary is what the spec allows as label values.
type vocabulary struct {
	exitReasons []gen.ExitReason
	statuses    []gen.RunStatus
	errorCodes  []gen.ErrorCode
	providers   []string // the ModelConfig discriminator values
	denials     []gen.ErrorCode
	operations  []string // the operationIds
	builtin     []string // the built-in tools: the operationIds of POST /v1/tools/{name}
}

var (
	vocabOnce sync.Once
	vocab     *vocabulary
	vocabErr  error
)

// specVocabulary reads the vocabulary from the embedded spec, once.
func specVocabulary() (*vocabulary, error) {
	vocabOnce.Do(func() {
		doc, err := specdoc.Load()
		if err != nil {
			vocabErr = err
			return
		}
		vocab, vocabErr = readVocabulary(doc)
	})
	return vocab, vocabErr
}

func readVocabulary(doc *openapi3.T) (*vocabulary, error) {
	v := &vocabulary{}
	var err error
	if v.exitReasons, err = enumOf[gen.ExitReason](doc); err != nil {
		return nil, err
	}
	if v.statuses, err = enumOf[gen.RunStatus](doc); err != nil {
		return nil, err
	}
	if v.errorCodes, err = enumOf[gen.ErrorCode](doc); err != nil {
		return nil, err
	}
	mc := schema[gen.ModelConfig](doc)
	if mc == nil || mc.Discriminator == nil || len(mc.Discriminator.Mapping) == 0 {
		return nil, fmt.Errorf("telemetry: the spec's %s has no discriminator mapping", typeName[gen.ModelConfig]())
	}
	for p := range mc.Discriminator.Mapping {
		v.providers = append(v.providers, p)
	}
	slices.Sort(v.providers)
	list, _ := schema[gen.ErrorCode](doc).Extensions[sandboxDenialsKey].([]any)
	if len(list) == 0 {
		return nil, fmt.Errorf("telemetry: the spec's %s has no %s list", typeName[gen.ErrorCode](), sandboxDenialsKey)
	}
	for _, x := range list {
		s, _ := x.(string)
		if !slices.Contains(v.errorCodes, gen.ErrorCode(s)) {
			return nil, fmt.Errorf("telemetry: %s lists %q, which is not an error code", sandboxDenialsKey, s)
		}
		v.denials = append(v.denials, gen.ErrorCode(s))
	}
	for path, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			v.operations = append(v.operations, op.OperationID)
		}
		if strings.HasPrefix(path, toolPathPrefix) && !strings.Contains(path, "{") && item.Post != nil {
			v.builtin = append(v.builtin, item.Post.OperationID)
		}
	}
	return v, nil
}

// enumOf returns the members of the spec's enum schema that T was
// generated from.
func enumOf[T ~string](doc *openapi3.T) ([]T, error) {
	s := schema[T](doc)
	if s == nil || len(s.Enum) == 0 {
		return nil, fmt.Errorf("telemetry: the spec has no enum %s", typeName[T]())
	}
	out := make([]T, 0, len(s.Enum))
	for _, m := range s.Enum {
		str, ok := m.(string)
		if !ok {
			return nil, fmt.Errorf("telemetry: a member of %s is not a string", typeName[T]())
		}
		out = append(out, T(str))
	}
	return out, nil
}

func schema[T any](doc *openapi3.T) *openapi3.Schema {
	ref := doc.Components.Schemas[typeName[T]()]
	if ref == nil {
		return nil
	}
	return ref.Value
}

// typeName is the Go name of T, which for generated types is the name of
// their schema component.
func typeName[T any]() string { return reflect.TypeFor[T]().Name() }

// provider is the label of a model provider name.
func (v *vocabulary) provider(p string) string {
	if slices.Contains(v.providers, p) {
		return p
	}
	return labelOther
}

// exitReason is the label of an exit reason.
func (v *vocabulary) exitReason(r gen.ExitReason) string {
	if slices.Contains(v.exitReasons, r) {
		return string(r)
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

// operation is the label of a request's operation: an operationId of the
// spec, or other for anything else.
func (v *vocabulary) operation(id string) string {
	if slices.Contains(v.operations, id) {
		return id
	}
	return labelOther
}

// isBuiltin reports whether name is a built-in tool of the spec.
func (v *vocabulary) isBuiltin(name string) bool { return slices.Contains(v.builtin, name) }
