package server_test

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/specloop/specloop/internal/contract"
	"github.com/specloop/specloop/server"
	"github.com/specloop/specloop/tools"
)

// POST /v1/tools/{name} with an integer past its Go type's range (or past
// the schema's bounds) in any integer field of any tool is a 4xx problem
// naming the field, never a 500: each such value used to pass validation
// and fail when bound to the handler's input.
func TestToolIntegersOutOfRangeAreRefused(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, server.Config{})
	rt, err := tools.New(tools.Config{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	doc := contract.MustSpec()
	for _, def := range rt.Registry().Defs() {
		input := doc.Components.Schemas[def.InputSchemaName].Value
		names := make([]string, 0, len(input.Properties))
		for name := range input.Properties {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			s := input.Properties[name].Value
			if !s.Type.Is(openapi3.TypeInteger) {
				continue
			}
			for _, lit := range outOfRange(s) {
				n++
				t.Run(def.Spec.Name+"/"+name+"="+lit, func(t *testing.T) {
					body := requiredArguments(t, input)
					body = strings.TrimSuffix(body, "}")
					if body != "{" {
						body += ","
					}
					body += fmt.Sprintf("%q:%s}", name, lit)
					status, header, data := ts.do(http.MethodPost, "/v1/tools/"+def.Spec.Name, "application/json", strings.NewReader(body))
					if status >= 500 || status < 400 {
						t.Fatalf("status %d, want a 4xx: %s", status, data)
					}
					if ct := header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
						t.Fatalf("content type %q, want problem+json", ct)
					}
					p := problemOf(t, data)
					if p.Field == nil || *p.Field != "/"+name {
						t.Fatalf("problem %s does not name the field /%s", fmtProblem(p), name)
					}
					if len(lit) >= 5 && strings.Contains(string(data), lit) {
						t.Fatalf("the problem echoes the value: %s", data)
					}
				})
			}
		}
	}
	if n == 0 {
		t.Fatal("the spec's tools have no integer field: the walk tests nothing")
	}
}

// outOfRange lists JSON number literals past the range of an integer field:
// past every Go integer type, and just past the schema's own bounds.
func outOfRange(s *openapi3.Schema) []string {
	vals := []string{"1e19", "-1e19", "9223372036854775807", "9223372036854775808", "-9223372036854775809", "18446744073709551616", "1e300"}
	if s.Max != nil {
		vals = append(vals, strconv.FormatFloat(*s.Max+1, 'f', -1, 64))
	}
	if s.Min != nil {
		vals = append(vals, strconv.FormatFloat(*s.Min-1, 'f', -1, 64))
	}
	return vals
}

// requiredArguments returns a JSON object with a valid value for every
// required property of s, derived from the schema alone.
func requiredArguments(t *testing.T, s *openapi3.Schema) string {
	t.Helper()
	var parts []string
	for _, name := range s.Required {
		p := s.Properties[name].Value
		var v string
		switch {
		case len(p.Enum) > 0:
			v = strconv.Quote(fmt.Sprint(p.Enum[0]))
		case p.Type.Is(openapi3.TypeString):
			v = strconv.Quote(strings.Repeat("a", max(int(p.MinLength), 1)))
		case p.Type.Is(openapi3.TypeInteger), p.Type.Is(openapi3.TypeNumber):
			f := 1.0
			if p.Min != nil {
				f = max(f, *p.Min)
			}
			v = strconv.FormatFloat(f, 'f', -1, 64)
		case p.Type.Is(openapi3.TypeBoolean):
			v = "false"
		default:
			t.Fatalf("no valid value for required property %s", name)
		}
		parts = append(parts, strconv.Quote(name)+":"+v)
	}
	return "{" + strings.Join(parts, ",") + "}"
}
