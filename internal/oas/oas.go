// Package oas reads the parts of an OpenAPI 3.0 document specloop uses:
// the servers, the operations (their parameters, JSON request bodies and
// responses, and extensions) and the component schemas, every schema as a
// self-contained JSON Schema (2020-12) object. It is small and quick so
// that no program has to link, or wait for, a general OpenAPI library:
// the embedded spec is read once per process, and a user's custom tool
// document (which may come from a workspace) with the same rules.
//
// Parse reads YAML or JSON (at most MaxSize bytes, nested at most
// MaxDepth levels; YAML aliases and merge keys are expanded within a
// bound). It refuses, naming the place as a JSON pointer and the problem:
// a $ref that is not local (#/...), points to nothing or is recursive; a
// schema with a keyword OpenAPI 3.0 does not have, a keyword of the wrong
// type, an unknown type name or a pattern Go's regexp cannot compile;
// schemas nested deeper than MaxSchemaDepth once inlined; a path that
// does not start with /, a parameter without a name or with an unknown
// "in", two operations with one operationId; and an openapi version that
// is not 3.0.x or 3.1.x.
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
//   - example, examples, xml, externalDocs and x- extension keys are
//     dropped; every other keyword (discriminator, readOnly, writeOnly,
//     format, default, deprecated ...) is kept as it is, and numbers are
//     float64 as encoding/json gives them.
//
// Only application/json bodies are read (the media type exactly), and
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

// join is at followed by keys, never sharing at's array.
func join(at []string, keys ...string) []string { return append(slices.Clip(at), keys...) }

func errorAt(at []string, format string, args ...any) error {
	return &Error{At: at, Problem: fmt.Sprintf(format, args...)}
}

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
	p := &parser{root: root}
	version, err := get[string](root, "openapi", nil)
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(version, "3.0.") && !strings.HasPrefix(version, "3.1.") {
		return nil, errorAt([]string{"openapi"}, "the version %q is not 3.0.x (or 3.1.x)", textclip.Clip(version, 20))
	}
	doc := &Doc{Schemas: map[string]map[string]any{}}
	if doc.Servers, err = servers(root, nil); err != nil {
		return nil, err
	}
	if err := p.components(doc); err != nil {
		return nil, err
	}
	paths, err := get[map[string]any](root, "paths", nil)
	if err != nil {
		return nil, err
	}
	ids := map[string]string{}
	for _, path := range slices.Sorted(maps.Keys(paths)) {
		at := []string{"paths", path}
		if !strings.HasPrefix(path, "/") {
			return nil, errorAt(at, "a path must start with /")
		}
		pa, err := p.path(path, paths[path], at)
		if err != nil {
			return nil, err
		}
		for method, op := range pa.Operations {
			if op.ID == "" {
				continue
			}
			if other, dup := ids[op.ID]; dup {
				return nil, errorAt(join(at, strings.ToLower(method), "operationId"), "the operationId %q is also %s's", textclip.Clip(op.ID, 64), other)
			}
			ids[op.ID] = method + " " + path
		}
		doc.Paths = append(doc.Paths, pa)
	}
	return doc, nil
}

type parser struct {
	root    map[string]any
	schemas int
}

// components converts components.schemas and reads the other components
// an operation may $ref, so that a broken one is refused even when no
// operation uses it.
func (p *parser) components(doc *Doc) error {
	comp, err := get[map[string]any](p.root, "components", nil)
	if err != nil {
		return err
	}
	at := []string{"components"}
	kinds := []struct {
		key  string
		read func(v any, at []string) error
	}{
		{"schemas", func(v any, at []string) error {
			s, err := p.schema(v, at, 0, nil)
			doc.Schemas[at[len(at)-1]] = s
			return err
		}},
		{"parameters", func(v any, at []string) error { _, err := p.parameter(v, at); return err }},
		{"requestBodies", func(v any, at []string) error { _, err := p.body(v, at); return err }},
		{"responses", func(v any, at []string) error { _, err := p.response(v, at); return err }},
	}
	for _, k := range kinds {
		m, err := get[map[string]any](comp, k.key, at)
		if err != nil {
			return err
		}
		for _, name := range slices.Sorted(maps.Keys(m)) {
			if err := k.read(m[name], join(at, k.key, name)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (p *parser) path(path string, v any, at []string) (*Path, error) {
	item, at, err := p.deref(v, at)
	if err != nil {
		return nil, err
	}
	shared, err := p.parameters(item, at)
	if err != nil {
		return nil, err
	}
	pa := &Path{Path: path, Operations: map[string]*Operation{}}
	for key, method := range methods {
		if v, ok := item[key]; ok {
			op, err := p.operation(v, join(at, key), shared)
			if err != nil {
				return nil, err
			}
			pa.Operations[method] = op
		}
	}
	return pa, nil
}

func (p *parser) operation(v any, at []string, shared []*Parameter) (*Operation, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errorAt(at, "an operation must be an object")
	}
	op := &Operation{Extensions: extensions(m), Responses: map[int]*Response{}}
	var err error
	for key, dst := range map[string]*string{"operationId": &op.ID, "summary": &op.Summary, "description": &op.Description} {
		if *dst, err = get[string](m, key, at); err != nil {
			return nil, err
		}
	}
	if op.Servers, err = servers(m, at); err != nil {
		return nil, err
	}
	own, err := p.parameters(m, at)
	if err != nil {
		return nil, err
	}
	for _, s := range shared {
		if !slices.ContainsFunc(own, func(o *Parameter) bool { return o.Name == s.Name && o.In == s.In }) {
			op.Parameters = append(op.Parameters, s)
		}
	}
	op.Parameters = append(op.Parameters, own...)
	if rb, ok := m["requestBody"]; ok {
		if op.Request, err = p.body(rb, join(at, "requestBody")); err != nil {
			return nil, err
		}
	}
	responses, err := get[map[string]any](m, "responses", at)
	if err != nil {
		return nil, err
	}
	for _, code := range slices.Sorted(maps.Keys(responses)) {
		rat := join(at, "responses", code)
		status, err := strconv.Atoi(code)
		if err != nil || len(code) != 3 || status < 100 || status > 599 {
			if code == "default" || len(code) == 3 && code[0] >= '1' && code[0] <= '5' && code[1:] == "XX" {
				continue
			}
			return nil, errorAt(rat, "not a status code, a range (2XX) or default")
		}
		if op.Responses[status], err = p.response(responses[code], rat); err != nil {
			return nil, err
		}
	}
	return op, nil
}

func (p *parser) parameters(m map[string]any, at []string) ([]*Parameter, error) {
	list, err := get[[]any](m, "parameters", at)
	if err != nil {
		return nil, err
	}
	out := make([]*Parameter, len(list))
	for i, v := range list {
		if out[i], err = p.parameter(v, join(at, "parameters", strconv.Itoa(i))); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (p *parser) parameter(v any, at []string) (*Parameter, error) {
	m, at, err := p.deref(v, at)
	if err != nil {
		return nil, err
	}
	pa := &Parameter{}
	if pa.Name, err = get[string](m, "name", at); err != nil {
		return nil, err
	}
	if pa.In, err = get[string](m, "in", at); err != nil {
		return nil, err
	}
	if pa.Required, err = get[bool](m, "required", at); err != nil {
		return nil, err
	}
	switch {
	case pa.Name == "":
		return nil, errorAt(at, "a parameter needs a name")
	case !slices.Contains([]string{"path", "query", "header", "cookie"}, pa.In):
		return nil, errorAt(join(at, "in"), "%q is not path, query, header or cookie", textclip.Clip(pa.In, 20))
	}
	if s, ok := m["schema"]; ok {
		if pa.Schema, err = p.schema(s, join(at, "schema"), 0, nil); err != nil {
			return nil, err
		}
	}
	return pa, nil
}

// body reads a request body (or, from response, a response's content):
// its application/json media type; nil when it has none.
func (p *parser) body(v any, at []string) (*Body, error) {
	m, at, err := p.deref(v, at)
	if err != nil {
		return nil, err
	}
	return p.content(m, at)
}

func (p *parser) content(m map[string]any, at []string) (*Body, error) {
	content, err := get[map[string]any](m, "content", at)
	if err != nil {
		return nil, err
	}
	at = join(at, "content", "application/json")
	media, ok := content["application/json"]
	if !ok {
		return nil, nil
	}
	mm, ok := media.(map[string]any)
	if !ok {
		return nil, errorAt(at, "a media type must be an object")
	}
	s, ok := mm["schema"]
	if !ok {
		return &Body{}, nil
	}
	b := &Body{}
	if sm, ok := s.(map[string]any); ok {
		ref, _ := sm["$ref"].(string)
		b.Ref = ref
		if name, ok := strings.CutPrefix(ref, "#/components/schemas/"); ok && !strings.Contains(name, "/") {
			b.Ref = unescape(name)
		}
	}
	if b.Schema, err = p.schema(s, join(at, "schema"), 0, nil); err != nil {
		return nil, err
	}
	return b, nil
}

func (p *parser) response(v any, at []string) (*Response, error) {
	m, at, err := p.deref(v, at)
	if err != nil {
		return nil, err
	}
	r := &Response{Extensions: extensions(m)}
	if d, ok := m["description"]; ok {
		s, ok := d.(string)
		if !ok {
			return nil, errorAt(join(at, "description"), "must be a string")
		}
		r.Description = &s
	}
	if r.Body, err = p.content(m, at); err != nil {
		return nil, err
	}
	return r, nil
}

// deref follows the $refs of an object that is not a schema (a path item,
// parameter, request body or response) to the object itself and its place.
func (p *parser) deref(v any, at []string) (map[string]any, []string, error) {
	for range MaxSchemaDepth {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, nil, errorAt(at, "must be an object")
		}
		ref, ok := m["$ref"]
		if !ok {
			return m, at, nil
		}
		var err error
		if v, at, err = p.resolve(ref, at); err != nil {
			return nil, nil, err
		}
	}
	return nil, nil, errorAt(at, "a chain of more than %d $refs (a loop?)", MaxSchemaDepth)
}

// resolve finds what the $ref ref at the place at points to, and its place.
func (p *parser) resolve(ref any, at []string) (any, []string, error) {
	s, ok := ref.(string)
	if !ok {
		return nil, nil, errorAt(join(at, "$ref"), "must be a string")
	}
	frag, ok := strings.CutPrefix(s, "#/")
	if !ok {
		return nil, nil, errorAt(at, "$ref %q is not a local reference (#/components/...); the document must be self-contained", textclip.Clip(s, 200))
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
			ok = err == nil && i >= 0 && i < len(c)
			if ok {
				v = c[i]
			}
		default:
			ok = false
		}
		if !ok {
			return nil, nil, errorAt(at, "$ref %q points to nothing in the document", textclip.Clip(s, 200))
		}
	}
	return v, target, nil
}

func unescape(tok string) string {
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
}

// servers reads the URLs of the servers list of m.
func servers(m map[string]any, at []string) ([]string, error) {
	list, err := get[[]any](m, "servers", at)
	if err != nil {
		return nil, err
	}
	if len(list) == 0 {
		return nil, nil
	}
	urls := make([]string, len(list))
	for i, s := range list {
		sat := join(at, "servers", strconv.Itoa(i))
		sm, ok := s.(map[string]any)
		if !ok {
			return nil, errorAt(sat, "a server must be an object")
		}
		if urls[i], err = get[string](sm, "url", sat); err != nil {
			return nil, err
		}
	}
	return urls, nil
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

// get is m[key] as a T, the zero T when m has no key.
func get[T any](m map[string]any, key string, at []string) (T, error) {
	var zero T
	v, ok := m[key]
	if !ok {
		return zero, nil
	}
	t, ok := v.(T)
	if !ok {
		return zero, errorAt(join(at, key), "must be %s", kindOf(zero))
	}
	return t, nil
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
