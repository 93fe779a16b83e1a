package schema_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/specloop/specloop/internal/schema"
	"github.com/specloop/specloop/spec"
)

var actionJSON = []byte(`{"type":"tool_call","tool_name":"calculator","arguments":{"left":12,"operation":"multiply","right":7}}`)

func BenchmarkDecode(b *testing.B) {
	b.SetBytes(int64(len(actionJSON)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := schema.Decode(actionJSON); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodingJSONUnmarshal(b *testing.B) {
	b.SetBytes(int64(len(actionJSON)))
	b.ReportAllocs()
	for b.Loop() {
		var v any
		if err := json.Unmarshal(actionJSON, &v); err != nil {
			b.Fatal(err)
		}
	}
}

func mustCompile(tb testing.TB, name string) *schema.Validator {
	tb.Helper()
	ref, ok := spec.MustLoad().Components.Schemas[name]
	if !ok {
		tb.Fatalf("no schema %s", name)
	}
	v, err := schema.Compile(ref.Value)
	if err != nil {
		tb.Fatal(err)
	}
	return v
}

func mustDecode(tb testing.TB, s string) any {
	tb.Helper()
	v, err := schema.Decode([]byte(s))
	if err != nil {
		tb.Fatal(err)
	}
	return v
}

func BenchmarkValidateAction(b *testing.B) {
	v := mustCompile(b, "Action")
	value := mustDecode(b, string(actionJSON))
	b.ReportAllocs()
	for b.Loop() {
		if err := v.Validate(value); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidateCalculatorInput(b *testing.B) {
	v := mustCompile(b, "CalculatorInput")
	value := mustDecode(b, string(actionJSON)).(map[string]any)["arguments"]
	b.ReportAllocs()
	for b.Loop() {
		if err := v.Validate(value); err != nil {
			b.Fatal(err)
		}
	}
}

type calculatorInput struct {
	Left      float64 `json:"left"`
	Operation string  `json:"operation"`
	Right     float64 `json:"right"`
}

func BenchmarkBindCalculatorInput(b *testing.B) {
	value := mustDecode(b, string(actionJSON)).(map[string]any)["arguments"]
	b.ReportAllocs()
	for b.Loop() {
		var in calculatorInput
		if err := schema.Bind(value, &in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStep is the whole per-step path: decode an action, validate it,
// validate its arguments and bind them.
func BenchmarkStep(b *testing.B) {
	action := mustCompile(b, "Action")
	calc := mustCompile(b, "CalculatorInput")
	b.ReportAllocs()
	for b.Loop() {
		value, err := schema.Decode(actionJSON)
		if err != nil {
			b.Fatal(err)
		}
		if err := action.Validate(value); err != nil {
			b.Fatal(err)
		}
		args := value.(map[string]any)["arguments"]
		if err := calc.Validate(args); err != nil {
			b.Fatal(err)
		}
		var in calculatorInput
		if err := schema.Bind(args, &in); err != nil {
			b.Fatal(err)
		}
	}
}

var sink any

// BenchmarkBuildValueByHand builds the value Decode returns for actionJSON
// directly, as a floor: the copy of the input, the maps and the boxed
// values that any decoder into map[string]any must allocate.
func BenchmarkBuildValueByHand(b *testing.B) {
	var at [9][2]int
	for i, word := range []string{"left", "operation", "multiply", "right", "type", "tool_call", "tool_name", "calculator", "arguments"} {
		j := bytes.Index(actionJSON, []byte(`"`+word+`"`)) + 1
		at[i] = [2]int{j, j + len(word)}
	}
	left, right := 12.0, 7.0
	b.ReportAllocs()
	for b.Loop() {
		c := string(actionJSON)
		args := make(map[string]any, 3)
		args[c[at[0][0]:at[0][1]]] = left
		args[c[at[1][0]:at[1][1]]] = c[at[2][0]:at[2][1]]
		args[c[at[3][0]:at[3][1]]] = right
		m := make(map[string]any, 3)
		m[c[at[4][0]:at[4][1]]] = c[at[5][0]:at[5][1]]
		m[c[at[6][0]:at[6][1]]] = c[at[7][0]:at[7][1]]
		m[c[at[8][0]:at[8][1]]] = args
		sink = m
	}
}
