// Package oas reads the parts of an OpenAPI 3.0 document specloop uses:
// the servers, the operations (their parameters, JSON request bodies and
// responses, and extensions) and the component schemas, every schema as a
// self-contained JSON Schema (2020-12) object. It is small so that no
// program links a general OpenAPI library: the generator reads the
// embedded spec with it (gen.SpecDoc is the result, decoded once per
// process), and the tools package a user's custom tool document, which may
// come from a workspace, with the same rules.
//
// Parse reads YAML or JSON (at most MaxSize bytes, nested at most
// MaxDepth levels; YAML aliases and merge keys are expanded within a
// bound). It refuses, naming the place as a JSON pointer and the problem:
// a $ref that is not local (#/...), points to nothing or is recursive
// (a schema that contains itself cannot be inlined); a schema keyword
// that neither OpenAPI 3.0 nor 3.1 (JSON Schema 2020-12) has, a keyword
// of the wrong type, an unknown type name or a pattern Go's regexp cannot
// compile; schemas nested deeper than MaxSchemaDepth once inlined; a path
// that does not start with /, a parameter without a name or with an
// unknown "in", a status code that is not one, two operations with one
// operationId; and an openapi version that is not 3.0.x or 3.1.x.
//
// Every schema it returns is converted to JSON Schema 2020-12:
//
//   - every $ref is replaced by a copy of the schema it points to (a
//     $ref's siblings are ignored, as OpenAPI 3.0 says);
//   - nullable: true adds "null" to the type (when there is one) and null
//     to the enum (when there is one); nullable is dropped;
//   - a boolean exclusiveMinimum/exclusiveMaximum becomes the numeric
//     keyword with the value of minimum/maximum, which is dropped (a
//     numeric one, OpenAPI 3.1's, is kept);
//   - example, examples, xml, externalDocs, $defs, $id, $anchor, $schema,
//     $comment and x- extension keys are dropped; every other keyword
//     (discriminator, readOnly, writeOnly, format, default, deprecated,
//     const ...) and a true or false subschema are kept as they are, and
//     numbers are float64 as encoding/json gives them.
//
// OpenAPI 3.1's forms are read in either version: a list of types, a
// numeric exclusive bound, the keywords JSON Schema 2020-12 adds.
// Only JSON bodies are read: the media type application/json, else
// application/* or */* (as kin-openapi's Content.Get falls back), and
// only responses with a numeric status code ("default" and "2XX" are
// skipped). A path item's parameters are added to each of its operations
// unless the operation has its own of the same name and place. Parts of
// the document this package does not read (info, tags, security, headers,
// examples, links, callbacks) are not checked.
package oas

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/specloop/specloop/internal/textclip"
)

// Limits on a document, which may come from a repository's file.
const (
	// MaxSize is the largest document Parse reads, in bytes.
	MaxSize = 4 << 20
	// MaxDepth bounds the nesting of the document's mappings and lists.
	MaxDepth = 128
	// MaxSchemaDepth bounds the nesting of a schema once its $refs are
	// inlined, and the length of a chain of $refs.
	MaxSchemaDepth = 64
	// maxValues bounds the values a document decodes to (aliases
	// expanded); maxSchemas the schema objects inlining produces.
	maxValues  = 1 << 20
	maxSchemas = 1 << 17
)

// Doc is what specloop uses of an OpenAPI document.
type Doc struct {
	// Servers are the URLs of the document's servers.
	Servers []string
	// Paths are the document's paths, sorted by path.
	Paths []*Path
	// Schemas are components.schemas by name, converted, $refs inlined.
	Schemas map[string]map[string]any
}

// Path is one path of the document and its operations.
type Path struct {
	Path string
	// Operations by upper-case method (GET, POST ...).
	Operations map[string]*Operation
}

// Operation is one operation of a path.
type Operation struct {
	ID, Summary, Description string
	// Extensions are the operation's x- keys.
	Extensions map[string]any
	// Servers are the URLs of the operation's own servers.
	Servers []string
	// Parameters are the operation's and its path's, in document order.
	Parameters []*Parameter
	// Request is the application/json request body; nil when there is none.
	Request *Body
	// Responses by numeric status code.
	Responses map[int]*Response
}

// Parameter is a parameter of an operation.
type Parameter struct {
	Name, In string
	Required bool
	// Schema is nil when the parameter has none (it has content instead).
	Schema map[string]any
}

// Body is an application/json request or response body.
type Body struct {
	// Ref names the component the schema $refs: the NAME of
	// #/components/schemas/NAME, or the $ref as written when it points
	// elsewhere; "" when the schema is inline.
	Ref string
	// Schema is nil when the media type has no schema.
	Schema map[string]any
}

// Response is a response of an operation.
type Response struct {
	// Description is nil when the response has none.
	Description *string
	// Body is nil when the response has no application/json content.
	Body *Body
	// Extensions are the response's x- keys.
	Extensions map[string]any
}

// Operation returns the operation whose operationId is id, its path and
// method.
func (d *Doc) Operation(id string) (*Path, string, *Operation, bool) {
	for _, p := range d.Paths {
		for method, op := range p.Operations {
			if op.ID == id {
				return p, method, op, true
			}
		}
	}
	return nil, "", nil, false
}

// Error is a problem of a document: where it is and what it is.
type Error struct {
	// At is the place, the tokens of a JSON pointer (unescaped); empty
	// for the document as a whole.
	At []string
	// Problem says what is wrong.
	Problem string
}

func (e *Error) Error() string {
	if len(e.At) == 0 {
		return e.Problem
	}
	return textclip.Clip(Pointer(e.At), 200) + ": " + e.Problem
}

// Pointer renders tokens as a JSON pointer in a URI fragment, like a $ref:
// #/paths/~1v1~1tools~1echo/post.
func Pointer(tokens []string) string {
	var b strings.Builder
	b.WriteByte('#')
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

// under puts err (an *Error from below key) under key.
func under(err error, key string) error {
	if e, ok := err.(*Error); ok {
		e.At = append([]string{key}, e.At...)
	}
	return err
}

// join is at followed by keys. It may write into at's array: a place is
// used only while its subtree is read, and fail keeps a copy.
func join(at []string, keys ...string) []string { return append(at, keys...) }

// methods are the operations a path item may have, by their keys.
var methods = map[string]string{
	"get": "GET", "put": "PUT", "post": "POST", "delete": "DELETE",
	"options": "OPTIONS", "head": "HEAD", "patch": "PATCH", "trace": "TRACE",
}

// Parse reads an OpenAPI 3.0 document (YAML or JSON).
func Parse(data []byte) (*Doc, error) {
	v, err := decode(data)
	if err != nil {
		return nil, err
	}
	root, ok := v.(map[string]any)
	if !ok {
		return nil, &Error{Problem: "the document is not a mapping"}
	}
	p := &parser{root: root, patterns: map[string]bool{}}
	if version := get[string](p, root, "openapi", nil); p.err == nil && !strings.HasPrefix(version, "3.0.") && !strings.HasPrefix(version, "3.1.") {
		p.fail([]string{"openapi"}, "the version %q is not 3.0.x (or 3.1.x)", textclip.Clip(version, 20))
	}
	doc := &Doc{Servers: p.servers(root, nil), Schemas: map[string]map[string]any{}}
	comp := get[map[string]any](p, root, "components", nil)
	for _, kind := range []string{"schemas", "parameters", "requestBodies", "responses"} {
		// Every component is read, so that a broken one is refused
		// even when no operation uses it.
		m := get[map[string]any](p, comp, kind, []string{"components"})
		for _, name := range slices.Sorted(maps.Keys(m)) {
			at := []string{"components", kind, name}
			switch kind {
			case "schemas":
				doc.Schemas[name] = p.schema(m[name], at, 0, nil)
			case "parameters":
				p.parameter(m[name], at)
			case "requestBodies":
				p.body(m[name], at)
			case "responses":
				p.response(m[name], at)
			}
		}
	}
	paths := get[map[string]any](p, root, "paths", nil)
	ids := map[string]string{}
	for _, path := range slices.Sorted(maps.Keys(paths)) {
		at := []string{"paths", path}
		if !strings.HasPrefix(path, "/") {
			p.fail(at, "a path must start with /")
		}
		pa := p.path(path, paths[path], at)
		for _, method := range slices.Sorted(maps.Keys(pa.Operations)) {
			if id := pa.Operations[method].ID; id != "" {
				if other, dup := ids[id]; dup {
					p.fail(join(at, strings.ToLower(method), "operationId"), "the operationId %q is also %s's", textclip.Clip(id, 64), other)
				}
				ids[id] = method + " " + path
			}
		}
		doc.Paths = append(doc.Paths, pa)
	}
	if p.err != nil {
		return nil, p.err
	}
	return doc, nil
}

// parser reads a decoded document. Its methods keep the first problem in
// err and go on with zero values, which the caller of Parse never sees.
type parser struct {
	root     map[string]any
	schemas  int
	patterns map[string]bool // the patterns that compiled
	err      *Error
}

func (p *parser) fail(at []string, format string, args ...any) {
	if p.err == nil {
		p.err = &Error{At: slices.Clone(at), Problem: fmt.Sprintf(format, args...)}
	}
}

func (p *parser) path(path string, v any, at []string) *Path {
	item, at := p.deref(v, at)
	shared := p.parameters(item, at)
	pa := &Path{Path: path, Operations: map[string]*Operation{}}
	for key, method := range methods {
		if v, ok := item[key]; ok {
			pa.Operations[method] = p.operation(v, join(at, key), shared)
		}
	}
	return pa
}

func (p *parser) operation(v any, at []string, shared []*Parameter) *Operation {
	m, ok := v.(map[string]any)
	if !ok {
		p.fail(at, "an operation must be an object")
	}
	op := &Operation{
		ID:          get[string](p, m, "operationId", at),
		Summary:     get[string](p, m, "summary", at),
		Description: get[string](p, m, "description", at),
		Extensions:  extensions(m),
		Servers:     p.servers(m, at),
		Responses:   map[int]*Response{},
	}
	own := p.parameters(m, at)
	for _, s := range shared {
		if !slices.ContainsFunc(own, func(o *Parameter) bool { return o.Name == s.Name && o.In == s.In }) {
			op.Parameters = append(op.Parameters, s)
		}
	}
	op.Parameters = append(op.Parameters, own...)
	if rb, ok := m["requestBody"]; ok {
		op.Request = p.body(rb, join(at, "requestBody"))
	}
	responses := get[map[string]any](p, m, "responses", at)
	for _, code := range slices.Sorted(maps.Keys(responses)) {
		rat := join(at, "responses", code)
		status, err := strconv.Atoi(code)
		switch {
		case code == "default" || len(code) == 3 && code[0] >= '1' && code[0] <= '5' && code[1:] == "XX":
		case err != nil || len(code) != 3 || status < 100 || status > 599:
			p.fail(rat, "not a status code, a range (2XX) or default")
		default:
			op.Responses[status] = p.response(responses[code], rat)
		}
	}
	return op
}

func (p *parser) parameters(m map[string]any, at []string) []*Parameter {
	var out []*Parameter
	for i, v := range get[[]any](p, m, "parameters", at) {
		out = append(out, p.parameter(v, join(at, "parameters", strconv.Itoa(i))))
	}
	return out
}

func (p *parser) parameter(v any, at []string) *Parameter {
	m, at := p.deref(v, at)
	pa := &Parameter{Name: get[string](p, m, "name", at), In: get[string](p, m, "in", at), Required: get[bool](p, m, "required", at)}
	switch {
	case pa.Name == "":
		p.fail(at, "a parameter needs a name")
	case !slices.Contains([]string{"path", "query", "header", "cookie"}, pa.In):
		p.fail(join(at, "in"), "%q is not path, query, header or cookie", textclip.Clip(pa.In, 20))
	}
	if s, ok := m["schema"]; ok {
		pa.Schema = p.schema(s, join(at, "schema"), 0, nil)
	}
	return pa
}

// jsonTypes are the media types that may give a JSON body, the most
// specific first, as kin-openapi's Content.Get matches them.
var jsonTypes = []string{"application/json", "application/*", "*/*"}

// body reads a request body: its application/json media type; nil when
// it has none.
func (p *parser) body(v any, at []string) *Body {
	m, at := p.deref(v, at)
	return p.content(m, at)
}

func (p *parser) content(m map[string]any, at []string) *Body {
	content := get[map[string]any](p, m, "content", at)
	i := slices.IndexFunc(jsonTypes, func(t string) bool { _, ok := content[t]; return ok })
	if i < 0 {
		return nil
	}
	at = join(at, "content", jsonTypes[i])
	mm, ok := content[jsonTypes[i]].(map[string]any)
	if !ok {
		p.fail(at, "a media type must be an object")
	}
	s, ok := mm["schema"]
	if !ok {
		return &Body{}
	}
	b := &Body{}
	if sm, ok := s.(map[string]any); ok {
		b.Ref, _ = sm["$ref"].(string)
		if name, ok := strings.CutPrefix(b.Ref, "#/components/schemas/"); ok && !strings.Contains(name, "/") {
			b.Ref = unescape(name)
		}
	}
	b.Schema = p.schema(s, join(at, "schema"), 0, nil)
	return b
}

func (p *parser) response(v any, at []string) *Response {
	m, at := p.deref(v, at)
	r := &Response{Extensions: extensions(m), Body: p.content(m, at)}
	if _, ok := m["description"]; ok {
		d := get[string](p, m, "description", at)
		r.Description = &d
	}
	return r
}

// deref follows the $refs of an object that is not a schema (a path item,
// parameter, request body or response) to the object itself and its place.
func (p *parser) deref(v any, at []string) (map[string]any, []string) {
	for range MaxSchemaDepth {
		m, ok := v.(map[string]any)
		if !ok {
			p.fail(at, "must be an object")
			return nil, at
		}
		ref, ok := m["$ref"]
		if !ok {
			return m, at
		}
		if v, at = p.resolve(ref, at); v == nil {
			return nil, at
		}
	}
	p.fail(at, "a chain of more than %d $refs (a loop?)", MaxSchemaDepth)
	return nil, at
}

// resolve finds what the $ref ref at the place at points to, and its
// place; nil when it points to nothing.
func (p *parser) resolve(ref any, at []string) (any, []string) {
	s, ok := ref.(string)
	frag, local := strings.CutPrefix(s, "#/")
	switch {
	case !ok:
		p.fail(join(at, "$ref"), "must be a string")
		return nil, at
	case !local:
		p.fail(at, "$ref %q is not a local reference (#/components/...); the document must be self-contained", textclip.Clip(s, 200))
		return nil, at
	}
	if f, err := url.PathUnescape(frag); err == nil {
		frag = f
	}
	var v any = p.root
	var target []string
	for tok := range strings.SplitSeq(frag, "/") {
		tok = unescape(tok)
		target = append(target, tok)
		switch c := v.(type) {
		case map[string]any:
			v, ok = c[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if ok = err == nil && i >= 0 && i < len(c); ok {
				v = c[i]
			}
		default:
			ok = false
		}
		if !ok || v == nil {
			p.fail(at, "$ref %q points to nothing in the document", textclip.Clip(s, 200))
			return nil, at
		}
	}
	return v, target
}

func unescape(tok string) string {
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
}

// servers reads the URLs of the servers list of m.
func (p *parser) servers(m map[string]any, at []string) []string {
	var urls []string
	for i, s := range get[[]any](p, m, "servers", at) {
		sat := join(at, "servers", strconv.Itoa(i))
		sm, ok := s.(map[string]any)
		if !ok {
			p.fail(sat, "a server must be an object")
		}
		urls = append(urls, get[string](p, sm, "url", sat))
	}
	return urls
}

// extensions are the x- keys of m; nil when it has none.
func extensions(m map[string]any) map[string]any {
	var x map[string]any
	for k, v := range m {
		if strings.HasPrefix(k, "x-") {
			if x == nil {
				x = map[string]any{}
			}
			x[k] = v
		}
	}
	return x
}

// get is m[key] as a T, the zero T when m has no key or (a problem) it
// is not a T.
func get[T any](p *parser, m map[string]any, key string, at []string) T {
	v, ok := m[key]
	t, isT := v.(T)
	if ok && !isT {
		var zero T
		p.fail(join(at, key), "must be %s", kindOf(zero))
	}
	return t
}

func kindOf(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case []any:
		return "a list"
	}
	return "an object"
}
