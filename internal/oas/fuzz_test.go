package oas_test

import (
	"os"
	"testing"

	"github.com/specloop/specloop/internal/oas"
)

// FuzzParse: Parse never panics, and what it refuses is an *oas.Error. The
// seeds are small (not the spec) so that the fuzzer mutates them quickly.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"testdata/conversions.yaml", "testdata/openapi31.yaml"} {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(doc(`{$ref: "#/components/schemas/Echo"}`, "    A: &a {type: object, properties: {b: *a}}\n")))
	f.Add([]byte(`{"openapi": "3.0.0", "paths": {"/a": {"get": {"responses": {"200": {"$ref": "#/x"}}}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := oas.Parse(data)
		if err != nil {
			if _, ok := err.(*oas.Error); !ok {
				t.Fatalf("%T %v is not an *oas.Error", err, err)
			}
			return
		}
		if d == nil {
			t.Fatal("nil document without an error")
		}
	})
}
