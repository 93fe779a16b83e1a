package schema_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/specloop/specloop/internal/schema"
)

// FuzzAppendString: AppendString writes exactly what encoding/json writes
// with HTML escaping off, for any string, valid UTF-8 or not.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "\"\\/", "\x00\x01\b\f\n\r\t\x1f\x7f", "<>&", "\u2028\u2029", "é€𝄞", "\xff\xfe", "a\xc3", "\xed\xa0\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		got := schema.AppendString(nil, s)
		if !bytes.Equal(got, bytes.TrimSuffix(want.Bytes(), []byte("\n"))) {
			t.Fatalf("AppendString(%q) = %s, want %s", s, got, want.Bytes())
		}
	})
}
