package tools

import (
	"fmt"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/specloop/specloop/gen"
)

// The spec keeps error codes as data: the ErrorCode schema enumerates them
// and its x-meanings extension says what each means; the 422 response of
// every tool operation lists the codes the tool may return in its
// x-error-codes extension.
const (
	errorCodeSchema  = "ErrorCode"
	meaningsKey      = "x-meanings"
	operationCodeKey = "x-error-codes"
)

// RuntimeErrorCodes are the codes the runtime itself may answer any tool
// call with, whatever the tool's operation lists.
var RuntimeErrorCodes = []gen.ErrorCode{gen.ErrorCodeInvalidArguments, gen.ErrorCodeUnknownTool, gen.ErrorCodeCancelled}

// errorMeanings reads the ErrorCode enum of doc and the meaning x-meanings
// gives each code. Every member must have a meaning, every meaning a member,
// and every member a generated constant.
func errorMeanings(doc *openapi3.T) (map[gen.ErrorCode]string, error) {
	ref := doc.Components.Schemas[errorCodeSchema]
	if ref == nil || ref.Value == nil {
		return nil, fmt.Errorf("the spec has no %s schema", errorCodeSchema)
	}
	s := ref.Value
	raw, _ := s.Extensions[meaningsKey].(map[string]any)
	if raw == nil {
		return nil, fmt.Errorf("%s has no %s object (code: meaning)", errorCodeSchema, meaningsKey)
	}
	meanings := make(map[gen.ErrorCode]string, len(s.Enum))
	for _, v := range s.Enum {
		name, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("%s: a member is not a string", errorCodeSchema)
		}
		code := gen.ErrorCode(name)
		if !code.Valid() {
			return nil, fmt.Errorf("%s: %s has no generated constant (run go generate ./gen)", errorCodeSchema, name)
		}
		m, _ := raw[name].(string)
		if strings.TrimSpace(m) == "" {
			return nil, fmt.Errorf("%s: %s has no meaning in %s", errorCodeSchema, name, meaningsKey)
		}
		meanings[code] = m
	}
	for name := range raw {
		if _, ok := meanings[gen.ErrorCode(name)]; !ok {
			return nil, fmt.Errorf("%s: %s gives a meaning to %s, which is not a member", errorCodeSchema, meaningsKey, name)
		}
	}
	for _, c := range RuntimeErrorCodes {
		if _, ok := meanings[c]; !ok {
			return nil, fmt.Errorf("%s lacks %s, which the runtime answers", errorCodeSchema, c)
		}
	}
	return meanings, nil
}

// operationCodes reads the x-error-codes list of a tool's 422 response.
func operationCodes(name string, failed *openapi3.Response, meanings map[gen.ErrorCode]string) ([]gen.ErrorCode, error) {
	list, _ := failed.Extensions[operationCodeKey].([]any)
	if len(list) == 0 {
		return nil, fmt.Errorf("tool %q: its 422 response lists no error codes (%s)", name, operationCodeKey)
	}
	codes := make([]gen.ErrorCode, 0, len(list))
	for _, v := range list {
		s, _ := v.(string)
		code := gen.ErrorCode(s)
		if _, ok := meanings[code]; !ok {
			return nil, fmt.Errorf("tool %q: %s lists %q, which is not a member of %s", name, operationCodeKey, s, errorCodeSchema)
		}
		if slices.Contains(codes, code) {
			return nil, fmt.Errorf("tool %q: %s lists %s twice", name, operationCodeKey, s)
		}
		codes = append(codes, code)
	}
	return codes, nil
}

// errorDescription is what a model is told about a tool's failures: each
// code the tool may return with its meaning, as `code: meaning.` sentences.
func errorDescription(codes []gen.ErrorCode, meanings map[gen.ErrorCode]string) string {
	var b strings.Builder
	for i, c := range codes {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(string(c))
		b.WriteString(": ")
		b.WriteString(strings.TrimSuffix(meanings[c], "."))
		b.WriteByte('.')
	}
	return b.String()
}

// ErrorMeaning returns what the spec says an error code means, or "" for a
// code it does not define. The text is the spec's, so it never holds
// anything a caller sent: it is what a client is told about a tool failure,
// while the model gets the tool's own message, which may quote the path or
// pattern it gave.
func (r *Registry) ErrorMeaning(code gen.ErrorCode) string { return r.meanings[code] }

// Declares reports whether a call of the tool may fail with code: the
// tool's operation lists it, or the runtime answers it for any tool.
func (d *Def) Declares(code gen.ErrorCode) bool {
	return slices.Contains(d.ErrorCodes, code) || slices.Contains(RuntimeErrorCodes, code)
}
