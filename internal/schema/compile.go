package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strings"
)

// node is one compiled schema: the keywords Validate checks, parsed once.
// Counts (minLength ...) are -1 when absent.
type node struct {
	m             map[string]any // the schema, which messages quote
	at            string         // its JSON pointer in the root, for Compile's errors
	always, never bool           // the schemas true and false
	rejects       bool           // false, or {"not": {}}: an undeclared property is "not allowed"

	ref, refAt string // $ref or $dynamicRef, and where it is
	target     *node

	types                                        []string
	enum                                         []any
	cnst                                         any
	hasEnum, hasConst                            bool
	format                                       string
	minimum, maximum, exclusiveMin, exclusiveMax *float64
	multipleOf                                   *float64
	minLength, maxLength                         int
	pattern                                      *regexp.Regexp
	minItems, maxItems, minContains, maxContains int
	uniqueItems                                  bool
	minProps, maxProps                           int
	depRequired                                  map[string][]string

	allOf, anyOf, oneOf   []*node
	not, ifS, thenS, elsS *node
	discriminator         string           // the property oneOf's branches are told apart by
	byValue               map[string]*node // ... and the branch of each of its values
	depSchemas            map[string]*node

	prefix                []*node
	items, contains       *node
	props                 map[string]*node
	declared              []string // props' names, sorted
	patterns              []patternProp
	additional, propNames *node
	required              []string
	unevalProps           *node
	unevalItems           *node
	readOnly, writeOnly   bool
}

type patternProp struct {
	re *regexp.Regexp
	n  *node
}

// compiler builds the nodes of one root schema.
type compiler struct {
	root    map[string]any
	nodes   map[uintptr]*node
	anchors map[string]*node
	refs    []*node // nodes whose reference is still to be resolved
	errs    []error
}

// Compile returns the Validator of a JSON Schema (draft 2020-12) object,
// such as internal/oas produces from the spec or an MCP server sends, for
// values going in the given direction. Compiling parses every keyword,
// resolves the references and compiles the regular expressions: build it
// once and keep it.
//
// It reads every schema as draft 2020-12, whatever $schema says, and
// also takes draft-07's array form of items with additionalItems,
// dependencies and definitions. References are JSON pointers or anchors
// inside the schema, which is one document: $id is allowed at its root
// only, and $dynamicRef resolves as $ref does (within one document, the
// same schema). Unknown keywords are annotations. format is enforced for
// date-time and date (RFC 3339, with a real day of the month), byte
// (base64) and the ranges of int32 and int64, which the spec relies on;
// other formats are annotations.
func Compile(s map[string]any, dir Direction) (*Validator, error) {
	if s == nil {
		return nil, errors.New("schema: nil schema")
	}
	// A copy as JSON: numbers become float64, and the caller's map is
	// never shared.
	data, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	var root map[string]any
	if err := json.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	c := &compiler{root: root, nodes: map[uintptr]*node{}, anchors: map[string]*node{}}
	n := c.node(root, "")
	for len(c.refs) > 0 && len(c.errs) == 0 {
		r := c.refs[len(c.refs)-1]
		c.refs = c.refs[:len(c.refs)-1]
		r.target = c.resolve(r)
	}
	if len(c.errs) == 0 {
		c.acyclic(n, map[*node]uint8{})
	}
	if err := errors.Join(c.errs...); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	return &Validator{dir: dir, root: n}, nil
}

func (c *compiler) fail(at, format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf("%s: "+format, append([]any{Where(at)}, args...)...))
}

// node compiles the schema v found at at, once per schema object.
func (c *compiler) node(v any, at string) *node {
	switch v := v.(type) {
	case bool:
		return &node{at: at, always: v, never: !v, rejects: !v}
	case map[string]any:
		k := reflect.ValueOf(v).Pointer()
		if n := c.nodes[k]; n != nil {
			return n
		}
		n := &node{m: v, at: at}
		c.nodes[k] = n
		c.keywords(n, v)
		return n
	}
	c.fail(at, "a schema must be an object or a boolean")
	return &node{at: at, always: true}
}

func (c *compiler) keywords(n *node, m map[string]any) {
	at := n.at
	if _, ok := m["$id"]; ok && at != "" {
		c.fail(at, "sets $id: a schema is one document, with $id at its root only")
	}
	for _, k := range []string{"$anchor", "$dynamicAnchor"} {
		if name, ok := m[k].(string); ok {
			c.anchors[name] = n
		}
	}
	for _, k := range []string{"$ref", "$dynamicRef"} {
		if r, ok := m[k]; ok {
			n.ref, _ = r.(string)
			n.refAt = at + "/" + k
			if n.ref == "" {
				c.fail(n.refAt, "must be a non-empty string")
			}
			c.refs = append(c.refs, n)
		}
	}
	if t, ok := m["type"]; ok {
		list, isList := t.([]any)
		if !isList {
			list = []any{t}
		}
		for _, t := range list {
			if name, ok := t.(string); ok && slices.Contains(jsonTypes, name) {
				n.types = append(n.types, name)
			} else {
				c.fail(at, "type %.40v is not a JSON type", t)
			}
		}
	}
	if e, ok := m["enum"]; ok {
		n.hasEnum = true
		if n.enum, ok = e.([]any); !ok {
			c.fail(at, "enum must be an array")
		}
	}
	n.cnst, n.hasConst = m["const"]
	if f, ok := m["format"]; ok {
		s, isString := f.(string)
		if !isString {
			c.fail(at, "format must be a string")
		}
		if _, enforced := formats[s]; enforced {
			n.format = s
		}
	}
	n.minimum, n.maximum = c.number(m, "minimum", at), c.number(m, "maximum", at)
	n.exclusiveMin, n.exclusiveMax = c.number(m, "exclusiveMinimum", at), c.number(m, "exclusiveMaximum", at)
	if n.multipleOf = c.number(m, "multipleOf", at); n.multipleOf != nil && *n.multipleOf <= 0 {
		c.fail(at, "multipleOf must be greater than 0")
	}
	n.minLength, n.maxLength = c.count(m, "minLength", at), c.count(m, "maxLength", at)
	n.pattern = c.regexp(m, "pattern", at)
	n.minItems, n.maxItems = c.count(m, "minItems", at), c.count(m, "maxItems", at)
	n.minContains, n.maxContains = c.count(m, "minContains", at), c.count(m, "maxContains", at)
	n.uniqueItems, _ = m["uniqueItems"].(bool)
	n.minProps, n.maxProps = c.count(m, "minProperties", at), c.count(m, "maxProperties", at)
	n.required = c.names(m["required"], at+"/required")
	n.readOnly, _ = m["readOnly"].(bool)
	n.writeOnly, _ = m["writeOnly"].(bool)

	n.allOf, n.anyOf, n.oneOf = c.list(m, "allOf", at), c.list(m, "anyOf", at), c.list(m, "oneOf", at)
	n.not, n.ifS, n.thenS, n.elsS = c.sub(m, "not", at), c.sub(m, "if", at), c.sub(m, "then", at), c.sub(m, "else", at)
	not, isMap := m["not"].(map[string]any)
	n.rejects = isMap && len(not) == 0 && len(m) == 1
	if n.oneOf != nil {
		n.discriminator, n.byValue = c.discriminator(m)
	}
	for _, k := range []string{"dependentRequired", "dependentSchemas", "dependencies"} {
		deps, _ := m[k].(map[string]any)
		for _, name := range slices.Sorted(maps.Keys(deps)) {
			if list, ok := deps[name].([]any); ok && k != "dependentSchemas" {
				if n.depRequired == nil {
					n.depRequired = map[string][]string{}
				}
				n.depRequired[name] = c.names(list, at+"/"+k+"/"+escapeToken(name))
			} else if k != "dependentRequired" {
				if n.depSchemas == nil {
					n.depSchemas = map[string]*node{}
				}
				n.depSchemas[name] = c.node(deps[name], at+"/"+k+"/"+escapeToken(name))
			} else {
				c.fail(at+"/"+k, "must map names to arrays of names")
			}
		}
	}

	n.prefix = c.list(m, "prefixItems", at)
	if _, isList := m["items"].([]any); isList {
		n.prefix, n.items = c.list(m, "items", at), c.sub(m, "additionalItems", at)
	} else {
		n.items = c.sub(m, "items", at)
	}
	n.contains, n.unevalItems = c.sub(m, "contains", at), c.sub(m, "unevaluatedItems", at)
	if props, ok := m["properties"].(map[string]any); ok {
		n.props = make(map[string]*node, len(props))
		for name, p := range props {
			n.props[name] = c.node(p, at+"/properties/"+escapeToken(name))
		}
		n.declared = slices.Sorted(maps.Keys(props))
	}
	pp, _ := m["patternProperties"].(map[string]any)
	for _, p := range slices.Sorted(maps.Keys(pp)) {
		re, err := regexp.Compile(p)
		if err != nil {
			c.fail(at+"/patternProperties", "%.100q is not a valid regular expression", p)
			continue
		}
		n.patterns = append(n.patterns, patternProp{re, c.node(pp[p], at+"/patternProperties/"+escapeToken(p))})
	}
	n.additional, n.propNames = c.sub(m, "additionalProperties", at), c.sub(m, "propertyNames", at)
	n.unevalProps = c.sub(m, "unevaluatedProperties", at)
	for _, k := range []string{"$defs", "definitions"} {
		defs, _ := m[k].(map[string]any)
		for name, d := range defs {
			c.node(d, at+"/"+k+"/"+escapeToken(name))
		}
	}
}

func (c *compiler) sub(m map[string]any, k, at string) *node {
	if v, ok := m[k]; ok {
		return c.node(v, at+"/"+k)
	}
	return nil
}

func (c *compiler) list(m map[string]any, k, at string) []*node {
	v, ok := m[k]
	if !ok {
		return nil
	}
	list, ok := v.([]any)
	if !ok || len(list) == 0 && k != "prefixItems" && k != "items" {
		c.fail(at+"/"+k, "must be a non-empty array of schemas")
		return nil
	}
	out := make([]*node, len(list))
	for i, s := range list {
		out[i] = c.node(s, fmt.Sprintf("%s/%s/%d", at, k, i))
	}
	return out
}

func (c *compiler) number(m map[string]any, k, at string) *float64 {
	v, ok := m[k]
	if !ok {
		return nil
	}
	f, ok := v.(float64)
	if !ok {
		c.fail(at, "%s must be a number", k)
		return nil
	}
	return &f
}

func (c *compiler) count(m map[string]any, k, at string) int {
	v, ok := m[k]
	if !ok {
		return -1
	}
	f, ok := v.(float64)
	if !ok || f < 0 || f != math.Trunc(f) || f > math.MaxInt32 {
		c.fail(at, "%s must be a non-negative integer", k)
		return -1
	}
	return int(f)
}

func (c *compiler) regexp(m map[string]any, k, at string) *regexp.Regexp {
	v, ok := m[k]
	if !ok {
		return nil
	}
	s, _ := v.(string)
	re, err := regexp.Compile(s)
	if err != nil || !ok {
		c.fail(at, "%s is not a valid regular expression", k)
	}
	return re
}

func (c *compiler) names(v any, at string) []string {
	if v == nil {
		return nil
	}
	list, ok := v.([]any)
	out := make([]string, 0, len(list))
	for _, e := range list {
		s, isString := e.(string)
		ok = ok && isString
		out = append(out, s)
	}
	if !ok {
		c.fail(at, "must be an array of strings")
	}
	return out
}

// resolve returns the node a reference names: the root, a JSON pointer
// into it, or an anchor, optionally after the root's $id.
func (c *compiler) resolve(n *node) *node {
	ref := n.ref
	if id, ok := c.root["$id"].(string); ok && id != "" {
		ref = strings.TrimPrefix(ref, strings.TrimSuffix(id, "#"))
	}
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		c.fail(n.refAt, "the reference %.100q leaves the schema: only references inside it are read", n.ref)
		return nil
	}
	if frag != "" && !strings.HasPrefix(frag, "/") {
		if t := c.anchors[frag]; t != nil {
			return t
		}
		c.fail(n.refAt, "the reference %.100q names no anchor of the schema", n.ref)
		return nil
	}
	t, ok := Lookup(c.root, frag)
	if !ok {
		c.fail(n.refAt, "the reference %.100q names nothing in the schema", n.ref)
		return nil
	}
	return c.node(t, frag)
}

// acyclic refuses a reference that leads back to its own place without
// descending into the value: validating would never end.
func (c *compiler) acyclic(n *node, state map[*node]uint8) {
	if n == nil || state[n] == 2 || len(c.errs) > 0 {
		return
	}
	if state[n] == 1 {
		c.fail(n.at, "a reference leads back to it without descending into the value")
		return
	}
	state[n] = 1
	next := append([]*node{n.target, n.not, n.ifS, n.thenS, n.elsS}, n.allOf...)
	next = append(append(next, n.anyOf...), n.oneOf...)
	for _, name := range slices.Sorted(maps.Keys(n.depSchemas)) {
		next = append(next, n.depSchemas[name])
	}
	for _, t := range next {
		c.acyclic(t, state)
	}
	state[n] = 2
}

// discriminator returns the property that tells m's oneOf branches apart
// (OpenAPI's discriminator, or a property every branch pins to one string
// with const or a one-value enum) and the branch of each of its values,
// or "".
func (c *compiler) discriminator(m map[string]any) (string, map[string]*node) {
	branches := m["oneOf"].([]any)
	pinned := func(b any, prop string) (string, bool) {
		bm, _ := b.(map[string]any)
		props, _ := bm["properties"].(map[string]any)
		p, _ := props[prop].(map[string]any)
		if s, ok := p["const"].(string); ok {
			return s, true
		}
		if e, _ := p["enum"].([]any); len(e) == 1 {
			s, ok := e[0].(string)
			return s, ok
		}
		return "", false
	}
	var names []string
	if d, ok := m["discriminator"].(map[string]any); ok {
		if p, ok := d["propertyName"].(string); ok {
			names = []string{p}
		}
	} else if first, ok := branches[0].(map[string]any); ok {
		props, _ := first["properties"].(map[string]any)
		names = slices.Sorted(maps.Keys(props))
	}
	for _, prop := range names {
		byValue := map[string]*node{}
		for _, b := range branches {
			if v, ok := pinned(b, prop); ok {
				byValue[v] = c.node(b, "")
			}
		}
		if len(byValue) == len(branches) {
			return prop, byValue
		}
	}
	return "", nil
}

var jsonTypes = []string{"null", "boolean", "object", "array", "number", "integer", "string"}
