package tools

import (
	"fmt"
	"slices"
	"strings"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/oas"
)

// The spec keeps error codes as data: the ErrorCode schema enumerates them
// and its x-meanings extension says what each means (gen's
// ErrorCode.Meaning); the 422 response of every tool operation lists the
// codes the tool may return in its x-error-codes extension.
const operationCodeKey = "x-error-codes"

// RuntimeErrorCodes are the codes the runtime itself may answer any tool
// call with, whatever the tool's operation lists.
var RuntimeErrorCodes = []gen.ErrorCode{gen.ErrorCodeInvalidArguments, gen.ErrorCodeUnknownTool, gen.ErrorCodeCancelled}

// operationCodes reads the x-error-codes list of a tool's 422 response.
func operationCodes(name string, failed *oas.Response) ([]gen.ErrorCode, error) {
	list, _ := failed.Extensions[operationCodeKey].([]any)
	if len(list) == 0 {
		return nil, fmt.Errorf("tool %q: its 422 response lists no error codes (%s)", name, operationCodeKey)
	}
	codes := make([]gen.ErrorCode, 0, len(list))
	for _, v := range list {
		s, _ := v.(string)
		code := gen.ErrorCode(s)
		if !code.Valid() {
			return nil, fmt.Errorf("tool %q: %s lists %q, which is not a member of ErrorCode", name, operationCodeKey, s)
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
func errorDescription(codes []gen.ErrorCode) string {
	sentences := make([]string, len(codes))
	for i, c := range codes {
		sentences[i] = string(c) + ": " + strings.TrimSuffix(c.Meaning(), ".") + "."
	}
	return strings.Join(sentences, " ")
}

// Declares reports whether a call of the tool may fail with code: the
// tool's operation lists it, or the runtime answers it for any tool.
func (d *Def) Declares(code gen.ErrorCode) bool {
	return slices.Contains(d.ErrorCodes, code) || slices.Contains(RuntimeErrorCodes, code)
}
