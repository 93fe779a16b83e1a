package schema_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/specloop/specloop/internal/schema"
	"github.com/specloop/specloop/spec"
)

// load parses components (a JSON object of named schemas) in a minimal
// OpenAPI document, with references resolved.
func load(t testing.TB, components string) *openapi3.T {
	t.Helper()
	doc := `{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{},"components":{"schemas":` + components + `}}`
	d, err := openapi3.NewLoader().LoadFromData([]byte(doc))
	if err != nil {
		t.Fatalf("load %s: %v", components, err)
	}
	return d
}

// compile compiles the schema S, given as JSON.
func compile(t testing.TB, s string) (*schema.Validator, error) {
	t.Helper()
	return schema.Compile(load(t, `{"S":`+s+`}`).Components.Schemas["S"].Value)
}

type keywordCase struct {
	schema  string
	value   string
	pointer string // when reason is ""
	reason  string // "" when the value is valid
}

var keywordCases = []keywordCase{
	// type and nullable
	{`{"type":"string"}`, `"SECRET-VALUE-123"`, "", ""},
	{`{"type":"string"}`, `123456.5`, "", "must be a string"},
	{`{"type":"string"}`, `null`, "", "must be a string"},
	{`{"type":"string","nullable":true}`, `null`, "", ""},
	{`{"type":"string","nullable":true,"enum":["a"]}`, `null`, "", ""},
	{`{"type":"integer"}`, `3`, "", ""},
	{`{"type":"integer"}`, `-3e2`, "", ""},
	{`{"type":"integer"}`, `3.5`, "", "must be an integer"},
	{`{"type":"integer"}`, `"SECRET-VALUE-123"`, "", "must be an integer"},
	{`{"type":"number"}`, `3.5`, "", ""},
	{`{"type":"number"}`, `3`, "", ""},
	{`{"type":"number"}`, `true`, "", "must be a number"},
	{`{"type":"boolean"}`, `false`, "", ""},
	{`{"type":"boolean"}`, `"SECRET-VALUE-123"`, "", "must be a boolean"},
	{`{"type":"array"}`, `[]`, "", ""},
	{`{"type":"array"}`, `{"SECRET":1}`, "", "must be an array"},
	{`{"type":"object"}`, `{}`, "", ""},
	{`{"type":"object"}`, `["SECRET-VALUE-123"]`, "", "must be an object"},
	{`{}`, `null`, "", "must not be null"},
	{`{"nullable":true}`, `null`, "", ""},
	{`{}`, `{"a":[1,"x",null]}`, "", ""},
	{`{"type":"object","properties":{"a":{}}}`, `{"a":null}`, "/a", "must not be null"},
	{`{"type":"object","additionalProperties":true}`, `{"a":null}`, "", ""},
	{`{"oneOf":[{"type":"string","nullable":true},{"type":"integer"}]}`, `null`, "", ""},
	{`{"oneOf":[{"type":"string"},{"type":"integer"}]}`, `null`, "", "does not match any oneOf schema"},
	{`{"allOf":[{"type":"string"}]}`, `null`, "", "must be a string"},
	{`{"description":"only annotations","example":"x","default":1,"readOnly":true}`, `7`, "", ""},

	// enum
	{`{"type":"string","enum":["add","subtract"]}`, `"add"`, "", ""},
	{`{"type":"string","enum":["add","subtract"]}`, `"SECRET-VALUE-123"`, "", "must be one of add, subtract"},
	{`{"enum":[1,2.5,true,null]}`, `2.5`, "", ""},
	{`{"enum":[1,2.5,true,null]}`, `null`, "", "must not be null"},
	{`{"enum":[1,2.5,true,null],"nullable":true}`, `null`, "", ""},
	{`{"enum":[1,2.5,true,null]}`, `true`, "", ""},
	{`{"enum":[1,2.5,true,null]}`, `false`, "", "must be one of 1, 2.5, true, null"},
	{`{"enum":[1,2.5,true,null]}`, `123456.5`, "", "must be one of 1, 2.5, true, null"},
	{`{"enum":[1,2.5,true,null]}`, `"SECRET-VALUE-123"`, "", "must be one of 1, 2.5, true, null"},
	{`{"enum":[1,2.5,true,null]}`, `["SECRET"]`, "", "must be one of 1, 2.5, true, null"},
	{`{"enum":[1,2.5,true,null]}`, `{"SECRET":1}`, "", "must be one of 1, 2.5, true, null"},
	{`{"enum":["a","b","c","d","e","f","g","h","i","j"]}`, `"j"`, "", ""},
	{`{"enum":["a","b","c","d","e","f","g","h","i","j"]}`, `"SECRET"`, "", "must be one of a, b, c, d, e, f, g, h, i, j"},
	{`{"type":"boolean","enum":[false]}`, `true`, "", "must be one of false"},

	// required, properties, additionalProperties
	{`{"type":"object","required":["b","a"],"properties":{"a":{"type":"string"},"b":{"type":"string"}}}`, `{"a":"x","b":"y"}`, "", ""},
	{`{"type":"object","required":["b","a"],"properties":{"a":{"type":"string"},"b":{"type":"string"}}}`, `{}`, "/a", "is required"},
	{`{"type":"object","required":["b","a"],"properties":{"a":{"type":"string"},"b":{"type":"string"}}}`, `{"a":"SECRET-VALUE-123"}`, "/b", "is required"},
	{`{"type":"object","required":["b","a"],"properties":{"a":{"type":"string"},"b":{"type":"string"}}}`, `{"a":123456.5}`, "/b", "is required"},
	{`{"type":"object","required":["b","a"],"properties":{"a":{"type":"string"},"b":{"type":"string"}}}`, `{"a":"x","b":123456.5}`, "/b", "must be a string"},
	{`{"type":"object","required":["z"]}`, `{"a":1}`, "/z", "is required"},
	{`{"type":"object","required":["z","b"],"properties":{"b":{}}}`, `{}`, "/b", "is required"},
	{`{"type":"object","required":["a","z"],"properties":{"z":{}}}`, `{"z":1}`, "/a", "is required"},
	{`{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}`, `{"a":"x"}`, "", ""},
	{`{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}`, `{"a":"x","zz":"SECRET-VALUE-123"}`, "/zz", "is not allowed (additionalProperties is false)"},
	{`{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}`, `{"a":5,"0extra":1}`, "/0extra", "is not allowed (additionalProperties is false)"},
	{`{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}`, `{"a":5,"zz":1}`, "/a", "must be a string"},
	{`{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":true}`, `{"a":"x","b":"SECRET"}`, "", ""},
	{`{"type":"object","properties":{"a":{"type":"string"}}}`, `{"b":"SECRET"}`, "", ""},
	{`{"type":"object","additionalProperties":{"type":"integer"}}`, `{"x":1,"y":2}`, "", ""},
	{`{"type":"object","additionalProperties":{"type":"integer"}}`, `{"x":1,"y":123456.5}`, "/y", "must be an integer"},
	{`{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":{"type":"integer"}}`, `{"a":"s","b":7}`, "", ""},
	{`{"type":"object","properties":{"b":{"type":"string"}},"additionalProperties":{"type":"integer"}}`, `{"a":"SECRET","b":"s"}`, "/a", "must be an integer"},
	{`{"type":"object","properties":{"b":{"type":"string"}},"additionalProperties":{"type":"integer"}}`, `{"a":1,"b":1,"c":"SECRET"}`, "/b", "must be a string"},
	{`{"type":"object","properties":{"a/b~c":{"type":"string"}}}`, `{"a/b~c":1}`, "/a~1b~0c", "must be a string"},
	{`{"type":"object","required":["a/b"]}`, `{}`, "/a~1b", "is required"},
	{`{"type":"object","additionalProperties":false}`, `{"x/y":1}`, "/x~1y", "is not allowed (additionalProperties is false)"},
	{`{"type":"object","minProperties":2}`, `{"a":1}`, "", "must have at least 2 properties"},
	{`{"type":"object","minProperties":2}`, `{"a":1,"b":2}`, "", ""},
	{`{"type":"object","maxProperties":1}`, `{"a":1,"b":"SECRET"}`, "", "must have at most 1 property"},
	{`{"type":"object","maxProperties":1,"required":["c"]}`, `{"a":1,"b":2}`, "/c", "is required"},
	// Many properties and few keys takes the other path through objects.
	{manyProps, `{"p03":"x","extra":1}`, "", ""},
	{manyProps, `{"p03":"x","p07":"SECRET"}`, "/p07", "must be an integer"},
	{manyProps, `{"p07":1}`, "/p03", "is required"},
	{manyPropsClosed, `{"p03":"x","p05":1}`, "", ""},
	{manyPropsClosed, `{"p03":"x","extra":"SECRET"}`, "/extra", "is not allowed (additionalProperties is false)"},
	{manyPropsClosed, `{"p03":"x","p09":"SECRET","a":1}`, "/a", "is not allowed (additionalProperties is false)"},

	// strings
	{`{"type":"string","minLength":3}`, `"héé"`, "", ""},
	{`{"type":"string","minLength":3}`, `"hé"`, "", "must be at least 3 characters"},
	{`{"type":"string","minLength":1}`, `""`, "", "must be at least 1 character"},
	{`{"type":"string","maxLength":3}`, `"ééé"`, "", ""},
	{`{"type":"string","maxLength":3}`, `"SECRET-VALUE-123"`, "", "must be at most 3 characters"},
	{`{"type":"string","maxLength":3}`, `"éééé"`, "", "must be at most 3 characters"},
	{`{"type":"string","pattern":"^[a-z]+$"}`, `"abc"`, "", ""},
	{`{"type":"string","pattern":"^[a-z]+$"}`, `"SECRET-VALUE-123"`, "", "does not match pattern ^[a-z]+$"},
	{`{"type":"string","pattern":"b"}`, `"abc"`, "", ""},
	{`{"type":"string","format":"date-time"}`, `"2024-01-02T03:04:05Z"`, "", ""},
	{`{"type":"string","format":"date-time"}`, `"2024-01-02T03:04:05.123456+02:00"`, "", ""},
	{`{"type":"string","format":"date-time"}`, `"SECRET-VALUE-123"`, "", "must be an RFC 3339 date-time"},
	{`{"type":"string","format":"date-time"}`, `"2024-01-02 03:04:05Z"`, "", "must be an RFC 3339 date-time"},
	{`{"type":"string","format":"date-time"}`, `"2024-13-02T03:04:05Z"`, "", "must be an RFC 3339 date-time"},
	{`{"type":"string","format":"uuid"}`, `"not a uuid"`, "", ""},
	{`{"type":"string","format":"email"}`, `"not an email"`, "", ""},
	{`{"minLength":5,"minimum":9}`, `3`, "", "must be at least 9"},
	{`{"minLength":5,"minimum":9}`, `"abcde"`, "", ""},

	// numbers
	{`{"type":"number","minimum":1}`, `1`, "", ""},
	{`{"type":"number","minimum":1}`, `0.5`, "", "must be at least 1"},
	{`{"type":"number","maximum":10}`, `10`, "", ""},
	{`{"type":"number","maximum":10}`, `123456.5`, "", "must be at most 10"},
	{`{"type":"number","minimum":0,"exclusiveMinimum":true}`, `0.1`, "", ""},
	{`{"type":"number","minimum":0,"exclusiveMinimum":true}`, `0`, "", "must be greater than 0"},
	{`{"type":"number","maximum":10,"exclusiveMaximum":true}`, `10`, "", "must be less than 10"},
	{`{"type":"number","maximum":10,"exclusiveMaximum":true}`, `9.99`, "", ""},
	{`{"type":"number","minimum":-1.5,"exclusiveMinimum":false}`, `-1.5`, "", ""},
	{`{"type":"number","multipleOf":0.1}`, `0.3`, "", ""},
	{`{"type":"number","multipleOf":0.1}`, `0.35`, "", "must be a multiple of 0.1"},
	{`{"type":"integer","multipleOf":5}`, `-25`, "", ""},
	{`{"type":"integer","multipleOf":5}`, `123456`, "", "must be a multiple of 5"},
	{`{"type":"integer","format":"int32"}`, `2147483647`, "", ""},
	{`{"type":"integer","format":"int32"}`, `-2147483648`, "", ""},
	{`{"type":"integer","format":"int32"}`, `2147483648`, "", "must be a 32-bit integer"},
	{`{"type":"integer","format":"int64"}`, `9007199254740993`, "", ""},
	{`{"type":"integer","format":"int64"}`, `9.3e18`, "", "must be a 64-bit integer"},
	{`{"type":"number","format":"float"}`, `3.4e38`, "", ""},
	{`{"type":"number","format":"float"}`, `1e39`, "", "is out of range for a 32-bit float"},
	{`{"type":"number","format":"double"}`, `1e300`, "", ""},

	// arrays
	{`{"type":"array","minItems":1}`, `[]`, "", "must have at least 1 item"},
	{`{"type":"array","minItems":1}`, `[null]`, "", ""},
	{`{"type":"array","maxItems":2}`, `[1,2,"SECRET"]`, "", "must have at most 2 items"},
	{`{"type":"array","items":{"type":"string"}}`, `["a","b"]`, "", ""},
	{`{"type":"array","items":{"type":"string"}}`, `["a",123456.5]`, "/1", "must be a string"},
	{`{"type":"array","uniqueItems":true}`, `[1,"1",true,null,[1],{"a":1},{"a":2}]`, "", ""},
	{`{"type":"array","uniqueItems":true}`, `[1,2,1]`, "", "must not contain duplicate items (items 0 and 2 are equal)"},
	{`{"type":"array","uniqueItems":true}`, `[{"a":[1,"SECRET"]},{"a":[1,"SECRET"]}]`, "", "must not contain duplicate items (items 0 and 1 are equal)"},
	{`{"type":"array","uniqueItems":true}`, longArray(20, -1, -1), "", ""},
	{`{"type":"array","uniqueItems":true}`, longArray(20, 3, 17), "", "must not contain duplicate items (items 3 and 17 are equal)"},
	{`{"type":"array","items":{"type":"array","items":{"type":"object","properties":{"n":{"type":"integer"}}}}}`, `[[],[{"n":1},{"n":"SECRET"}]]`, "/1/1/n", "must be an integer"},

	// allOf
	{allOf, `{"a":1,"b":2}`, "", ""},
	{allOf, `{}`, "/a", "is required"},
	{allOf, `{"a":1,"b":"SECRET"}`, "/b", "must be an integer"},
	{allOf, `"SECRET"`, "", "must be an object"},

	// oneOf without a discriminator
	{`{"oneOf":[{"type":"string"},{"type":"integer"}]}`, `"x"`, "", ""},
	{`{"oneOf":[{"type":"string"},{"type":"integer"}]}`, `1`, "", ""},
	{`{"oneOf":[{"type":"string"},{"type":"integer"}]}`, `123456.5`, "", "does not match any oneOf schema"},
	{`{"oneOf":[{"type":"string"},{"type":"integer"}]}`, `true`, "", "does not match any oneOf schema"},
	{`{"oneOf":[{"type":"number"},{"type":"integer"}]}`, `1`, "", "must match exactly one oneOf schema but matches 2"},
	{`{"oneOf":[{"type":"string","maxLength":2},{"type":"integer"}]}`, `"SECRET"`, "", "must be at most 2 characters"},
	{`{"oneOf":[{"type":"object","required":["a"]},{"type":"object","required":["b"]}]}`, `{"a":1}`, "", ""},
	{`{"oneOf":[{"type":"object","required":["a"]},{"type":"object","required":["b"]}]}`, `{"a":1,"b":"SECRET"}`, "", "must match exactly one oneOf schema but matches 2"},
	{`{"oneOf":[{"type":"object","required":["a"]},{"type":"object","required":["b"]}]}`, `{"c":"SECRET"}`, "", "does not match any oneOf schema"},
	{`{"type":"object","properties":{"v":{"oneOf":[{"type":"string"},{"type":"array","items":{"type":"string"}}]}}}`, `{"v":["a",123456.5]}`, "/v/1", "must be a string"},
}

var manyProps = func() string {
	var props []string
	for i := range 12 {
		typ := "integer"
		if i == 3 {
			typ = "string"
		}
		props = append(props, `"p`+pad2(i)+`":{"type":"`+typ+`"}`)
	}
	return `{"type":"object","required":["p03"],"properties":{` + strings.Join(props, ",") + `}}`
}()

var manyPropsClosed = strings.Replace(manyProps, `"type":"object",`, `"type":"object","additionalProperties":false,`, 1)

func pad2(i int) string { return string(rune('0'+i/10)) + string(rune('0'+i%10)) }

// longArray is a JSON array of n distinct strings, except that item j
// repeats item i when i >= 0.
func longArray(n, i, j int) string {
	items := make([]string, n)
	for k := range items {
		items[k] = `"SECRET-` + strconv.Itoa(k) + `"`
	}
	if i >= 0 {
		items[j] = items[i]
	}
	return "[" + strings.Join(items, ",") + "]"
}

const allOf = `{"allOf":[{"type":"object","required":["a"]},{"type":"object","properties":{"b":{"type":"integer"}}}]}`

func TestKeywords(t *testing.T) {
	for _, tc := range keywordCases {
		checkCase(t, tc)
	}
}

func checkCase(t *testing.T, tc keywordCase) {
	t.Helper()
	v, err := compile(t, tc.schema)
	if err != nil {
		t.Errorf("Compile(%s): %v", tc.schema, err)
		return
	}
	value, err := schema.Decode([]byte(tc.value))
	if err != nil {
		t.Fatalf("Decode(%s): %v", tc.value, err)
	}
	err = v.Validate(value)
	// kin-openapi agrees on validity, except that it does not check the
	// range of format: float.
	s := load(t, `{"S":`+tc.schema+`}`).Components.Schemas["S"].Value
	if kinErr := s.VisitJSON(value, openapi3.MultiErrors()); (kinErr == nil) != (err == nil) && !strings.Contains(tc.schema, `"float"`) {
		t.Errorf("schema %s, value %s: Validate = %v, kin-openapi = %v", tc.schema, tc.value, err, kinErr)
	}
	if tc.reason == "" {
		if err != nil {
			t.Errorf("schema %s, value %s: unexpected error %v", tc.schema, tc.value, err)
		}
		return
	}
	var e *schema.Error
	if !errors.As(err, &e) {
		t.Errorf("schema %s, value %s: error = %v, want *Error %q at %q", tc.schema, tc.value, err, tc.reason, tc.pointer)
		return
	}
	if e.Pointer != tc.pointer || e.Reason != tc.reason {
		t.Errorf("schema %s, value %s: got %q at %q, want %q at %q", tc.schema, tc.value, e.Reason, e.Pointer, tc.reason, tc.pointer)
	}
	checkNoEcho(t, err, tc.value)
}

// checkNoEcho fails when an error message contains a submitted value.
func checkNoEcho(t *testing.T, err error, value string) {
	t.Helper()
	msg := err.Error()
	if strings.Contains(msg, "SECRET") || strings.Contains(msg, "123456") {
		t.Errorf("error %q echoes the value %s", msg, value)
	}
}

func TestErrorString(t *testing.T) {
	tests := []struct {
		err  schema.Error
		want string
	}{
		{schema.Error{Pointer: "/arguments/operation", Reason: "must be one of add, subtract, multiply, divide"},
			`field "/arguments/operation": must be one of add, subtract, multiply, divide`},
		{schema.Error{Pointer: "/right", Reason: "is required"}, `field "/right": is required`},
		{schema.Error{Reason: "must be an object"}, `value: must be an object`},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestValidateGoValues(t *testing.T) {
	v, err := compile(t, `{"type":"object","properties":{"n":{"type":"integer","minimum":1,"maximum":5}}}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []any{int(3), int8(3), int16(3), int32(3), int64(3), uint(3), uint8(3), uint16(3), uint32(3), uint64(3), float32(3), 3.0, json.Number("3")} {
		if err := v.Validate(map[string]any{"n": n}); err != nil {
			t.Errorf("%T: %v", n, err)
		}
	}
	for _, n := range []any{int64(9), json.Number("3.5"), json.Number("SECRET"), struct{}{}} {
		if err := v.Validate(map[string]any{"n": n}); err == nil {
			t.Errorf("%T %v: no error", n, n)
		} else {
			checkNoEcho(t, err, "")
		}
	}
	nan, _ := compile(t, `{"type":"number"}`)
	var zero float64
	if err := nan.Validate(zero / zero); err == nil || err.Error() != "value: must be a finite number" {
		t.Errorf("NaN: %v", err)
	}
}

func TestRecursiveSchema(t *testing.T) {
	doc := load(t, `{
		"Node": {
			"type": "object",
			"additionalProperties": false,
			"required": ["name"],
			"properties": {
				"name": {"type": "string"},
				"children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}}
			}
		}
	}`)
	v, err := schema.Compile(doc.Components.Schemas["Node"].Value)
	if err != nil {
		t.Fatal(err)
	}
	ok := `{"name":"a","children":[{"name":"b"},{"name":"c","children":[{"name":"d","children":[]}]}]}`
	if err := v.Validate(mustDecode(t, ok)); err != nil {
		t.Errorf("valid tree: %v", err)
	}
	bad := `{"name":"a","children":[{"name":"b"},{"name":"c","children":[{"name":"d"},{"name":["SECRET"]}]}]}`
	err = v.Validate(mustDecode(t, bad))
	if err == nil || err.Error() != `field "/children/1/children/1/name": must be a string` {
		t.Errorf("invalid tree: %v", err)
	}
	deep := strings.Repeat(`{"name":"x","children":[`, 200) + `{"name":"SECRET","extra":1}` + strings.Repeat(`]}`, 200)
	err = v.Validate(mustDecode(t, deep))
	if err == nil || !strings.HasSuffix(err.Error(), `/children/0/extra": is not allowed (additionalProperties is false)`) {
		t.Errorf("deep tree: %v", err)
	}
	// A Go value with a cycle is cut off instead of overflowing the stack.
	cyclic := map[string]any{"name": "x"}
	cyclic["children"] = []any{cyclic}
	if err := v.Validate(cyclic); err == nil || !strings.Contains(err.Error(), "is nested too deeply") {
		t.Errorf("cyclic value: %v", err)
	}
}

func TestDiscriminatorWithoutMapping(t *testing.T) {
	doc := load(t, `{
		"Pet": {"oneOf": [{"$ref": "#/components/schemas/Cat"}, {"$ref": "#/components/schemas/Dog"}],
		        "discriminator": {"propertyName": "kind"}},
		"Cat": {"type": "object", "required": ["kind", "meow"], "properties": {"kind": {"type": "string"}, "meow": {"type": "boolean"}}},
		"Dog": {"type": "object", "required": ["kind", "bark"], "properties": {"kind": {"type": "string"}, "bark": {"type": "boolean"}}}
	}`)
	v, err := schema.Compile(doc.Components.Schemas["Pet"].Value)
	if err != nil {
		t.Fatal(err)
	}
	for value, want := range map[string]string{
		`{"kind":"Cat","meow":true}`:    "",
		`{"kind":"Dog","bark":false}`:   "",
		`{"kind":"Dog","meow":true}`:    `field "/bark": is required`,
		`{"kind":"SECRET","meow":true}`: `field "/kind": must be one of Cat, Dog`,
		`{"kind":12,"meow":true}`:       `field "/kind": must be one of Cat, Dog`,
		`{"meow":true}`:                 `field "/kind": is required`,
		`"SECRET"`:                      `value: must be an object`,
		`null`:                          `value: must be an object`,
	} {
		err := v.Validate(mustDecode(t, value))
		if got := errString(err); got != want {
			t.Errorf("%s: got %q, want %q", value, got, want)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		schema string
		want   string
	}{
		{`{"anyOf":[{"type":"string"}]}`, `unsupported keyword "anyOf"`},
		{`{"not":{"type":"string"}}`, `unsupported keyword "not"`},
		{`{"type":"object","properties":{"a":{"type":"array","items":{"anyOf":[{}]}}}}`, `#/properties/a/items: unsupported keyword "anyOf"`},
		{`{"allOf":[{"type":"string"},{"type":"integer"}]}`, "conflicting types"},
		{`{"type":"object","allOf":[{"type":"array"}]}`, "conflicting types"},
		{`{"allOf":[{"type":"object","additionalProperties":false,"properties":{"a":{}}},{"type":"object","properties":{"b":{}}}]}`, `does not declare property "b"`},
		{`{"allOf":[{"type":"object","additionalProperties":false,"properties":{"a":{}}},{"required":["c"]}]}`, `does not declare property "c"`},
		{`{"type":"string","pattern":"(?<=x)y"}`, "pattern is not a valid Go regular expression"},
		{`{"enum":[{"a":1}]}`, "enum values must be strings, numbers, booleans or null"},
		{`{"type":"object","required":["x"],"additionalProperties":false}`, `required property "x" is not in properties and additionalProperties is false`},
		{`{"type":"number","exclusiveMinimum":true}`, "exclusiveMinimum: true needs minimum"},
		{`{"type":"number","multipleOf":0}`, "multipleOf must be a positive number"},
		{`{"oneOf":[{"type":"object"}],"discriminator":{"propertyName":"t"}}`, "needs every oneOf schema to be a reference"},
		{`{"type":"object","discriminator":{"propertyName":"t"}}`, "discriminator is only supported with oneOf"},
	}
	for _, tt := range tests {
		_, err := compile(t, tt.schema)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Compile(%s) error = %v, want it to contain %q", tt.schema, err, tt.want)
		}
	}
	doc := load(t, `{
		"U": {"oneOf": [{"$ref": "#/components/schemas/A"}, {"$ref": "#/components/schemas/B"}],
		      "discriminator": {"propertyName": "t", "mapping": {"a": "#/components/schemas/A", "c": "#/components/schemas/C"}}},
		"V": {"oneOf": [{"$ref": "#/components/schemas/A"}, {"$ref": "#/components/schemas/B"}],
		      "discriminator": {"propertyName": "t", "mapping": {"a": "#/components/schemas/A"}}},
		"A": {"type": "object"}, "B": {"type": "object"}, "C": {"type": "object"}
	}`)
	for name, want := range map[string]string{
		"U": `discriminator mapping "c" targets "#/components/schemas/C", which is not one of the oneOf schemas`,
		"V": "no discriminator value selects this oneOf schema",
	} {
		_, err := schema.Compile(doc.Components.Schemas[name].Value)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Compile(%s) error = %v, want it to contain %q", name, err, want)
		}
	}
	if _, err := schema.Compile(nil); err == nil {
		t.Error("Compile(nil) succeeded")
	}
}

// TestSpecCompiles compiles every schema of the spec, so the spec cannot
// use a keyword the validator ignores.
func TestSpecCompiles(t *testing.T) {
	doc := spec.MustLoad()
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range doc.Components.Schemas {
			if !yield(k) {
				return
			}
		}
	}) {
		if _, err := schema.Compile(doc.Components.Schemas[name].Value); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestSpecAction(t *testing.T) {
	v := mustCompile(t, "Action")
	tests := []struct{ value, want string }{
		{`{"type":"tool_call","tool_name":"calculator","arguments":{"left":12,"operation":"multiply","right":7}}`, ""},
		{`{"type":"tool_call","tool_name":"calculator","arguments":{},"call_id":"c1"}`, ""},
		{`{"type":"finish","answer":"84"}`, ""},
		{`{"type":"finish"}`, `field "/answer": is required`},
		{`{"type":"finish","answer":"SECRET","extra":"SECRET"}`, `field "/extra": is not allowed (additionalProperties is false)`},
		{`{}`, `field "/type": is required`},
		{`{"answer":"SECRET"}`, `field "/type": is required`},
		{`{"type":"SECRET-VALUE-123"}`, `field "/type": must be one of finish, tool_call`},
		{`{"type":null}`, `field "/type": must be one of finish, tool_call`},
		{`["SECRET"]`, `value: must be an object`},
		{`"SECRET"`, `value: must be an object`},
		{`null`, `value: must be an object`},
		{`{"type":"tool_call","tool_name":"","arguments":{}}`, `field "/tool_name": must be at least 1 character`},
		{`{"type":"tool_call","tool_name":"calculator","arguments":"SECRET"}`, `field "/arguments": must be an object`},
		{`{"type":"tool_call","tool_name":"calculator"}`, `field "/arguments": is required`},
		{`{"type":"tool_call","arguments":{},"tool_name":123456}`, `field "/tool_name": must be a string`},
		{`{"type":"tool_call","tool_name":"` + strings.Repeat("x", 129) + `","arguments":{}}`, `field "/tool_name": must be at most 128 characters`},
	}
	for _, tt := range tests {
		err := v.Validate(mustDecode(t, tt.value))
		if got := errString(err); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.value, got, tt.want)
		}
		if err != nil {
			checkNoEcho(t, err, tt.value)
		}
	}
}

func TestSpecHistoryItem(t *testing.T) {
	v := mustCompile(t, "HistoryItem")
	tests := []struct{ value, want string }{
		{`{"type":"tool_call","tool_name":"calculator","arguments":{"left":1}}`, ""},
		{`{"type":"finish","answer":"done"}`, ""},
		{`{"type":"observation","tool_name":"calculator","content":"84","is_error":false,"data":{"value":84}}`, ""},
		{`{"type":"model_feedback","kind":"finish_rejected","message":"exit 1"}`, ""},
		{`{"type":"observation","tool_name":"calculator","content":"SECRET","is_error":"SECRET"}`, `field "/is_error": must be a boolean`},
		{`{"type":"model_feedback","kind":"SECRET","message":"m"}`, `field "/kind": must be one of invalid_model_output, finish_rejected`},
		{`{"type":"model_feedback","message":"m"}`, `field "/kind": is required`},
		{`{"type":"SECRET"}`, `field "/type": must be one of finish, model_feedback, observation, tool_call`},
	}
	for _, tt := range tests {
		err := v.Validate(mustDecode(t, tt.value))
		if got := errString(err); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.value, got, tt.want)
		}
		if err != nil {
			checkNoEcho(t, err, tt.value)
		}
	}
}

func TestSpecCalculatorInput(t *testing.T) {
	v := mustCompile(t, "CalculatorInput")
	tests := []struct{ value, want string }{
		{`{"left":12,"operation":"multiply","right":7}`, ""},
		{`{"left":-1.5e3,"operation":"divide","right":0}`, ""},
		{`{"left":12,"operation":"SECRET","right":7}`, `field "/operation": must be one of add, subtract, multiply, divide`},
		{`{"left":12,"operation":"add"}`, `field "/right": is required`},
		{`{"left":"SECRET","operation":"add","right":1}`, `field "/left": must be a number`},
		{`{"left":1,"operation":"add","right":1,"SECRET":1}`, `field "/SECRET": is not allowed (additionalProperties is false)`},
	}
	for _, tt := range tests {
		err := v.Validate(mustDecode(t, tt.value))
		if got := errString(err); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.value, got, tt.want)
		}
	}
}

// TestAgreesWithKin checks that the validator and kin-openapi agree on
// which values are valid.
func TestAgreesWithKin(t *testing.T) {
	doc := spec.MustLoad()
	values := map[string][]string{
		"Action": {
			`{"type":"tool_call","tool_name":"calculator","arguments":{"left":12}}`,
			`{"type":"finish","answer":""}`,
			`{"type":"finish","answer":1}`,
			`{"type":"finish","answer":"a","call_id":"x"}`,
			`{"type":"tool_call","tool_name":"x","arguments":{},"call_id":"` + strings.Repeat("é", 256) + `"}`,
			`{"type":"tool_call","tool_name":"x","arguments":{},"call_id":"` + strings.Repeat("é", 257) + `"}`,
			`{"type":"other"}`, `{}`, `[]`, `null`, `1`,
		},
		"CreateRunRequest": {
			`{"task":{"prompt":"p"},"model":{"provider":"script","responses":["r"]}}`,
			`{"task":{"prompt":"p"},"model":{"provider":"script","responses":[]}}`,
			`{"task":{"prompt":"p"},"model":{"provider":"openai","model":"m","temperature":2}}`,
			`{"task":{"prompt":"p"},"model":{"provider":"openai","model":"m","temperature":2.5}}`,
			`{"task":{"prompt":"p"},"model":{"provider":"anthropic","model":"m","max_output_tokens":0}}`,
			`{"task":{"prompt":"p"},"model":{"provider":"anthropic","model":"m"},"max_steps":100000}`,
			`{"task":{"prompt":"p"},"model":{"provider":"anthropic","model":"m"},"max_steps":100001}`,
			`{"task":{"prompt":"p"},"model":{"provider":"anthropic","model":"m"},"token_budget":1.5}`,
			`{"task":{"prompt":""},"model":{"provider":"script","responses":["r"]}}`,
		},
		"Run": {
			`{"id":"r","status":"queued","created_at":"2024-01-02T03:04:05Z"}`,
			`{"id":"r","status":"queued","created_at":"yesterday"}`,
			`{"id":"r","status":"done","created_at":"2024-01-02T03:04:05Z"}`,
		},
	}
	for name, list := range values {
		s := doc.Components.Schemas[name].Value
		v := mustCompile(t, name)
		for _, value := range list {
			decoded := mustDecode(t, value)
			kinErr := s.VisitJSON(decoded, openapi3.MultiErrors())
			err := v.Validate(decoded)
			if (err == nil) != (kinErr == nil) {
				t.Errorf("%s %s: Validate = %v, kin-openapi = %v", name, value, err, kinErr)
			}
		}
	}
}

func TestValidateDoesNotAllocate(t *testing.T) {
	action := mustCompile(t, "Action")
	calc := mustCompile(t, "CalculatorInput")
	run := mustCompile(t, "Run")
	value := mustDecode(t, string(actionJSON))
	args := value.(map[string]any)["arguments"]
	runValue := mustDecode(t, `{"id":"r","status":"finished","created_at":"2024-01-02T03:04:05Z","result":{"exit_reason":"finished","steps_used":3,"usage":{"input_tokens":1,"output_tokens":2}}}`)
	for name, f := range map[string]func(){
		"Action":          func() { _ = action.Validate(value) },
		"CalculatorInput": func() { _ = calc.Validate(args) },
		"Run":             func() { _ = run.Validate(runValue) },
	} {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s: %v allocations per Validate", name, n)
		}
	}
}

// FuzzValidate decodes arbitrary input and validates it against schemas of
// the spec: it must never panic, must agree with kin-openapi on validity
// and must report the same error every time.
func FuzzValidate(f *testing.F) {
	f.Add([]byte(actionJSON))
	f.Add([]byte(`{"type":"finish","answer":"x"}`))
	f.Add([]byte(`{"type":"tool_call","tool_name":"","arguments":[],"extra":1}`))
	f.Add([]byte(`{"type":"observation"}`))
	f.Add([]byte(`[{"type":"finish"}]`))
	f.Add([]byte(`{"task":{"prompt":"p"},"model":{"provider":"openai","model":"m","temperature":2}}`))
	names := []string{"Action", "HistoryItem", "CreateRunRequest"}
	var validators []*schema.Validator
	for _, name := range names {
		validators = append(validators, mustCompile(f, name))
	}
	doc := spec.MustLoad()
	f.Fuzz(func(t *testing.T, data []byte) {
		value, err := schema.Decode(data)
		if err != nil {
			return
		}
		for i, v := range validators {
			err := v.Validate(value)
			// kin-openapi must agree on validity.
			kinErr := doc.Components.Schemas[names[i]].Value.VisitJSON(value, openapi3.MultiErrors())
			if (err == nil) != (kinErr == nil) {
				t.Fatalf("%s: Validate = %v, kin-openapi = %v", names[i], err, kinErr)
			}
			if err == nil {
				continue
			}
			var e *schema.Error
			if !errors.As(err, &e) || e.Reason == "" || (e.Pointer != "" && e.Pointer[0] != '/') {
				t.Fatalf("bad error %#v", err)
			}
			// The same value must give the same error every time.
			if again := v.Validate(value); again.Error() != err.Error() {
				t.Fatalf("nondeterministic: %v then %v", err, again)
			}
		}
	})
}

// TestOpenAPI31Forms covers the OpenAPI 3.1 spellings that Compile also
// accepts: boolean schemas, type arrays with "null" and numeric exclusive
// bounds.
func TestOpenAPI31Forms(t *testing.T) {
	yes, no := true, false
	lo, hi := 0.0, 10.0
	tests := []struct {
		schema *openapi3.Schema
		value  any
		want   string
	}{
		{&openapi3.Schema{Always: &yes}, "SECRET", ""},
		{&openapi3.Schema{Always: &yes}, nil, ""},
		{&openapi3.Schema{Always: &no}, "SECRET", "value: is not allowed"},
		{&openapi3.Schema{Type: &openapi3.Types{"string", "null"}}, nil, ""},
		{&openapi3.Schema{Type: &openapi3.Types{"string", "null"}}, "x", ""},
		{&openapi3.Schema{Type: &openapi3.Types{"string", "integer"}}, 1.5, "value: must be a string or an integer"},
		{&openapi3.Schema{ExclusiveMin: openapi3.ExclusiveBound{Value: &lo}}, 0.0, "value: must be greater than 0"},
		{&openapi3.Schema{ExclusiveMax: openapi3.ExclusiveBound{Value: &hi}}, 9.5, ""},
		{&openapi3.Schema{ExclusiveMax: openapi3.ExclusiveBound{Value: &hi}}, 10.0, "value: must be less than 10"},
	}
	for i, tt := range tests {
		v, err := schema.Compile(tt.schema)
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		if got := errString(v.Validate(tt.value)); got != tt.want {
			t.Errorf("%d: got %q, want %q", i, got, tt.want)
		}
	}
	for _, s := range []*openapi3.Schema{
		{Type: &openapi3.Types{"strin"}},
		{Const: "x"},
		{If: &openapi3.SchemaRef{Value: &openapi3.Schema{}}},
		{PrefixItems: openapi3.SchemaRefs{{Value: &openapi3.Schema{}}}},
		{PatternProperties: openapi3.Schemas{"^x": {Value: &openapi3.Schema{}}}},
		{UnevaluatedProperties: openapi3.BoolSchema{Has: &no}},
		{Items: &openapi3.SchemaRef{Ref: "#/nowhere"}},
	} {
		if _, err := schema.Compile(s); err == nil {
			t.Errorf("Compile(%+v) succeeded", s)
		}
	}
}
