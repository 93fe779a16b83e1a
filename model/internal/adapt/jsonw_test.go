package adapt

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

// stdEncode is encoding/json's output without HTML escaping and newline.
func stdEncode(t *testing.T, v any) ([]byte, error) {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "quote \" backslash \\ slash /", "\n\r\t\b\f\x00\x1f\x7f", "<&>", "\u2028\u2029", "caf\xc3", "\xff\xfe", "日本語 ✓"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := stdEncode(t, s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("AppendString(%q) = %s, encoding/json gives %s", s, got, want)
		}
	})
}

func FuzzAppendFloat(f *testing.F) {
	for _, v := range []float64{0, math.Copysign(0, -1), 1, -1.5, 84, 1e-7, 1e-6, 123456789, 1e20, 1e21, 1.5e300, math.SmallestNonzeroFloat64, math.MaxFloat64} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v float64) {
		want, err := stdEncode(t, v)
		got, gotErr := AppendValue(nil, v)
		if (err != nil) != (gotErr != nil) {
			t.Fatalf("AppendValue(%v) error %v, encoding/json %v", v, gotErr, err)
		}
		if err == nil && !bytes.Equal(got, want) {
			t.Fatalf("AppendValue(%v) = %s, encoding/json gives %s", v, got, want)
		}
	})
}

// FuzzAppendValue checks decoded JSON values against encoding/json.
func FuzzAppendValue(f *testing.F) {
	for _, s := range []string{`{"left":12,"operation":"multiply","right":7}`, `[1,"a",null,true,{"b":[]}]`, `{"z":1,"a":{"y":2,"b":3}}`, `"x"`, `1e-7`, `{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if json.Unmarshal(data, &v) != nil {
			return
		}
		want, err := stdEncode(t, v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := AppendValue(nil, v)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("AppendValue = %s, %v; encoding/json gives %s", got, err, want)
		}
	})
}

func TestAppendValueOtherTypes(t *testing.T) {
	for _, v := range []any{int(7), int64(-3), []string{"a"}, map[string]int{"k": 1}, struct{ A int }{1}} {
		want, _ := stdEncode(t, v)
		got, err := AppendValue(nil, v)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("AppendValue(%#v) = %s, %v; want %s", v, got, err, want)
		}
	}
	if _, err := AppendValue(nil, math.NaN()); err == nil {
		t.Fatal("NaN must be an error")
	}
}
