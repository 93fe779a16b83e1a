package server_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/specloop/specloop/internal/contract"
	"github.com/specloop/specloop/server"
)

// hostile is one request a client may send to any operation.
type hostile struct {
	name        string
	path        string // the path to request, query included
	contentType string
	body        string
	field       string // the field or parameter the problem must name; "" when any
}

// hostileRequests derives, from the spec alone, the bad requests every
// operation must answer with a 4xx problem: a path parameter with a
// malformed escape, every query parameter with a malformed escape, every
// integer query parameter and every top-level integer body field out of
// range, a body with a duplicate key and a body with invalid UTF-8.
func hostileRequests(t *testing.T, doc *openapi3.T, tmpl string, op *openapi3.Operation) []hostile {
	t.Helper()
	path := tmpl
	var pathParams, query []*openapi3.Parameter
	for _, ref := range op.Parameters {
		switch p := ref.Value; p.In {
		case openapi3.ParameterInPath:
			pathParams = append(pathParams, p)
		case openapi3.ParameterInQuery:
			query = append(query, p)
		}
	}
	for _, p := range pathParams {
		path = strings.ReplaceAll(path, "{"+p.Name+"}", "calculator")
	}
	var out []hostile
	for _, p := range pathParams {
		out = append(out, hostile{name: "path " + p.Name + " %ZZ", path: strings.ReplaceAll(tmpl, "{"+p.Name+"}", "x%ZZ")})
	}
	for _, p := range query {
		out = append(out, hostile{name: "query " + p.Name + " %ZZ", path: path + "?" + p.Name + "=%ZZ", field: p.Name})
		if p.Schema != nil && p.Schema.Value.Type.Is(openapi3.TypeInteger) {
			for _, lit := range []string{"99999999999999999999", "-99999999999999999999", "1e19"} {
				out = append(out, hostile{name: "query " + p.Name + "=" + lit, path: path + "?" + p.Name + "=" + url.QueryEscape(lit), field: p.Name})
			}
		}
	}
	if op.RequestBody == nil {
		return out
	}
	media := op.RequestBody.Value.Content.Get("application/json")
	if media == nil || media.Schema == nil {
		return out
	}
	out = append(out,
		hostile{name: "duplicate key", path: path, contentType: "application/json", body: `{"a":1,"a":2}`},
		hostile{name: "invalid UTF-8", path: path, contentType: "application/json", body: "{\"a\":\"\xff\xfe\"}"},
	)
	props := media.Schema.Value.Properties
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if s := props[name].Value; s != nil && s.Type.Is(openapi3.TypeInteger) {
			for _, lit := range []string{"1e19", "-1e19", "9223372036854775808"} {
				out = append(out, hostile{name: "body " + name + "=" + lit, path: path, contentType: "application/json", body: fmt.Sprintf("{%q:%s}", name, lit)})
			}
		}
	}
	return out
}

// Nothing a client sends to any operation of the spec gets a 5xx or an
// error that is not problem+json: out-of-range integers, duplicate keys,
// invalid UTF-8 and malformed escapes in paths and query parameters are a
// 4xx problem, and a malformed query parameter is named.
func TestEveryOperationRefusesHostileInput(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, server.Config{})
	doc := contract.MustSpec()
	n := 0
	for _, tmpl := range doc.Paths.InMatchingOrder() {
		item := doc.Paths.Value(tmpl)
		for method, op := range item.Operations() {
			for _, h := range hostileRequests(t, doc, tmpl, op) {
				n++
				t.Run(method+" "+tmpl+"/"+h.name, func(t *testing.T) {
					var body *strings.Reader
					if h.body != "" {
						body = strings.NewReader(h.body)
					}
					var status int
					var header http.Header
					var data []byte
					switch {
					case strings.Contains(h.path, "%ZZ") && !strings.Contains(h.path, "?"):
						// Not a URL net/http's client sends: write it raw.
						// net/http refuses it before any handler, with its
						// own plain 400.
						u, _ := url.Parse(ts.http.URL)
						resp := rawRequest(t, u.Host, method+" "+h.path+" HTTP/1.1\r\nHost: "+u.Host+"\r\nAuthorization: Bearer "+ts.cfg.Token+"\r\n\r\n")
						if resp.StatusCode != http.StatusBadRequest {
							t.Fatalf("a malformed path: status %d, want net/http's 400", resp.StatusCode)
						}
						return
					case body != nil:
						status, header, data = ts.do(method, h.path, h.contentType, body)
					default:
						status, header, data = ts.do(method, h.path, h.contentType, nil)
					}
					if status < 400 || status >= 500 {
						t.Fatalf("status %d, want a 4xx: %s", status, data)
					}
					if ct := header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
						t.Fatalf("content type %q, want problem+json: %s", ct, data)
					}
					p := problemOf(t, data)
					if h.field != "" && status == http.StatusBadRequest && (p.Field == nil || *p.Field != h.field) {
						t.Fatalf("problem %s does not name the parameter %s", fmtProblem(p), h.field)
					}
					if strings.Contains(string(data), "%ZZ") {
						t.Fatalf("the problem echoes the request: %s", data)
					}
				})
			}
		}
	}
	if n < 20 {
		t.Fatalf("only %d hostile requests derived from the spec; the walk is broken", n)
	}
}

// rawRequest sends raw bytes to addr and returns the response net/http's
// client parses from the answer.
func rawRequest(t *testing.T, addr, raw string) *http.Response {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the answer to %q: %v", raw, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}
