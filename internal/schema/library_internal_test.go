package schema

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/specloop/specloop/gen"
)

// library returns google/jsonschema-go's verdict on values of schema s,
// the oracle Validate is held to, with the formats Compile enforces
// written as the keywords the library checks; nil when it cannot resolve
// s.
func library(s map[string]any) func(any) bool {
	data, _ := json.Marshal(s)
	var copied any
	json.Unmarshal(data, &copied)
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if f, ok := v["format"].(string); ok {
				var kw map[string]any
				switch f {
				case "date-time":
					kw = map[string]any{"pattern": dateTimeRE().String()}
				case "date":
					kw = map[string]any{"pattern": dateRE().String()}
				case "byte":
					kw = map[string]any{"pattern": byteRE().String()}
				case "int32":
					kw = map[string]any{"minimum": math.MinInt32, "maximum": math.MaxInt32}
				case "int64":
					kw = map[string]any{"minimum": math.MinInt64, "exclusiveMaximum": -float64(math.MinInt64)}
				}
				if kw != nil {
					all, _ := v["allOf"].([]any)
					v["allOf"] = append(all, kw)
				}
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(copied)
	data, _ = json.Marshal(copied)
	var js jsonschema.Schema
	if json.Unmarshal(data, &js) != nil {
		return nil
	}
	rs, err := js.Resolve(nil)
	if err != nil {
		return nil
	}
	return func(v any) bool { return rs.Validate(v) == nil }
}

// FuzzAgreesWithTheLibrary: wherever both compile a schema, Validate
// says what google/jsonschema-go says, for any decoded value. (Drafts
// other than 2020-12 and $dynamicRef, which Compile reads its own way,
// are left out.)
//
//	go test -run '^$' -fuzz FuzzAgreesWithTheLibrary ./internal/schema
func FuzzAgreesWithTheLibrary(f *testing.F) {
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
		{`{"uniqueItems":true}`, `[{"a":[1,{"b":null}]},{"a":[1,{"b":null}]}]`},
		{`{"contains":{"type":"string"},"minContains":2,"maxContains":3}`, `["a",1,"b"]`},
		{`{"prefixItems":[{"type":"string"}],"unevaluatedItems":false}`, `["a",1]`},
		{`{"allOf":[{"properties":{"a":{}}}],"anyOf":[{"properties":{"b":{}}},{"required":["c"]}],"unevaluatedProperties":{"type":"integer"}}`, `{"a":"x","b":"y","c":1,"d":"z"}`},
		{`{"if":{"properties":{"k":{"const":"n"}}},"then":{"properties":{"v":{"type":"number"}}},"else":{"properties":{"v":{"type":"string"}}},"unevaluatedProperties":false}`, `{"k":"n","v":1,"w":2}`},
		{`{"patternProperties":{"^x":{"type":"null"}},"propertyNames":{"maxLength":3},"dependentRequired":{"a":["b"]},"dependentSchemas":{"c":{"minProperties":3}}}`, `{"a":1,"c":2,"xyz":null}`},
		{`{"$defs":{"a":{"$anchor":"A","type":"integer"}},"properties":{"n":{"$ref":"#A"}},"not":{"required":["z"]}}`, `{"n":1.5}`},
		{`{"oneOf":[{"properties":{"t":{"const":"a"}},"required":["t"]},{"properties":{"t":{"const":"b"}}}]}`, `{"u":1}`},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, s, in string) {
		var m map[string]any
		if json.Unmarshal([]byte(s), &m) != nil || len(s) > 4096 || strings.Contains(s, "$schema") || strings.Contains(s, "$dynamic") {
			return
		}
		value, err := Decode([]byte(in))
		if err != nil {
			return
		}
		v, err := Compile(m, Neither)
		want := library(m)
		if err != nil || want == nil {
			return
		}
		if got := v.Validate(value) == nil; got != want(value) {
			t.Fatalf("schema %s, value %s: Validate says valid=%v, the library %v (%v)", s, in, got, want(value), v.Validate(value))
		}
	})
}

// TestGoValues: a Go caller's value of a type Decode never produces is
// judged as the JSON it encodes to.
func TestGoValues(t *testing.T) {
	v, err := Compile(map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer", "maximum": 3}}}, Request)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []any{map[string]any{"n": 3}, map[string]int{"n": 3}, map[string]any{"n": int64(2)}} {
		if err := v.Validate(x); err != nil {
			t.Errorf("%#v: %v", x, err)
		}
	}
	if err := v.Validate(map[string]any{"n": 4}); err == nil || err.Error() != `field "/n": must be at most 3` {
		t.Errorf("an int past the maximum: %v", err)
	}
	if err := v.Validate(map[string]any{"n": math.NaN()}); err == nil {
		t.Error("NaN is valid")
	}
}

// FuzzAgreesWithTheLibraryOnTheSpec: for the spec's oneOfs (Action and
// HistoryItem, told apart by their type) and the Turn of Actions,
// Validate says what the library says, on values of each branch, broken
// ones and values of no branch.
func FuzzAgreesWithTheLibraryOnTheSpec(f *testing.F) {
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
	var ours []*Validator
	var theirs []func(any) bool
	for _, name := range []string{"Action", "HistoryItem", "Turn"} {
		v, err := Compile(doc.Schemas[name], Neither)
		want := library(doc.Schemas[name])
		if err != nil || want == nil {
			f.Fatalf("%s: %v", name, err)
		}
		ours, theirs = append(ours, v), append(theirs, want)
	}
	f.Fuzz(func(t *testing.T, text string) {
		x, err := Decode([]byte(text))
		if err != nil {
			return
		}
		for i, v := range ours {
			if got, want := v.Validate(x) == nil, theirs[i](x); got != want {
				t.Fatalf("schema %d, %s: Validate says valid=%v, the library %v", i, text, got, want)
			}
		}
	})
}

// TestSpecSchemasCompile: every schema of the spec compiles each way.
func TestSpecSchemasCompile(t *testing.T) {
	doc, err := gen.SpecDoc()
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range doc.Schemas {
		for _, dir := range []Direction{Request, Response, Neither} {
			if _, err := Compile(s, dir); err != nil {
				t.Errorf("%s (direction %s): %v", name, strconv.Itoa(int(dir)), err)
			}
		}
	}
}

// BenchmarkValidate measures what the loop pays a step to validate a
// model's Action against the spec.
//
//	go test ./internal/schema -run '^$' -bench . -benchtime 2000x
func BenchmarkValidate(b *testing.B) {
	doc, err := gen.SpecDoc()
	if err != nil {
		b.Fatal(err)
	}
	v, err := Compile(doc.Schemas["Action"], Neither)
	if err != nil {
		b.Fatal(err)
	}
	x, err := Decode([]byte(`{"type":"tool_call","tool_name":"calculator","arguments":{"operation":"add","left":1,"right":2}}`))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := v.Validate(x); err != nil {
			b.Fatal(err)
		}
	}
}
