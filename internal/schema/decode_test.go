package schema_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/specloop/specloop/internal/schema"
)

// maxDepth is the deepest nesting Decode accepts.
const maxDepth = 512

// agreeing are inputs on whose validity and value Decode and encoding/json
// must agree.
var agreeing = []string{
	// Valid.
	`null`, `true`, `false`, ` true `, "\t\r\n null \n",
	`0`, `-0`, `1`, `-1`, `12`, `1.5`, `-1.5`, `0.0`, `-0.0`, `1e10`, `1E+2`, `1e-2`, `2.5E-3`,
	`123456789012345`, `-123456789012345`, `1234567890123456`, `12345678901234567890`,
	`9007199254740993`, `1.7976931348623157e308`, `5e-324`, `1e-400`, `0e0`, `0.1e1`,
	`""`, `"abc"`, `"é"`, `"日本語"`, `"😀"`, `"\u00e9"`, `"\u00E9"`, `"\ud83d\ude00"`,
	`"\ud83d"`, `"\ude00"`, `"\ud83dx"`, `"\ud83d\u0041"`, `"\ud83d\ud83d\ude00"`, `"a\ude00b"`,
	`"\""`, `"\\"`, `"\/"`, `"\b\f\n\r\t"`, `"\u0000"`, `"a\u0000b"`, `"\u2028"`, "\"\x7f\"",
	`"abc\"def"`, `"é\n"`, `"\n日本"`,
	`[]`, `[ ]`, `[1]`, `[1,2,3]`, `[[],[[]]]`, `["a",{"b":null},true]`,
	`{}`, `{ }`, `{"a":1}`, ` {"a" : [ 1 , {"b":null} ] } `, `{"":""}`, `{"a":{"a":{"a":{}}}}`,
	`{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10}`,
	`{"type":"tool_call","tool_name":"calculator","arguments":{"left":12,"operation":"multiply","right":7}}`,
	`{"k\u00e9y":"v\nal"}`, `{"a":1,"A":2}`,
	// Invalid.
	``, ` `, `n`, `nul`, `nulll`, `tru`, `True`, `fals`, `falsy`, `NULL`,
	`01`, `00`, `-01`, `1.`, `.5`, `+1`, `-`, `1e`, `1e+`, `1E-`, `--1`, `0x10`, `1.e2`,
	`NaN`, `Infinity`, `-Infinity`, `1e400`, `-1e400`, `1_000`,
	`"abc`, `"`, `"\`, `"\x"`, `"\u12"`, `"\u12g4"`, `"\U0041"`, "\"a\tb\"", "\"a\nb\"", "\"\x00\"",
	`"\'"`, `'a'`, `"\ud83d\u12"`,
	`[`, `[1`, `[1,`, `[1,]`, `[,1]`, `[1 2]`, `[1,,2]`, `[1]]`, `]`,
	`{`, `{"a"`, `{"a":`, `{"a":1`, `{"a":1,`, `{"a":1,}`, `{"a" 1}`, `{a:1}`, `{"a":1}}`, `{,}`,
	`{"a":}`, `{1:2}`, `{"a":1 "b":2}`, `{"a"::1}`, `}`,
	`1 2`, `[] []`, `{} x`, `"a" "b"`, "\xef\xbb\xbf1", `/* */1`, `1 // c`, `1,`,
}

func TestDecodeAgreesWithEncodingJSON(t *testing.T) {
	for _, in := range agreeing {
		var want any
		wantErr := json.Unmarshal([]byte(in), &want)
		got, err := schema.Decode([]byte(in))
		if (err == nil) != (wantErr == nil) {
			t.Errorf("Decode(%q) error = %v, encoding/json error = %v", in, err, wantErr)
			continue
		}
		if err != nil {
			var se *schema.SyntaxError
			if !errors.As(err, &se) {
				t.Errorf("Decode(%q) error %T is not a *SyntaxError", in, err)
			}
			continue
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Decode(%q) mismatch (-encoding/json +Decode):\n%s", in, diff)
		}
	}
}

func TestDecodeNegativeZero(t *testing.T) {
	v, err := schema.Decode([]byte(`-0`))
	if err != nil {
		t.Fatal(err)
	}
	if f := v.(float64); f != 0 || !strings.HasPrefix(formatFloat(f), "-") {
		t.Errorf("Decode(-0) = %v, want negative zero", f)
	}
}

func formatFloat(f float64) string {
	b, _ := json.Marshal(f)
	return string(b)
}

// TestDecodeStricter covers inputs that encoding/json accepts and Decode
// rejects on purpose.
func TestDecodeStricter(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	tests := []struct {
		in     string
		offset int64
		msg    string
	}{
		{`{"a":1,"a":2}`, 7, "duplicate object key"},
		{`{"a":1,"\u0061":2}`, 7, "duplicate object key"},
		{`[{"x":{"SECRET":1,"b":2,"SECRET":3}}]`, 24, "duplicate object key"},
		{"\"\xff\"", 1, "invalid UTF-8 in string"},
		{"\"ab\xc3\"", 3, "invalid UTF-8 in string"},
		{"\"\xed\xa0\x80\"", 1, "invalid UTF-8 in string"}, // an encoded surrogate
		{"{\"k\xff\":1}", 3, "invalid UTF-8 in string"},
		{"\"a\\n\xff\"", 4, "invalid UTF-8 in string"},
		{deep(maxDepth + 1), maxDepth, "exceeded maximum nesting depth of 512"},
	}
	for _, tt := range tests {
		var v any
		if err := json.Unmarshal([]byte(tt.in), &v); err != nil {
			t.Errorf("encoding/json rejects %q: %v", tt.in, err)
		}
		_, err := schema.Decode([]byte(tt.in))
		var se *schema.SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Decode(%q) error = %v, want a *SyntaxError", tt.in, err)
			continue
		}
		if se.Offset != tt.offset || se.Msg != tt.msg {
			t.Errorf("Decode(%q) = offset %d %q, want offset %d %q", tt.in, se.Offset, se.Msg, tt.offset, tt.msg)
		}
		if strings.Contains(err.Error(), "SECRET") {
			t.Errorf("Decode(%q) error %q echoes a key", tt.in, err)
		}
	}
	if _, err := schema.Decode([]byte(deep(maxDepth))); err != nil {
		t.Errorf("Decode at the maximum depth: %v", err)
	}
	// Unterminated deep nesting fails fast instead of exhausting the stack.
	if _, err := schema.Decode([]byte(strings.Repeat(`{"a":[`, 100000))); err == nil {
		t.Error("Decode accepted unterminated deep nesting")
	}
}

func TestSyntaxErrorMessages(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{``, "invalid JSON at offset 0: unexpected end of input"},
		{`{"a":1`, "invalid JSON at offset 6: unexpected end of input"},
		{`{"a" 1}`, "invalid JSON at offset 5: invalid character after object key"},
		{`{"a":1]`, "invalid JSON at offset 6: invalid character ']' after object key:value pair"},
		{`[1}`, "invalid JSON at offset 2: invalid character '}' after array element"},
		{`{"password": SECRET-VALUE-123}`, "invalid JSON at offset 13: invalid character looking for beginning of value"},
		{`{"password": "SECRET-VALUE-123" x}`, "invalid JSON at offset 32: invalid character after object key:value pair"},
		{`{"password": tSECRET}`, "invalid JSON at offset 14: invalid character in literal true"},
		{`{"password": 12SECRET}`, "invalid JSON at offset 15: invalid character after object key:value pair"},
		{`{"password": -SECRET}`, "invalid JSON at offset 14: invalid character in numeric literal"},
		{`"SECRET\q"`, "invalid JSON at offset 8: invalid escape in string"},
		{`1e999`, "invalid JSON at offset 0: number out of range"},
		{"\"a\x01\"", "invalid JSON at offset 2: invalid control character in string"},
		{`[1,2] 3`, "invalid JSON at offset 6: invalid character after top-level value"},
		{`{"a":1,,}`, `invalid JSON at offset 7: invalid character ',' looking for beginning of object key string`},
	}
	for _, tt := range tests {
		_, err := schema.Decode([]byte(tt.in))
		if err == nil || err.Error() != tt.want {
			t.Errorf("Decode(%q) error = %v, want %q", tt.in, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "SECRET") {
			t.Errorf("Decode(%q) error %q echoes the input", tt.in, err)
		}
	}
}

func TestDecodeReusesNoState(t *testing.T) {
	// A failed decode must not leave members behind for the next one.
	if _, err := schema.Decode([]byte(`{"a":[1,2,{"b":3,`)); err == nil {
		t.Fatal("want an error")
	}
	got, err := schema.Decode([]byte(`{"x":[true]}`))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"x": []any{true}}, got); diff != "" {
		t.Error(diff)
	}
}

func TestDecodeLargeContainers(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{`)
	for i := range 2000 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"k`)
		b.WriteString(strings.Repeat("x", i%7))
		b.WriteString(string(rune('a' + i%26)))
		b.WriteString(formatFloat(float64(i)))
		b.WriteString(`":[`)
		b.WriteString(strings.Repeat(`1,"s\n",`, i%5))
		b.WriteString(`null]`)
	}
	b.WriteString(`}`)
	in := []byte(b.String())
	var want any
	if err := json.Unmarshal(in, &want); err != nil {
		t.Fatal(err)
	}
	got, err := schema.Decode(in)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Error(diff)
	}
}

// inspect reports whether valid JSON has an object with a repeated key, and
// how deeply it nests, using encoding/json's tokenizer.
func inspect(data []byte) (dup bool, depth int) {
	type frame struct {
		object    bool
		expectKey bool
		keys      map[string]bool
	}
	var stack []*frame
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1].object {
			stack[n-1].expectKey = true
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		tok, err := dec.Token()
		if err != nil {
			return dup, depth
		}
		if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].expectKey {
			if tok == json.Delim('}') {
				stack = stack[:n-1]
				valueDone()
				continue
			}
			k := tok.(string)
			if stack[n-1].keys[k] {
				dup = true
			}
			stack[n-1].keys[k] = true
			stack[n-1].expectKey = false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, expectKey: true, keys: map[string]bool{}})
		case json.Delim('['):
			stack = append(stack, &frame{})
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
			valueDone()
		default:
			valueDone()
		}
		depth = max(depth, len(stack))
	}
}

func FuzzDecode(f *testing.F) {
	for _, in := range agreeing {
		f.Add([]byte(in))
	}
	f.Add([]byte(`{"a":1,"a":2}`))
	f.Add([]byte("\"\xff\""))
	f.Add([]byte(strings.Repeat("[", 600) + strings.Repeat("]", 600)))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := schema.Decode(data)
		var want any
		wantErr := json.Unmarshal(data, &want)
		if err == nil {
			if wantErr != nil {
				t.Fatalf("Decode accepted what encoding/json rejects (%v)", wantErr)
			}
			// cmp is exponential in the nesting depth of []any values
			// (a fuzzed [[[[...]]]] hangs it), so it only reports.
			if !reflect.DeepEqual(want, got) {
				t.Fatalf("mismatch (-encoding/json +Decode):\n%s", cmp.Diff(want, got))
			}
			return
		}
		var se *schema.SyntaxError
		if !errors.As(err, &se) || se.Offset < 0 || se.Offset > int64(len(data)) {
			t.Fatalf("bad error %#v", err)
		}
		if wantErr != nil || !utf8.Valid(data) {
			return
		}
		if dup, depth := inspect(data); !dup && depth <= maxDepth {
			t.Fatalf("Decode rejected valid JSON without duplicate keys: %v", err)
		}
	})
}

func TestDecodeConcurrent(t *testing.T) {
	done := make(chan error)
	for i := range 8 {
		go func() {
			for range 200 {
				in := agreeing[i*7%len(agreeing)]
				if _, err := schema.Decode(actionJSON); err != nil {
					done <- err
					return
				}
				_, _ = schema.Decode([]byte(in))
			}
			done <- nil
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// TestPlainPrefix puts every byte value at every position of a word and
// compares PlainPrefix with its definition.
func TestPlainPrefix(t *testing.T) {
	plain := func(c byte) bool { return c >= 0x20 && c < 0x80 && c != '"' && c != '\\' }
	want := func(s string) int {
		n := 0
		for ; len(s)-n >= 8; n += 8 {
			for i := n; i < n+8; i++ {
				if !plain(s[i]) {
					return n
				}
			}
		}
		return n
	}
	base := []byte("abcdefghABCDEFGH01234567x")
	for pos := range 17 {
		for c := range 256 {
			b := append([]byte(nil), base...)
			b[pos] = byte(c)
			if got, w := schema.PlainPrefix(string(b)), want(string(b)); got != w {
				t.Fatalf("PlainPrefix(%q) = %d, want %d", b, got, w)
			}
		}
	}
	for _, s := range []string{"", "short", "exactly8", " ~~~~~~~", "\x1f2345678", "1234567\x7f"} {
		if got, w := schema.PlainPrefix(s), want(s); got != w {
			t.Errorf("PlainPrefix(%q) = %d, want %d", s, got, w)
		}
	}
}
