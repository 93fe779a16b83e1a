package schema_test

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
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
}

func compile(t *testing.T, s *openapi3.Schema, dir schema.Direction) *schema.Validator {
	t.Helper()
	v, err := schema.CompileFor(s, dir)
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
// validator, now decided by kin-openapi.
func TestValidatorDefects(t *testing.T) {
	one := 1.0
	tenth := 0.1
	tests := []struct {
		name   string
		schema *openapi3.Schema
		in     string
		ok     bool
	}{
		{"type null refuses a string", &openapi3.Schema{Type: &openapi3.Types{openapi3.TypeNull}}, `"x"`, false},
		{"type null refuses an object", &openapi3.Schema{Type: &openapi3.Types{openapi3.TypeNull}}, `{}`, false},
		{"type null accepts null", &openapi3.Schema{Type: &openapi3.Types{openapi3.TypeNull}}, `null`, true},
		{"date-time leap second", openapi3.NewDateTimeSchema(), `"2016-12-31T23:59:60Z"`, true},
		{"date-time offset +24:00", openapi3.NewDateTimeSchema(), `"2016-12-31T23:00:00+24:00"`, false},
		{"date-time without offset", openapi3.NewDateTimeSchema(), `"2016-12-31T23:00:00"`, false},
		{"date-time lower-case t", openapi3.NewDateTimeSchema(), `"2016-12-31t23:00:00Z"`, false},
		{"multipleOf 0.1 of 0.3", &openapi3.Schema{Type: &openapi3.Types{"number"}, MultipleOf: &tenth}, `0.3`, true},
		{"multipleOf 1 of 1e-10 (no absolute tolerance)", &openapi3.Schema{Type: &openapi3.Types{"number"}, MultipleOf: &one}, `1.0000000001`, false},
		{"uniqueItems 0 and -0 (short)", &openapi3.Schema{Type: &openapi3.Types{"array"}, UniqueItems: true}, `[0,-0]`, false},
		{"uniqueItems 0 and -0 (long)", &openapi3.Schema{Type: &openapi3.Types{"array"}, UniqueItems: true}, `[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,0,-0]`, false},
		{"integer written 1.0", openapi3.NewIntegerSchema(), `1.0`, true},
		{"integer written 1e2", openapi3.NewIntegerSchema(), `1e2`, true},
		{"integer written 1.5", openapi3.NewIntegerSchema(), `1.5`, false},
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
// response may not carry a writeOnly one.
func TestReadOnlyWriteOnly(t *testing.T) {
	s := openapi3.NewObjectSchema().
		WithProperty("id", &openapi3.Schema{Type: &openapi3.Types{"string"}, ReadOnly: true}).
		WithProperty("secret", &openapi3.Schema{Type: &openapi3.Types{"string"}, WriteOnly: true})
	for _, tt := range []struct {
		dir  schema.Direction
		in   string
		ok   bool
		want string
	}{
		{schema.Request, `{"secret":"s"}`, true, ""},
		{schema.Request, `{"id":"i"}`, false, `field "/id": is read-only`},
		{schema.Response, `{"id":"i"}`, true, ""},
		{schema.Response, `{"secret":"s"}`, false, `field "/secret": is write-only`},
	} {
		err := compile(t, s, tt.dir).Validate(decode(t, tt.in))
		if (err == nil) != tt.ok || err != nil && !strings.Contains(err.Error(), tt.want) {
			t.Errorf("direction %d, %s: %v, want ok=%v %q", tt.dir, tt.in, err, tt.ok, tt.want)
		}
	}
}

// TestErrorsNameTheField: messages in the project's style, with the
// pointer of the field and never the value.
func TestErrorsNameTheField(t *testing.T) {
	max := uint64(5)
	s := openapi3.NewObjectSchema().
		WithProperty("op", openapi3.NewStringSchema().WithEnum("add", "subtract")).
		WithProperty("n", openapi3.NewIntegerSchema().WithMin(1)).
		WithProperty("name", &openapi3.Schema{Type: &openapi3.Types{"string"}, MaxLength: &max}).
		WithProperty("list", openapi3.NewArraySchema().WithItems(openapi3.NewStringSchema())).
		WithRequired([]string{"op"})
	s.AdditionalProperties = openapi3.AdditionalProperties{Has: openapi3.Ptr(false)}
	v := compile(t, s, schema.Request)
	tests := []struct{ in, want string }{
		{`{}`, `field "/op": is required`},
		{`{"op":"SECRET"}`, `field "/op": must be one of add, subtract`},
		{`{"op":"add","n":0}`, `field "/n": must be at least 1`},
		{`{"op":"add","n":"SECRET"}`, `field "/n": must be an integer`},
		{`{"op":"add","name":"SECRET-LONG"}`, `field "/name": must be at most 5 characters long`},
		{`{"op":"add","list":["a",7]}`, `field "/list/1": must be a string`},
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
	}
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
