package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// compileRaw compiles a raw schema as a tool's input schema.
func compileRaw(t *testing.T, schema string) (*validator, error) {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(schema), &v); err != nil {
		t.Fatal(err)
	}
	vd, _, err := compile("ext__t", "input", v)
	return vd, err
}

// A pattern is one check to the schema's cost, but Go's regexp matches
// in time proportional to the pattern's program times the string: a
// 60 KB pattern of 30,000 optional characters took 8 s to match one
// 20 KB string, and the validation cannot be interrupted. Such a pattern
// is refused when the tool is compiled.
func TestHugePatternRefused(t *testing.T) {
	t.Parallel()
	pat := "^(?:" + strings.Repeat(".?", 30000) + ")$"
	for name, schema := range map[string]any{
		"pattern": map[string]any{"type": "object", "properties": map[string]any{
			"s": map[string]any{"type": "string", "pattern": pat}}},
		"patternProperties": map[string]any{"type": "object", "patternProperties": map[string]any{
			pat: map[string]any{}}},
		"propertyNames": map[string]any{"type": "object", "propertyNames": map[string]any{"pattern": pat}},
	} {
		b, _ := json.Marshal(schema)
		_, err := compileRaw(t, string(b))
		if err == nil {
			t.Errorf("%s: a %d-byte pattern compiled (err %.200v), want it refused", name, len(pat), err)
		} else if len(err.Error()) > 1000 {
			t.Errorf("%s: the refusal is %d bytes long; it must not repeat the pattern", name, len(err.Error()))
		}
	}
}

// A pattern within the bounds still costs its program's size a
// character: strings too long for the schema's patterns are refused
// before the validation starts, as values too many for its cost are.
func TestLongStringsForPatternsRefused(t *testing.T) {
	t.Parallel()
	pat := strings.Repeat("[a-z]?", 150) + "$" // 303 instructions: 3.3 s for 1 MiB
	vd, err := compileRaw(t, `{"type":"object","properties":{"s":{"type":"string","pattern":`+quoteJSON(pat)+`}}}`)
	if err != nil {
		t.Fatalf("a %d-byte pattern was refused: %v", len(pat), err)
	}
	long := map[string]any{"s": strings.Repeat("b", 4<<20)}
	if err := vd.validate(context.Background(), long); !errors.Is(err, errTooMuchWork) {
		t.Errorf("validate(4 MiB string) = %.200v, want errTooMuchWork", err)
	}
	// A key is a string matched too (propertyNames, patternProperties).
	vd, err = compileRaw(t, `{"type":"object","propertyNames":{"pattern":`+quoteJSON(pat)+`}}`)
	if err != nil {
		t.Fatal(err)
	}
	if err := vd.validate(context.Background(), map[string]any{strings.Repeat("k", 4<<20): 1}); !errors.Is(err, errTooMuchWork) {
		t.Errorf("validate(4 MiB key) = %.200v, want errTooMuchWork", err)
	}
	// Ordinary strings pass.
	if err := vd.validate(context.Background(), map[string]any{"abc": strings.Repeat("x", 100<<10)}); err != nil {
		t.Errorf("validate(ordinary value) = %v", err)
	}
}

// format "regex" is an annotation, even in a draft-07 schema: a value is
// never compiled as a pattern, so a long one costs nothing to check.
func TestFormatRegexIsAnAnnotation(t *testing.T) {
	t.Parallel()
	vd, err := compileRaw(t, `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"r":{"type":"string","format":"regex"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, pat := range []string{"^(?:" + strings.Repeat(".?", 30000) + ")$", "^a+$", "("} {
		if err := vd.validate(context.Background(), map[string]any{"r": pat}); err != nil {
			t.Errorf("format regex refused a %d-byte value: %v", len(pat), err)
		}
	}
	if err := vd.validate(context.Background(), map[string]any{"r": 7.0}); err == nil {
		t.Error("a number passed as a string")
	}
}

// An enum compares a place with each of its members: the cost counts
// them, so that 8,000 numbers checked against an 8,000-member enum
// (64 million comparisons through big.Rat) are refused, not run.
func TestEnumCountsItsMembers(t *testing.T) {
	t.Parallel()
	members := make([]string, 8000)
	for i := range members {
		members[i] = itoa(i)
	}
	vd, err := compileRaw(t, `{"type":"object","properties":{"a":{"type":"array","items":{"enum":[`+strings.Join(members, ",")+`]}}}}`)
	if err != nil {
		t.Fatal(err)
	}
	if vd.cost < 8000 {
		t.Errorf("cost of an 8000-member enum = %d, want at least 8000", vd.cost)
	}
	items := make([]any, 8000)
	for i := range items {
		items[i] = float64(-1 - i)
	}
	if err := vd.validate(context.Background(), map[string]any{"a": items}); !errors.Is(err, errTooMuchWork) {
		t.Errorf("validate(8000 items against 8000 members) = %T, want errTooMuchWork", err) // its Error() lists the enum 8000 times
	}
}

func quoteJSON(s string) string { b, _ := json.Marshal(s); return string(b) }

// required, properties and dependentRequired are walked whole at every
// place checked against them, and a failed required lists every missing
// name in its error: 3,000 required names checked at 20,000 empty
// objects are 60 million names in errors. The cost counts the names.
func TestRequiredCountsItsNames(t *testing.T) {
	t.Parallel()
	names := make([]string, 3000)
	for i := range names {
		names[i] = quoteJSON("p" + itoa(i))
	}
	vd, err := compileRaw(t, `{"type":"object","properties":{"a":{"type":"array","items":{"type":"object","required":[`+strings.Join(names, ",")+`]}}}}`)
	if err != nil {
		t.Fatal(err)
	}
	if vd.cost < 3000 {
		t.Errorf("cost of 3000 required names = %d, want at least 3000", vd.cost)
	}
	items := make([]any, 20000)
	for i := range items {
		items[i] = map[string]any{}
	}
	if err := vd.validate(context.Background(), map[string]any{"a": items}); !errors.Is(err, errTooMuchWork) {
		t.Errorf("validate(20000 objects against 3000 required names) = %T, want errTooMuchWork", err) // its Error() would be 500 MB
	}
}

// Every string and key costs its bytes and one step: many empty keys are
// not free to match.
func TestStringBytes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		v    any
		want int
	}{
		{"abc", 4},
		{map[string]any{"": ""}, 2},
		{[]any{"", 1.0, map[string]any{"ab": nil}}, 4},
	} {
		if got := measure(tc.v, unlimited).bytes; got != tc.want {
			t.Errorf("measure(%v).bytes = %d, want %d", tc.v, got, tc.want)
		}
	}
}

// FuzzCompilePattern: a server's pattern is accepted only within the
// bounds, and compiling one never panics.
func FuzzCompilePattern(f *testing.F) {
	for _, s := range []string{`^[a-z]+$`, `(?:.?){500}`, `\p{L}+`, `(a|b)*c{2,5}`, `[`, strings.Repeat("x?", 600)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		insts, err := compilePattern(s)
		if err != nil {
			return
		}
		if len(s) > MaxPatternBytes || insts > MaxPatternInsts || insts < 1 {
			t.Fatalf("accepted %d bytes compiling to %d instructions", len(s), insts)
		}
	})
}

// An invalid pattern within the size cap is refused naming where, never
// quoting it: Go's syntax errors quote the offending text (here 3 KB of
// the server's pattern, an escape sequence included).
func TestInvalidPatternNotEchoed(t *testing.T) {
	t.Parallel()
	pat := "(\x1b]52;c;" + strings.Repeat("a", 3000)
	b, _ := json.Marshal(map[string]any{"type": "object", "properties": map[string]any{
		"s": map[string]any{"type": "string", "pattern": pat}}})
	_, err := compileRaw(t, string(b))
	if err == nil {
		t.Fatal("an invalid pattern compiled")
	}
	if len(err.Error()) > 500 || strings.Contains(err.Error(), "aaaa") || strings.Contains(err.Error(), "\x1b") {
		t.Fatalf("the refusal repeats the pattern (%d bytes): %.200q", len(err.Error()), err)
	}
	if !strings.Contains(err.Error(), "/properties/s/pattern") {
		t.Errorf("the refusal does not name the pattern's place: %q", err)
	}
	// The check itself names the problem by its code.
	if _, err := compilePattern(pat); err == nil || len(err.Error()) > 100 || !strings.Contains(err.Error(), "missing closing )") {
		t.Errorf("compilePattern = %.200q, want the syntax error's code alone", err)
	}
}
