package oas_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/specloop/specloop/internal/oas"
	"github.com/specloop/specloop/spec"
)

// doc is a document with one operation whose request body's schema is
// the YAML flow mapping body, and the components.schemas lines schemas.
func doc(body, schemas string) string {
	return `openapi: 3.0.3
info: {title: t, version: "1"}
paths:
  /v1/tools/echo:
    post:
      operationId: echo
      requestBody:
        content:
          application/json:
            schema: ` + body + `
      responses:
        "200": {description: ok}
components:
  schemas:
    Echo: {type: object}
` + schemas
}

func TestParseRefuses(t *testing.T) {
	deep := strings.Repeat("[", oas.MaxDepth+2) + strings.Repeat("]", oas.MaxDepth+2)
	chain := ""
	for i := range oas.MaxSchemaDepth + 2 {
		chain += "    S" + string(rune('A'+i/26)) + string(rune('a'+i%26)) + ": {type: object, properties: {p: {$ref: \"#/components/schemas/S" + string(rune('A'+(i+1)/26)) + string(rune('a'+(i+1)%26)) + "\"}}}\n"
	}
	chain += "    S" + string(rune('A'+(oas.MaxSchemaDepth+2)/26)) + string(rune('a'+(oas.MaxSchemaDepth+2)%26)) + ": {type: string}\n"
	cases := []struct{ name, doc, at, want string }{
		{"not YAML", "{{{", "", "not YAML or JSON"},
		{"empty", "", "", "empty"},
		{"a list", "[1]", "", "not a mapping"},
		{"too large", "openapi: 3.0.3\nx: " + strings.Repeat("a", oas.MaxSize), "", "larger than"},
		{"too deep", "openapi: 3.0.3\nx: " + deep, "#/x/0/0/0", "nested deeper than"},
		{"a key twice", "openapi: 3.0.3\nopenapi: 3.0.3\n", "#/openapi", "twice"},
		{"infinity", "openapi: 3.0.3\nx: .inf\n", "#/x", "not a JSON number"},
		{"version 2", "swagger: '2.0'\n", "#/openapi", `"" is not 3.0.x`},
		{"a path without /", strings.Replace(doc("{type: object}", ""), "/v1/tools/echo", "v1", 1), "#/paths/v1", "must start with /"},
		{"a remote $ref", doc(`{$ref: "other.yaml#/X"}`, ""), "#/paths/~1v1~1tools~1echo/post/requestBody/content/application~1json/schema", "is not a local reference"},
		{"a $ref to nothing", doc(`{$ref: "#/components/schemas/Nope"}`, ""), "#/paths/~1v1~1tools~1echo/post/requestBody/content/application~1json/schema", `$ref "#/components/schemas/Nope" points to nothing`},
		{"a $ref to nothing in a component", doc(`{type: object}`, "    A: {properties: {b: {$ref: \"#/components/schemas/B\"}}}\n"), "#/components/schemas/A/properties/b", "points to nothing"},
		{"a recursive $ref", doc(`{$ref: "#/components/schemas/A"}`, "    A: {properties: {a: {$ref: \"#/components/schemas/A\"}}}\n"), "#/components/schemas/A/properties/a", "is recursive"},
		{"a schema too deep once inlined", doc(`{type: object}`, chain), "#/components/schemas/", "nested deeper than 64"},
		{"an unknown keyword", doc(`{type: object, maxLenght: 3}`, ""), "#/paths/~1v1~1tools~1echo/post/requestBody/content/application~1json/schema/maxLenght", "not a keyword"},
		{"a keyword's type", doc(`{type: string, maxLength: "3"}`, ""), "schema/maxLength", "non-negative integer"},
		{"a negative count", doc(`{type: string, maxLength: -1}`, ""), "schema/maxLength", "non-negative integer"},
		{"an unknown type", doc(`{type: strin}`, ""), "schema/type", "strin is not a type"},
		{"a type list with an unknown name", doc(`{type: [string, nil]}`, ""), "schema/type", "not a type"},
		{"a subschema that is a number", doc(`{type: object, properties: {a: 1}}`, ""), "schema/properties/a", "must be an object"},
		{"an empty oneOf", doc(`{oneOf: []}`, ""), "schema/oneOf", "non-empty list"},
		{"a bad pattern", doc(`{type: string, pattern: "["}`, ""), "schema/pattern", "invalid pattern"},
		{"required not strings", doc(`{type: object, required: [1]}`, ""), "schema/required", "a list of strings"},
		{"a parameter's place", strings.Replace(doc("{type: object}", ""), "      requestBody:", "      parameters: [{name: a, in: body}]\n      requestBody:", 1), "#/paths/~1v1~1tools~1echo/post/parameters/0/in", "is not path, query"},
		{"a parameter without a name", strings.Replace(doc("{type: object}", ""), "      requestBody:", "      parameters: [{in: query}]\n      requestBody:", 1), "#/paths/~1v1~1tools~1echo/post/parameters/0", "needs a name"},
		{"a status code", strings.Replace(doc("{type: object}", ""), `"200"`, `"20"`, 1), "#/paths/~1v1~1tools~1echo/post/responses/20", "not a status code"},
		{"two operations, one id", strings.Replace(doc("{type: object}", ""), "    post:", "    get:\n      operationId: echo\n      responses: {}\n    post:", 1), "operationId", `"echo" is also`},
		{"a $ref loop", strings.Replace(doc("{type: object}", ""), "      requestBody:", "      parameters: [{$ref: \"#/components/parameters/A\"}]\n      requestBody:", 1) + "  parameters:\n    A: {$ref: \"#/components/parameters/B\"}\n    B: {$ref: \"#/components/parameters/A\"}\n", "#/components/parameters/", "a loop"},
		{"an alias bomb", "openapi: 3.0.3\na: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\ng: [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\n", "", "more than"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := oas.Parse([]byte(tc.doc))
			var e *oas.Error
			if !errors.As(err, &e) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an *oas.Error containing %q", err, tc.want)
			}
			if !strings.Contains(oas.Pointer(e.At), tc.at) {
				t.Errorf("the error is at %s, want %s", oas.Pointer(e.At), tc.at)
			}
		})
	}
}

// TestParseReads: a small document's parts, as the package doc says
// they are read.
func TestParseReads(t *testing.T) {
	d, err := oas.Parse([]byte(doc(`{$ref: "#/components/schemas/Echo"}`, `    N:
      type: string
      nullable: true
      enum: [a]
      x-go-type: string
      example: a
    M: {type: number, minimum: 1, exclusiveMinimum: true, maximum: 2, exclusiveMaximum: false}
`)))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]any{
		"Echo": {"type": "object"},
		"N":    {"type": []any{"string", "null"}, "enum": []any{"a", nil}},
		"M":    {"type": "number", "exclusiveMinimum": 1.0, "maximum": 2.0},
	}
	if diff := cmp.Diff(want, d.Schemas); diff != "" {
		t.Errorf("schemas (-want +got):\n%s", diff)
	}
	path, method, op, ok := d.Operation("echo")
	if !ok || path.Path != "/v1/tools/echo" || method != "POST" {
		t.Fatalf("Operation(echo) = %v %q %v", path, method, ok)
	}
	if op.Request.Ref != "Echo" || *op.Responses[200].Description != "ok" {
		t.Errorf("request %+v, responses %+v", op.Request, op.Responses)
	}
	if _, _, _, ok := d.Operation("nope"); ok {
		t.Error("Operation(nope) found one")
	}
	// The inlined copies share nothing: changing one changes no other.
	op.Request.Schema["type"] = "string"
	if d.Schemas["Echo"]["type"] != "object" {
		t.Error("a body's schema shares its map with the component's")
	}
}

// BenchmarkParseSpec: reading spec/agent.yaml (kindiff.BenchmarkKinLoad is
// the same with kin-openapi).
func BenchmarkParseSpec(b *testing.B) {
	data := spec.YAML()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := oas.Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}
