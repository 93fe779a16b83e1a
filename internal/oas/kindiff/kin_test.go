package kindiff_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/go-cmp/cmp"
	"github.com/specloop/specloop/internal/oas"
	"go.yaml.in/yaml/v3"
)

// kinDocs are the documents the differential test reads: the spec, the
// tool documents of tools' tests and examples, and one that exercises
// every conversion.
func kinDocs(t *testing.T) []string {
	t.Helper()
	docs := []string{"../../../spec/agent.yaml", "../testdata/conversions.yaml", "../testdata/openapi31.yaml"}
	for _, pattern := range []string{"../../../tools/testdata/*.yaml", "../../../tools/testdata/*.json", "../../../tools/example/*/*.yaml"} {
		matches, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range matches {
			data, err := os.ReadFile(m)
			if err != nil {
				t.Fatal(err)
			}
			var head struct{ OpenAPI string }
			if yaml.Unmarshal(data, &head) == nil && head.OpenAPI != "" {
				docs = append(docs, m)
			}
		}
	}
	return docs
}

// TestAgreesWithKin: what Parse reads of a document (operations,
// parameters, bodies, responses and every schema, inlined) is what
// kin-openapi loads, but for the conversions the package documents.
func TestAgreesWithKin(t *testing.T) {
	docs := kinDocs(t)
	if len(docs) < 4 {
		t.Fatalf("only %v: the globs are wrong", docs)
	}
	for _, name := range docs {
		t.Run(filepath.Base(name), func(t *testing.T) {
			data, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			kin, err := openapi3.NewLoader().LoadFromData(data)
			if err != nil {
				t.Fatal(err)
			}
			if err := kin.Validate(context.Background(), openapi3.DisableExamplesValidation()); err != nil {
				t.Fatal(err)
			}
			doc, err := oas.Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(fromKin(kin), fromOAS(doc)); diff != "" {
				t.Errorf("kin-openapi (-) and oas (+) differ:\n%s", diff)
			}
		})
	}
}

// fromOAS is doc as plain values, comparable with fromKin's.
func fromOAS(doc *oas.Doc) map[string]any {
	out := map[string]any{"servers": doc.Servers, "schemas": map[string]any{}}
	for name, s := range doc.Schemas {
		out["schemas"].(map[string]any)[name] = normal(s)
	}
	for _, p := range doc.Paths {
		for method, op := range p.Operations {
			o := map[string]any{
				"id": op.ID, "summary": op.Summary, "description": op.Description,
				"extensions": op.Extensions, "servers": op.Servers,
			}
			var params []any
			for _, pa := range op.Parameters {
				params = append(params, map[string]any{"name": pa.Name, "in": pa.In, "required": pa.Required, "schema": normal(pa.Schema)})
			}
			o["parameters"] = params
			if op.Request != nil {
				o["request"] = map[string]any{"ref": op.Request.Ref, "schema": normal(op.Request.Schema)}
			}
			responses := map[string]any{}
			for code, r := range op.Responses {
				rr := map[string]any{"description": r.Description, "extensions": r.Extensions}
				if r.Body != nil {
					rr["body"] = map[string]any{"ref": r.Body.Ref, "schema": normal(r.Body.Schema)}
				}
				responses[strconv.Itoa(code)] = rr
			}
			o["responses"] = responses
			out[method+" "+p.Path] = o
		}
	}
	return out
}

// fromKin is kin's document as fromOAS renders oas's, its schemas
// inlined and converted as the package documents.
func fromKin(doc *openapi3.T) map[string]any {
	var servers []string
	for _, s := range doc.Servers {
		servers = append(servers, s.URL)
	}
	out := map[string]any{"servers": servers, "schemas": map[string]any{}}
	for name, s := range doc.Components.Schemas {
		out["schemas"].(map[string]any)[name] = kinSchema(s)
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			var opServers []string
			if op.Servers != nil {
				for _, s := range *op.Servers {
					opServers = append(opServers, s.URL)
				}
			}
			o := map[string]any{
				"id": op.OperationID, "summary": op.Summary, "description": op.Description,
				"extensions": nilIfEmpty(op.Extensions), "servers": opServers,
			}
			var params []any
			for _, shared := range item.Parameters {
				if op.Parameters.GetByInAndName(shared.Value.In, shared.Value.Name) == nil {
					params = append(params, kinParam(shared.Value))
				}
			}
			for _, pa := range op.Parameters {
				params = append(params, kinParam(pa.Value))
			}
			o["parameters"] = params
			if op.RequestBody != nil {
				if mt := op.RequestBody.Value.Content.Get("application/json"); mt != nil {
					o["request"] = kinBody(mt)
				}
			}
			responses := map[string]any{}
			for code, r := range op.Responses.Map() {
				if _, err := strconv.Atoi(code); err != nil {
					continue
				}
				rr := map[string]any{"description": r.Value.Description, "extensions": nilIfEmpty(r.Value.Extensions)}
				if mt := r.Value.Content.Get("application/json"); mt != nil {
					rr["body"] = kinBody(mt)
				}
				responses[code] = rr
			}
			o["responses"] = responses
			out[method+" "+path] = o
		}
	}
	return out
}

func nilIfEmpty(m map[string]any) map[string]any {
	if len(m) == 0 {
		return nil
	}
	return m
}

func kinParam(p *openapi3.Parameter) any {
	return map[string]any{"name": p.Name, "in": p.In, "required": p.Required, "schema": kinSchema(p.Schema)}
}

func kinBody(mt *openapi3.MediaType) any {
	ref := mt.Schema.Ref
	if name, ok := strings.CutPrefix(ref, "#/components/schemas/"); ok {
		ref = name
	}
	return map[string]any{"ref": ref, "schema": kinSchema(mt.Schema)}
}

// kinSchema is a kin schema as JSON, its $refs inlined and converted.
func kinSchema(ref *openapi3.SchemaRef) any {
	if ref == nil {
		return nil
	}
	s := ref.Value
	data, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		panic(err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return v // a boolean schema
	}
	for k := range m {
		if strings.HasPrefix(k, "x-") || slices.Contains([]string{"example", "examples", "xml", "externalDocs", "$defs", "$id", "$anchor", "$schema", "$comment"}, k) {
			delete(m, k)
		}
	}
	for name, p := range s.Properties {
		m["properties"].(map[string]any)[name] = kinSchema(p)
	}
	if s.Items != nil {
		m["items"] = kinSchema(s.Items)
	}
	if s.Not != nil {
		m["not"] = kinSchema(s.Not)
	}
	if s.AdditionalProperties.Schema != nil {
		m["additionalProperties"] = kinSchema(s.AdditionalProperties.Schema)
	}
	for key, list := range map[string]openapi3.SchemaRefs{"oneOf": s.OneOf, "anyOf": s.AnyOf, "allOf": s.AllOf} {
		if len(list) > 0 {
			out := make([]any, len(list))
			for i, item := range list {
				out[i] = kinSchema(item)
			}
			m[key] = out
		}
	}
	for _, bound := range []string{"Minimum", "Maximum"} {
		if excl, _ := m["exclusive"+bound].(bool); excl {
			m["exclusive"+bound] = m[strings.ToLower(bound)]
			delete(m, strings.ToLower(bound))
		} else if ok := m["exclusive"+bound] == false; ok {
			delete(m, "exclusive"+bound)
		}
	}
	if m["nullable"] == true {
		if t, ok := m["type"].(string); ok {
			m["type"] = []any{t, "null"}
		}
		if enum, ok := m["enum"].([]any); ok && !slices.Contains(enum, nil) {
			m["enum"] = append(enum, nil)
		}
	}
	delete(m, "nullable")
	return m
}

// normal drops what kin-openapi leaves out when it renders a schema: the
// keywords whose values change nothing (false, 0).
func normal(s map[string]any) any {
	if s == nil {
		return nil
	}
	var walk func(v any) any
	walk = func(v any) any {
		switch v := v.(type) {
		case map[string]any:
			out := map[string]any{}
			for k, e := range v {
				if e == false && slices.Contains([]string{"uniqueItems", "readOnly", "writeOnly", "deprecated"}, k) || e == 0.0 && strings.HasPrefix(k, "min") && k != "minimum" {
					continue
				}
				out[k] = walk(e)
			}
			return out
		case []any:
			out := make([]any, len(v))
			for i, e := range v {
				out[i] = walk(e)
			}
			return out
		}
		return v
	}
	return walk(s)
}

// BenchmarkKinLoad is what reading the spec cost with kin-openapi (load
// and validate), beside oas's BenchmarkParseSpec:
//
//	go test -run '^$' -bench . ./internal/oas/...
func BenchmarkKinLoad(b *testing.B) {
	data, err := os.ReadFile("../../../spec/agent.yaml")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		doc, err := openapi3.NewLoader().LoadFromData(data)
		if err != nil {
			b.Fatal(err)
		}
		if err := doc.Validate(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}
