package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestGenerateRefusesABrokenSpec: a marker the generator reads that does
// not fit the document stops it, naming the tool or schema, so a broken
// spec fails at `go generate`, never at run time.
func TestGenerateRefusesABrokenSpec(t *testing.T) {
	yaml, err := os.ReadFile("../../../spec/agent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := generate(yaml); err != nil {
		t.Fatalf("the spec itself: %v", err)
	}
	for name, tt := range map[string]struct{ from, to, want string }{
		"a meaning missing":           {"        division_by_zero: the operation is divide and right is 0\n", "", "division_by_zero has no meaning"},
		"a meaning of no code":        {"        division_by_zero: the operation", "        no_such_code: x\n        division_by_zero: the operation", "no_such_code, which is not a value"},
		"an undefined error code":     {"x-error-codes: [division_by_zero, non_finite_result]", "x-error-codes: [division_by_zero, no_such_code]", `tool calculator: x-error-codes lists "no_such_code"`},
		"a code listed twice":         {"x-error-codes: [division_by_zero, non_finite_result]", "x-error-codes: [division_by_zero, division_by_zero]", "lists division_by_zero twice"},
		"no error codes":              {"x-error-codes: [division_by_zero, non_finite_result]", "x-error-codes: []", "tool calculator: its 422 response lists no x-error-codes"},
		"a line range of no argument": {"line_range: {path: path, start: start_line, end: end_line}", "line_range: {path: path, start: first_line, end: end_line}", `line_range.start names "first_line"`},
		"an unknown hint":             {"        again: run the search again to see it\n", "        again: run the search again to see it\n        later: x\n", "unknown key later"},
		"a denial of no code":         {"x-sandbox-denials: [commands_disabled,", "x-sandbox-denials: [no_such_code,", `lists "no_such_code"`},
	} {
		t.Run(name, func(t *testing.T) {
			edited := bytes.Replace(yaml, []byte(tt.from), []byte(tt.to), 1)
			if bytes.Equal(edited, yaml) {
				t.Fatalf("the spec no longer has %q", tt.from)
			}
			_, err := generate(edited)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("generate: %v, want an error with %q", err, tt.want)
			}
		})
	}
}
