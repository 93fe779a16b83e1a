package tools_test

import (
	"strings"
	"testing"

	"github.com/specloop/specloop/internal/contract"
	"github.com/specloop/specloop/tools"
)

// Every error code a tool's description names has a meaning: the one
// sentence the spec writes for it, which is what a client is told.
func TestErrorMeaningOfEveryCode(t *testing.T) {
	rt, err := tools.New(tools.Config{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, def := range rt.Registry().Defs() {
		desc := def.Spec.ErrorDescription
		codes := contract.ErrorCodes(desc)
		for _, code := range codes {
			n++
			m := tools.ErrorMeaning(desc, code)
			if m == "" {
				t.Errorf("%s: no meaning for %s in %q", def.Spec.Name, code, desc)
				continue
			}
			if !strings.Contains(desc, code+": "+m) {
				t.Errorf("%s: the meaning of %s, %q, is not the sentence after it in %q", def.Spec.Name, code, m, desc)
			}
			for _, other := range codes {
				if strings.Contains(m, other+": ") {
					t.Errorf("%s: the meaning of %s runs into %s: %q", def.Spec.Name, code, other, m)
				}
			}
		}
		if tools.ErrorMeaning(desc, "no_such_code") != "" {
			t.Errorf("%s: a meaning for a code it does not name", def.Spec.Name)
		}
	}
	if n == 0 {
		t.Fatal("no error code found: the test checks nothing")
	}
	const d = "division_by_zero: the operation is divide and right is 0. non_finite_result: the result overflows (to infinity) or is not a number."
	for code, want := range map[string]string{
		"division_by_zero":  "the operation is divide and right is 0",
		"non_finite_result": "the result overflows (to infinity) or is not a number",
	} {
		if got := tools.ErrorMeaning(d, code); got != want {
			t.Errorf("ErrorMeaning(%s) = %q, want %q", code, got, want)
		}
	}
}
