package server

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/specloop/specloop/internal/contract"
	"github.com/specloop/specloop/internal/schema"
	"github.com/specloop/specloop/spec"
	"github.com/specloop/specloop/tools"
)

// TestValidatorsAgreeOnFormatsAndReadWriteOnly: the spec's tool inputs
// have no formats and no readOnly or writeOnly properties yet, so an edited
// copy gets them, and the model path's validator (the tool registry's) and
// the HTTP path's (openapi3filter, as the request validator middleware
// runs it, after strictJSON) must give the same verdicts.
func TestValidatorsAgreeOnFormatsAndReadWriteOnly(t *testing.T) {
	t.Parallel()
	doc, err := contract.ParseSpec(spec.YAML())
	if err != nil {
		t.Fatal(err)
	}
	in := doc.Components.Schemas["ReadFileInput"].Value
	in.Properties["when"] = openapi3.NewDateTimeSchema().NewRef()
	in.Properties["id"] = &openapi3.SchemaRef{Value: &openapi3.Schema{Type: &openapi3.Types{"string"}, ReadOnly: true}}
	in.Properties["secret"] = &openapi3.SchemaRef{Value: &openapi3.Schema{Type: &openapi3.Types{"string"}, WriteOnly: true}}
	edited, err := doc.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	reg, err := tools.NewRegistry(edited)
	if err != nil {
		t.Fatal(err)
	}
	def, ok := reg.Lookup("read_file")
	if !ok {
		t.Fatal("no read_file")
	}
	doc.Servers = nil
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		raw   string
		valid bool
	}{
		{`{"path":"a","when":"2016-12-31T23:59:60Z"}`, true},
		{`{"path":"a","when":"2026-11-30T09:00:00.5+01:00"}`, true},
		{`{"path":"a","when":"2016-12-31T23:00:00+24:00"}`, false},
		{`{"path":"a","when":"2016-02-30T00:00:00Z"}`, false},
		{`{"path":"a","when":"2016-12-31 23:00:00Z"}`, false},
		{`{"path":"a","when":"yesterday"}`, false},
		{`{"path":"a","id":"x"}`, false},
		{`{"path":"a","secret":"x"}`, true},
	}
	for _, tt := range tests {
		value, err := schema.Decode([]byte(tt.raw))
		if err != nil {
			t.Fatal(err)
		}
		modelErr := def.ValidateInput(value.(map[string]any))

		body, err := encodeCanonical(value)
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest(http.MethodPost, "/v1/tools/read_file", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		route, params, err := router.FindRoute(req)
		if err != nil {
			t.Fatal(err)
		}
		httpErr := openapi3filter.ValidateRequest(context.Background(), &openapi3filter.RequestValidationInput{
			Request: req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{
				AuthenticationFunc:  func(context.Context, *openapi3filter.AuthenticationInput) error { return nil },
				SkipSettingDefaults: true,
			},
		})
		if (modelErr == nil) != tt.valid || (httpErr == nil) != tt.valid {
			t.Errorf("%s: model path %v, HTTP path %v, want valid=%v", tt.raw, modelErr, httpErr, tt.valid)
		}
	}
}
