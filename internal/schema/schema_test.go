package schema_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/specloop/specloop/internal/schema"
)

// TestDecodeRejects: what encoding/json lets through (or reports with the
// value in the text) is an error naming where, never quoting the input.
func TestDecodeRejects(t *testing.T) {
	deep := strings.Repeat("[", schema.MaxDepth+1) + strings.Repeat("]", schema.MaxDepth+1)
	tests := []struct {
		name, in, msg, ptr string
	}{
		{"duplicate key", `{"path":"SECRET","path":"b"}`, "duplicate key", "/path"},
		{"nested duplicate key", `{"a":[{"k":1,"k":2}]}`, "duplicate key", "/a/0/k"},
		{"invalid UTF-8", "{\"path\":\"SECRET\xff\"}", "invalid UTF-8", "/path"},
		{"escaped lone surrogate", `{"path":"SECRET\ud800"}`, "invalid UTF-8", "/path"},
		{"trailing data", `{"path":"a"} SECRET`, "data after the top-level value", ""},
		{"second value", `{"path":"a"}{}`, "data after the top-level value", ""},
		{"truncated", `{"path":"SECRET`, "unexpected end of input", "/path"},
		{"not JSON", `SECRET`, "invalid character", ""},
		{"number out of range", `{"n":1e400}`, "number out of range", "/n"},
		{"too deep", deep, "nested deeper than 512", "/0/0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := schema.Decode([]byte(tt.in))
			var se *schema.SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("error %v is not a *SyntaxError", err)
			}
			if !strings.Contains(se.Msg, tt.msg) || !strings.HasPrefix(se.Pointer, tt.ptr) {
				t.Fatalf("got %q at %q, want %q at %q", se.Msg, se.Pointer, tt.msg, tt.ptr)
			}
			if strings.Contains(err.Error(), "SECRET") {
				t.Fatalf("error %q quotes the input", err)
			}
		})
	}
}

func TestDecodeAccepts(t *testing.T) {
	v, err := schema.Decode([]byte(" {\"a\":[1,2.5,\"é\",true,null,{}]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	a := v.(map[string]any)["a"].([]any)
	if a[0] != 1.0 || a[1] != 2.5 || a[2] != "é" || a[3] != true || a[4] != nil {
		t.Fatalf("decoded %#v", a)
	}
	if _, err := schema.Decode([]byte(strings.Repeat("[", schema.MaxDepth) + strings.Repeat("]", schema.MaxDepth))); err != nil {
		t.Fatalf("nesting of exactly MaxDepth: %v", err)
	}
	// A negative zero is zero wherever it is: in an object, an object in
	// an object, an array in an object.
	v, err = schema.Decode([]byte(`{"z":-0,"n":-1.5,"o":{"z":-0.0},"a":[-0]}`))
	if err != nil {
		t.Fatal(err)
	}
	m := v.(map[string]any)
	for name, z := range map[string]any{"/z": m["z"], "/o/z": m["o"].(map[string]any)["z"], "/a/0": m["a"].([]any)[0]} {
		if f, ok := z.(float64); !ok || f != 0 || math.Signbit(f) {
			t.Errorf("%s decoded as %#v, want 0", name, z)
		}
	}
	if m["n"] != -1.5 {
		t.Errorf("/n decoded as %#v", m["n"])
	}
}

func compile(t *testing.T, s string, dir schema.Direction) *schema.Validator {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	v, err := schema.Compile(m, dir)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func decode(t *testing.T, text string) any {
	t.Helper()
	v, err := schema.Decode([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestValidatorDefects: the cases issue 11 found in the hand-written
// validator, and the formats kin-openapi enforced, which the spec's
// date-times rely on.
func TestValidatorDefects(t *testing.T) {
	const dateTime = `{"type":"string","format":"date-time"}`
	tests := []struct {
		name   string
		schema string
		in     string
		ok     bool
	}{
		{"type null refuses a string", `{"type":"null"}`, `"x"`, false},
		{"type null refuses an object", `{"type":"null"}`, `{}`, false},
		{"type null accepts null", `{"type":"null"}`, `null`, true},
		{"date-time", dateTime, `"2026-12-02T03:04:05.123+01:00"`, true},
		{"date-time leap second", dateTime, `"2016-12-31T23:59:60Z"`, true},
		{"date-time offset +24:00", dateTime, `"2016-12-31T23:00:00+24:00"`, false},
		{"date-time without offset", dateTime, `"2016-12-31T23:00:00"`, false},
		{"date-time lower-case t", dateTime, `"2016-12-31t23:00:00Z"`, false},
		{"date-time February 30", dateTime, `"2016-02-30T23:00:00Z"`, false},
		{"date-time February 29 of a leap year", dateTime, `"2016-02-29T23:00:00Z"`, true},
		{"date-time February 29 of 1900", dateTime, `"1900-02-29T23:00:00Z"`, false},
		{"date-time February 29 of 2000", dateTime, `"2000-02-29T23:00:00Z"`, true},
		{"date-time April 31", dateTime, `"2016-04-31T23:00:00Z"`, false},
		{"date-time with two types", `{"type":["string","integer"],"format":"date-time"}`, `"x"`, false},
		{"date-time is for strings only", `{"type":["string","integer"],"format":"date-time"}`, `7`, true},
		{"date", `{"type":"string","format":"date"}`, `"2016-12-31"`, true},
		{"date with a time", `{"type":"string","format":"date"}`, `"2016-12-31T00:00:00Z"`, false},
		{"int32 range", `{"type":"integer","format":"int32"}`, `2147483648`, false},
		{"int64 range", `{"type":"integer","format":"int64"}`, `9223372036854775808`, false},
		{"int64 in range", `{"type":"integer","format":"int64"}`, `-9223372036854775808`, true},
		{"an unknown format is an annotation", `{"type":"string","format":"uuid"}`, `"x"`, true},
		// google/jsonschema-go divides in float64, so 0.3 is not a multiple
		// of 0.1 (kin-openapi said it was); the spec has no multipleOf.
		{"multipleOf 0.1 of 0.3", `{"type":"number","multipleOf":0.1}`, `0.3`, false},
		{"multipleOf 0.5 of 1.5", `{"type":"number","multipleOf":0.5}`, `1.5`, true},
		{"multipleOf 1 of 1e-10 (no absolute tolerance)", `{"type":"number","multipleOf":1}`, `1.0000000001`, false},
		{"uniqueItems 0 and -0 (short)", `{"type":"array","uniqueItems":true}`, `[0,-0]`, false},
		{"uniqueItems 0 and -0 (long)", `{"type":"array","uniqueItems":true}`, `[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,0,-0]`, false},
		{"integer written 1.0", `{"type":"integer"}`, `1.0`, true},
		{"integer written 1e2", `{"type":"integer"}`, `1e2`, true},
		{"integer written 1.5", `{"type":"integer"}`, `1.5`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := compile(t, tt.schema, schema.Request).Validate(decode(t, tt.in))
			if (err == nil) != tt.ok {
				t.Fatalf("Validate(%s) = %v, want ok=%v", tt.in, err, tt.ok)
			}
		})
	}
}

// TestReadOnlyWriteOnly: a request may not set a readOnly property, a
// response may not carry a writeOnly one, and neither is required where
// it is barred.
func TestReadOnlyWriteOnly(t *testing.T) {
	const s = `{"type":"object","required":["id","secret"],"properties":{
		"id":{"type":"string","readOnly":true},
		"secret":{"type":"string","writeOnly":true}}}`
	for _, tt := range []struct {
		dir  schema.Direction
		in   string
		ok   bool
		want string
	}{
		{schema.Request, `{"secret":"s"}`, true, ""},
		{schema.Request, `{"id":"i","secret":"s"}`, false, `field "/id": is read-only and not allowed in a request`},
		{schema.Request, `{}`, false, `field "/secret": is required`},
		{schema.Response, `{"id":"i"}`, true, ""},
		{schema.Response, `{"id":"i","secret":"s"}`, false, `field "/secret": is write-only and not allowed in a response`},
		{schema.Neither, `{"id":"i","secret":"s"}`, true, ""},
		{schema.Neither, `{"id":"i"}`, false, `field "/secret": is required`},
	} {
		err := compile(t, s, tt.dir).Validate(decode(t, tt.in))
		if (err == nil) != tt.ok || err != nil && err.Error() != tt.want {
			t.Errorf("direction %d, %s: %v, want ok=%v %q", tt.dir, tt.in, err, tt.ok, tt.want)
		}
	}
}

// TestErrorsNameTheField: messages in the project's style, with the
// pointer of the field and never the value.
func TestErrorsNameTheField(t *testing.T) {
	v := compile(t, `{"type":"object","additionalProperties":false,"required":["op"],"properties":{
		"op":{"type":"string","enum":["add","subtract"]},
		"n":{"type":"integer","minimum":1},
		"r":{"type":"number","exclusiveMaximum":2.5},
		"name":{"type":"string","maxLength":5},
		"id":{"type":"string","pattern":"^[a-z]+$"},
		"at":{"type":"string","format":"date-time"},
		"maybe":{"type":["integer","null"]},
		"list":{"type":"array","items":{"type":"string"},"maxItems":3},
		"env":{"type":"object","additionalProperties":{"type":"string"}},
		"pair":{"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}]}}}`, schema.Request)
	tests := []struct{ in, want string }{
		{`{}`, `field "/op": is required`},
		{`{"op":null}`, `field "/op": is required and must not be null`},
		{`{"op":"add","n":null}`, `field "/n": must be an integer`},
		{`{"op":"SECRET"}`, `field "/op": must be one of add, subtract`},
		{`{"op":"add","n":0}`, `field "/n": must be at least 1`},
		{`{"op":"add","n":"SECRET"}`, `field "/n": must be an integer`},
		{`{"op":"add","r":2.5}`, `field "/r": must be less than 2.5`},
		{`{"op":"add","name":"SECRET-LONG"}`, `field "/name": must be at most 5 characters long`},
		{`{"op":"add","id":"SECRET!"}`, `field "/id": must match the pattern "^[a-z]+$"`},
		{`{"op":"add","at":"SECRET"}`, `field "/at": must be a valid date-time`},
		{`{"op":"add","maybe":"SECRET"}`, `field "/maybe": must be an integer or null`},
		{`{"op":"add","list":["a",7]}`, `field "/list/1": must be a string`},
		{`{"op":"add","list":["a","b","c","d"]}`, `field "/list": must have at most 3 items`},
		{`{"op":"add","env":{"KEY":7}}`, `field "/env/KEY": must be a string`},
		{`{"op":"add","pair":["a","SECRET"]}`, `field "/pair/1": must be an integer`},
		{`{"op":"add","extra":"SECRET"}`, `field "/extra": is not allowed`},
		{`"SECRET"`, `value: must be an object`},
	}
	for _, tt := range tests {
		err := v.Validate(decode(t, tt.in))
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s: got %v, want %q", tt.in, err, tt.want)
		}
		var se *schema.Error
		if err != nil && !errors.As(err, &se) {
			t.Errorf("%s: %T is not a *schema.Error", tt.in, err)
		}
		if err != nil && strings.Contains(err.Error(), "SECRET") {
			t.Errorf("%s: error %q quotes the value", tt.in, err)
		}
		if se != nil && se.Unknown != strings.Contains(tt.want, "extra") {
			t.Errorf("%s: Unknown = %v", tt.in, se.Unknown)
		}
		if se != nil && se.Unknown && strings.Join(se.Allowed, ",") != "at,env,id,list,maybe,n,name,op,pair,r" {
			t.Errorf("%s: Allowed = %v", tt.in, se.Allowed)
		}
	}
}

// TestOneOf: a oneOf told apart by a property (the spec's discriminator,
// or a property every branch pins) names that property or goes into the
// chosen branch; others say what is wrong with the whole value.
func TestOneOf(t *testing.T) {
	const branches = `[
		{"type":"object","required":["type","name"],"properties":{"type":{"type":"string","enum":["tool_call"]},"name":{"type":"string"}}},
		{"type":"object","required":["type"],"properties":{"type":{"type":"string","enum":["finish"]},"message":{"type":"string"}}}]`
	for _, s := range []string{
		`{"oneOf":` + branches + `,"discriminator":{"propertyName":"type"}}`,
		`{"oneOf":` + branches + `}`,
	} {
		v := compile(t, s, schema.Neither)
		for _, tt := range []struct{ in, want string }{
			{`{"type":"tool_call","name":"x"}`, ""},
			{`{"name":"SECRET"}`, `field "/type": is required`},
			{`{"type":7}`, `field "/type": must be a string`},
			{`{"type":"SECRET"}`, `field "/type": must be one of finish, tool_call`},
			{`{"type":"tool_call"}`, `field "/name": is required`},
			{`{"type":"finish","message":7}`, `field "/message": must be a string`},
			{`["SECRET"]`, `value: must be an object`},
		} {
			err := v.Validate(decode(t, tt.in))
			if got := fmt.Sprint(err); tt.want == "" && err != nil || tt.want != "" && got != tt.want {
				t.Errorf("%s: %s: got %v, want %q", s[:30], tt.in, err, tt.want)
			}
		}
	}
	v := compile(t, `{"anyOf":[{"type":"string","maxLength":2},{"type":"null"}]}`, schema.Request)
	if err := v.Validate("SECRET"); fmt.Sprint(err) != "value: must be at most 2 characters long" {
		t.Errorf("nullable string: %v", err)
	}
	v = compile(t, `{"oneOf":[{"type":"string"},{"type":"integer"}]}`, schema.Request)
	if err := v.Validate(true); fmt.Sprint(err) != "value: must match exactly one of its schemas" {
		t.Errorf("oneOf: %v", err)
	}
	// An empty oneOf (an MCP server may send one) matches nothing; it
	// panicked Compile once.
	if v, err := schema.Compile(map[string]any{"oneOf": []any{}}, schema.Request); err == nil {
		if err := v.Validate("x"); err == nil {
			t.Error("an empty oneOf accepted a value")
		}
	}
}

// TestCompileRefusesBadSchemas: a schema the library cannot use is an
// error at Compile, not at Validate.
func TestCompileRefusesBadSchemas(t *testing.T) {
	for _, s := range []map[string]any{
		nil,
		{"type": "string", "pattern": "("},
		{"$ref": "https://example.com/remote.json"},
		{"type": 7},
		{"type": "nope"},
		{"properties": map[string]any{"a": map[string]any{"type": []any{"string", "text"}}}},
		{"$ref": "#"},
		{"$defs": map[string]any{"a": map[string]any{"anyOf": []any{map[string]any{"$ref": "#/$defs/b"}}}, "b": map[string]any{"allOf": []any{map[string]any{"$ref": "#/$defs/a"}}}}, "$ref": "#/$defs/a"},
	} {
		if _, err := schema.Compile(s, schema.Request); err == nil {
			t.Errorf("Compile(%v) succeeded", s)
		}
	}
	// A reference that descends into the value is recursion, not a loop.
	v, err := schema.Compile(map[string]any{"properties": map[string]any{"next": map[string]any{"$ref": "#"}, "n": map[string]any{"type": "integer"}}}, schema.Request)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Validate(map[string]any{"next": map[string]any{"next": map[string]any{"n": "x"}}}); fmt.Sprint(err) != `field "/next/next/n": must be an integer` {
		t.Errorf("recursive schema: %v", err)
	}
	v, err = schema.Compile(map[string]any{"$schema": "http://json-schema.org/draft-04/schema#", "type": "string"}, schema.Request)
	if err != nil || v.Validate("x") != nil || v.Validate(1.0) == nil {
		t.Errorf("an unknown $schema: %v", err)
	}
}

// FuzzValidate: for any schema that compiles and any value, Validate
// returns nil or an *Error that quotes no string of the value (other than
// one the schema or a key holds too); it never panics.
//
//	go test -run '^$' -fuzz FuzzValidate ./internal/schema
func FuzzValidate(f *testing.F) {
	f.Add(`{"type":"object","required":["a"],"properties":{"a":{"type":"string","format":"date-time"}},"additionalProperties":false}`, `{"a":"x","b":1}`)
	f.Add(`{"oneOf":[{"properties":{"t":{"const":"a"}}},{"properties":{"t":{"const":"b"}}}]}`, `{"t":"c"}`)
	f.Add(`{"$defs":{"n":{"type":"integer"}},"items":{"$ref":"#/$defs/n"},"prefixItems":[{"type":"string"}]}`, `["a","b"]`)
	f.Add(`{"patternProperties":{"^x":{"type":"null"}},"anyOf":[{"minProperties":2},{"not":{}}]}`, `{"xa":1}`)
	f.Add(`{"if":{"type":"string"},"then":{"minLength":3},"else":{"type":"array","uniqueItems":true,"contains":{"type":"null"}}}`, `[1,1]`)
	f.Fuzz(func(t *testing.T, s, in string) {
		var m map[string]any
		if json.Unmarshal([]byte(s), &m) != nil || len(s) > 4096 {
			return
		}
		value, err := schema.Decode([]byte(in))
		if err != nil {
			return
		}
		v, err := schema.Compile(m, schema.Request)
		if err != nil {
			return
		}
		err = v.Validate(value)
		var se *schema.Error
		if err != nil && !errors.As(err, &se) {
			t.Fatalf("error %T is not a *schema.Error", err)
		}
		if err == nil {
			return
		}
		strs, keys := stringsOf(value)
		for _, x := range strs {
			if len(x) >= 8 && !strings.Contains(s, x) && !slices.ContainsFunc(keys, func(k string) bool { return strings.Contains(k, x) }) && strings.Contains(err.Error(), x) {
				t.Fatalf("error %q quotes the value's %q", err, x)
			}
		}
	})
}

// stringsOf returns the strings and the object keys in a decoded value.
func stringsOf(v any) (strs, keys []string) {
	switch v := v.(type) {
	case string:
		strs = append(strs, v)
	case []any:
		for _, x := range v {
			s, k := stringsOf(x)
			strs, keys = append(strs, s...), append(keys, k...)
		}
	case map[string]any:
		for key, x := range v {
			s, k := stringsOf(x)
			strs, keys = append(strs, s...), append(keys, append(k, key)...)
		}
	}
	return strs, keys
}

// TestBindOutOfRange: a number the schema allows but the Go type cannot
// hold is an *Error naming the field; integers written 1.0 or 1e2 bind.
func TestBindOutOfRange(t *testing.T) {
	type input struct {
		N     int     `json:"n"`
		Small int32   `json:"small"`
		F     float64 `json:"f"`
	}
	for _, tt := range []struct{ in, ptr string }{
		{`{"n":1e19}`, "/n"},
		{`{"n":9223372036854775807}`, "/n"},
		{`{"n":-1e300}`, "/n"},
		{`{"small":2147483648}`, "/small"},
	} {
		err := schema.Bind(decode(t, tt.in), new(input))
		var se *schema.Error
		if !errors.As(err, &se) || se.Pointer != tt.ptr {
			t.Errorf("%s: got %v, want an *Error at %s", tt.in, err, tt.ptr)
		}
	}
	var in input
	if err := schema.Bind(decode(t, `{"n":1e2,"small":1.0,"f":1e300}`), &in); err != nil || in.N != 100 || in.Small != 1 || in.F != 1e300 {
		t.Fatalf("got %+v, %v", in, err)
	}
	if err := schema.Bind(map[string]any{"f": math.Inf(1)}, &in); err == nil {
		t.Fatal("an infinite number bound")
	}
}

// FuzzDecode: any input is either a value that encodes back to JSON that
// decodes to the same value, or a *SyntaxError; never a panic.
//
//	go test -run '^$' -fuzz FuzzDecode ./internal/schema
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `{"path":"a"}`, `[0,-0,1e2,1.5]`, "\"\xff\"", `{"a":[{}]} x`, `"\ud800"`, `null`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := schema.Decode(data)
		if err != nil {
			var se *schema.SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("error %T is not a *SyntaxError", err)
			}
			return
		}
		text, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("a decoded value does not encode: %v", err)
		}
		again, err := schema.Decode(text)
		if err != nil {
			t.Fatalf("re-encoded %s does not decode: %v", text, err)
		}
		if diff := cmp.Diff(v, again); diff != "" {
			t.Fatalf("round trip (-first +second):\n%s", diff)
		}
	})
}

// A Go caller's string that is not UTF-8 is named by its pointer; valid
// text, numbers and nesting pass.
func TestCheckUTF8(t *testing.T) {
	ok := map[string]any{"path": "a/é.txt", "n": 1.0, "list": []any{"x", map[string]any{"k": "漢字"}}}
	if err := schema.CheckUTF8(ok); err != nil {
		t.Fatalf("valid value: %v", err)
	}
	bad := map[string]any{"list": []any{"x", map[string]any{"k": "a\x80"}}}
	err := schema.CheckUTF8(bad)
	var se *schema.Error
	if !errors.As(err, &se) || se.Pointer != "/list/1/k" || strings.Contains(err.Error(), "\x80") {
		t.Fatalf("CheckUTF8 = %v, want an *Error at /list/1/k without the value", err)
	}
}
