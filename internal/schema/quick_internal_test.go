package schema

import (
	"encoding/json"
	"testing"

	"github.com/specloop/specloop/gen"
)

// FuzzQuickAgrees: wherever the quick check compiles, it says what the
// library says, for any decoded value.
//
//	go test -run '^$' -fuzz FuzzQuickAgrees ./internal/schema
func FuzzQuickAgrees(f *testing.F) {
	for _, seed := range [][2]string{
		{`{"type":"object","required":["a"],"properties":{"a":{"type":"string","minLength":2,"maxLength":3}},"additionalProperties":false}`, `{"a":"xé"}`},
		{`{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":{"type":"integer","minimum":0}}`, `{"a":"x","b":-1}`},
		{`{"type":["integer","null"],"exclusiveMaximum":10,"multipleOf":0.5}`, `9.5`},
		{`{"type":"number","minimum":-2147483648,"maximum":2147483647}`, `2147483648`},
		{`{"enum":["a",1,true,null]}`, `1.0`},
		{`{"const":0}`, `-0`},
		{`{"enum":["a","b"],"const":"b"}`, `"a"`},
		{`{"type":"array","items":{"$ref":"#/$defs/n"},"minItems":1,"maxItems":2,"$defs":{"n":{"type":"integer"}}}`, `[1,2.5]`},
		{`{"items":{"$ref":"#"},"type":["array","string"]}`, `[["x"],[[]]]`},
		{`{"allOf":[{"pattern":"^a"},{"maxLength":3}],"anyOf":[{"type":"string"},{"type":"number"}]}`, `"abcd"`},
		{`{"properties":{"x":{"not":{},"readOnly":true}},"description":"d","x-ext":1,"discriminator":{"propertyName":"t"}}`, `{"x":1}`},
		{`{"type":"string","format":"date-time","allOf":[{"pattern":"^[0-9]{4}-"}]}`, `"2024-01-01T00:00:00Z"`},
		{`{"type":"object","required":["t"],"properties":{"t":{"enum":["tool_call"]},"arguments":{"type":"object","additionalProperties":true}}}`, `{"t":"tool_call","arguments":{"a":[1]}}`},
		{`{"uniqueItems":true}`, `[1,1]`},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, s, in string) {
		var m map[string]any
		if json.Unmarshal([]byte(s), &m) != nil || len(s) > 4096 || check(m) != nil {
			return
		}
		value, err := Decode([]byte(in))
		if err != nil {
			return
		}
		rs, err := resolve(m)
		if err != nil || rs.quick == nil {
			return
		}
		if got, want := rs.quick(value), rs.Validate(value) == nil; got != want {
			t.Fatalf("schema %s, value %s: the quick check says valid=%v, the library %v", s, in, got, want)
		}
	})
}

// TestQuickLeavesGoValuesToTheLibrary: a Go caller's value of a type
// Decode never produces is not judged by the quick check, and the
// library's verdict stands.
func TestQuickLeavesGoValuesToTheLibrary(t *testing.T) {
	rs, err := resolve(map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer", "maximum": 3}}})
	if err != nil || rs.quick == nil {
		t.Fatalf("no quick check: %v", err)
	}
	for _, v := range []any{map[string]any{"n": 3}, map[string]int{"n": 3}, map[string]any{"n": int64(2)}} {
		if rs.quick(v) || !rs.valid(v) {
			t.Errorf("%#v: quick %v, valid %v; want false, true", v, rs.quick(v), rs.valid(v))
		}
	}
	if rs.valid(map[string]any{"n": 4}) {
		t.Error("an int past the maximum is valid")
	}
}

// TestSpecSchemasAreQuick: every schema of the spec, each way it is
// compiled, takes the quick check: the loop's and the server's values are
// checked without the library's reflection.
func TestSpecSchemasAreQuick(t *testing.T) {
	doc, err := gen.SpecDoc()
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range doc.Schemas {
		for _, dir := range []Direction{Request, Response, Neither} {
			v, err := Compile(s, dir)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if v.resolved.quick == nil {
				t.Errorf("%s (direction %d) has no quick check", name, dir)
			}
		}
	}
}

// FuzzQuickAgreesOnTheSpec: for the spec's oneOfs (Action and
// HistoryItem, told apart by their type) and the Turn of Actions, the
// quick check says what the library says, on values of each branch,
// broken ones and values of no branch.
func FuzzQuickAgreesOnTheSpec(f *testing.F) {
	for _, s := range []string{
		`{"type":"tool_call","tool_name":"calculator","arguments":{"left":1}}`,
		`{"type":"tool_call","tool_name":"calculator"}`,
		`{"type":"tool_call","tool_name":"","arguments":{}}`,
		`{"type":"finish","answer":"done"}`,
		`{"type":"finish","answer":3}`,
		`{"type":"finish","answer":"x","extra":1}`,
		`{"type":"observation","tool_name":"t","content":"c","is_error":false}`,
		`{"type":"model_feedback","kind":"stuck_warning","message":"m"}`,
		`{"type":"nothing"}`,
		`{"tool_name":"calculator","arguments":{}}`,
		`{"actions":[{"type":"tool_call","tool_name":"c","arguments":{}},{"type":"finish","answer":"a"}]}`,
		`{"actions":[]}`,
		`[1,2]`, `"finish"`, `null`,
	} {
		f.Add(s)
	}
	doc, err := gen.SpecDoc()
	if err != nil {
		f.Fatal(err)
	}
	var checks []*resolved
	for _, name := range []string{"Action", "HistoryItem", "Turn"} {
		root, err := prepare(doc.Schemas[name], Neither)
		if err != nil {
			f.Fatal(err)
		}
		rs, err := resolve(root)
		if err != nil || rs.quick == nil {
			f.Fatalf("%s has no quick check: %v", name, err)
		}
		checks = append(checks, rs)
	}
	f.Fuzz(func(t *testing.T, text string) {
		v, err := Decode([]byte(text))
		if err != nil {
			return
		}
		for i, rs := range checks {
			if got, want := rs.quick(v), rs.Validate(v) == nil; got != want {
				t.Fatalf("schema %d, %s: the quick check says valid=%v, the library %v", i, text, got, want)
			}
		}
	})
}
