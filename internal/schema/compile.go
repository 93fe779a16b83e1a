package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// info is what Compile adds to one schema the library parsed.
type info struct {
	at            string             // its JSON pointer in the root, for Compile's errors
	target        *jsonschema.Schema // what its $ref or $dynamicRef names
	pattern       *regexp.Regexp
	patterns      []patternProp
	rejects       bool // false, or {"not": {}}: nothing matches
	discriminator string
	byValue       map[string]*jsonschema.Schema // the oneOf branch of each discriminator value
	declared      []string                      // its properties' names, sorted
}

type patternProp struct {
	re *regexp.Regexp
	s  *jsonschema.Schema
}

// Compile returns the Validator of a JSON Schema (draft 2020-12) object,
// such as internal/oas produces from the spec or an MCP server sends, for
// values going in the given direction. google/jsonschema-go parses and
// resolves it; Compile then indexes its references and compiles its
// regular expressions: build it once and keep it.
//
// Every schema is read as draft 2020-12, whatever $schema says, with
// draft-07's array form of items (and additionalItems), dependencies and
// definitions read too. References are JSON pointers or anchors inside
// the schema, which is one document: $id is allowed at its root only, so
// $dynamicRef resolves as $ref does. format is enforced for date-time and
// date (RFC 3339, with a real day of the month), byte (base64) and the
// ranges of int32 and int64, which the spec relies on; other formats and
// unknown keywords are annotations.
func Compile(m map[string]any, dir Direction) (*Validator, error) {
	if m == nil {
		return nil, errors.New("schema: nil schema")
	}
	data, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	var root jsonschema.Schema
	if err := json.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	root.Schema = ""
	if _, err := root.Resolve(nil); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	v := &Validator{dir: dir, root: &root, info: map[*jsonschema.Schema]*info{}}
	c := &compiler{v: v, byPointer: map[string]*jsonschema.Schema{}, anchors: map[string]*jsonschema.Schema{}}
	c.walk(&root, "")
	for s, in := range v.info {
		c.index(s, in)
	}
	if len(c.errs) == 0 {
		c.acyclic(&root, map[*jsonschema.Schema]uint8{})
	}
	if err := errors.Join(c.errs...); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	return v, nil
}

type compiler struct {
	v         *Validator
	byPointer map[string]*jsonschema.Schema
	anchors   map[string]*jsonschema.Schema
	errs      []error
}

func (c *compiler) fail(at, format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf("%s: "+format, append([]any{Where(at)}, args...)...))
}

// walk records every schema in s, with its JSON pointer and its anchors.
func (c *compiler) walk(s *jsonschema.Schema, at string) {
	if s == nil || c.v.info[s] != nil {
		return
	}
	c.v.info[s] = &info{at: at}
	c.byPointer[at] = s
	for _, a := range []string{s.Anchor, s.DynamicAnchor} {
		if a != "" {
			c.anchors[a] = s
		}
	}
	if s.ID != "" && at != "" {
		c.fail(at, "sets $id: a schema is one document, with $id at its root only")
	}
	for k, sub := range map[string]*jsonschema.Schema{"items": s.Items, "additionalItems": s.AdditionalItems,
		"contains": s.Contains, "unevaluatedItems": s.UnevaluatedItems, "additionalProperties": s.AdditionalProperties,
		"propertyNames": s.PropertyNames, "unevaluatedProperties": s.UnevaluatedProperties, "not": s.Not,
		"if": s.If, "then": s.Then, "else": s.Else, "contentSchema": s.ContentSchema} {
		c.walk(sub, at+"/"+k)
	}
	for k, list := range map[string][]*jsonschema.Schema{"prefixItems": s.PrefixItems, "items": s.ItemsArray,
		"allOf": s.AllOf, "anyOf": s.AnyOf, "oneOf": s.OneOf} {
		for i, sub := range list {
			c.walk(sub, at+"/"+k+"/"+strconv.Itoa(i))
		}
	}
	for k, subs := range map[string]map[string]*jsonschema.Schema{"$defs": s.Defs, "definitions": s.Definitions,
		"properties": s.Properties, "patternProperties": s.PatternProperties,
		"dependentSchemas": s.DependentSchemas, "dependencies": s.DependencySchemas} {
		for name, sub := range subs {
			c.walk(sub, at+"/"+k+"/"+escapeToken(name))
		}
	}
}

// index fills in what validating s needs besides the library's fields.
func (c *compiler) index(s *jsonschema.Schema, in *info) {
	for _, t := range append(s.Types, s.Type) {
		if t != "" && !slices.Contains(jsonTypes, t) {
			c.fail(in.at, "type %.40q is not a JSON type", t)
		}
	}
	if ref := cmp(s.Ref, s.DynamicRef); ref != "" {
		in.target = c.resolve(ref, in.at)
	}
	if s.Pattern != "" {
		in.pattern = regexp.MustCompile(s.Pattern) // Resolve compiled it
	}
	for _, p := range slices.Sorted(maps.Keys(s.PatternProperties)) {
		in.patterns = append(in.patterns, patternProp{regexp.MustCompile(p), s.PatternProperties[p]})
	}
	data, _ := json.Marshal(s)
	in.rejects = slices.Contains([]string{"false", `{"not":true}`, `{"not":{}}`}, string(data))
	in.declared = slices.Sorted(maps.Keys(s.Properties))
	if len(s.OneOf) > 0 {
		in.discriminator, in.byValue = discriminator(s)
	}
}

func cmp(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// resolve returns the schema a reference names: the root, a JSON pointer
// into it or an anchor, optionally after the root's $id.
func (c *compiler) resolve(ref, at string) *jsonschema.Schema {
	if id := strings.TrimSuffix(c.v.root.ID, "#"); id != "" {
		ref = strings.TrimPrefix(ref, id)
	}
	frag, _ := strings.CutPrefix(ref, "#")
	t := c.byPointer[frag]
	if frag != "" && !strings.HasPrefix(frag, "/") {
		t = c.anchors[frag]
	}
	if t == nil {
		c.fail(at, "the reference %.100q names nothing specloop reads in the schema", ref)
	}
	return t
}

// acyclic refuses a reference that leads back to its own place without
// descending into the value: validating would never end.
func (c *compiler) acyclic(s *jsonschema.Schema, state map[*jsonschema.Schema]uint8) {
	if s == nil || state[s] == 2 || len(c.errs) > 0 {
		return
	}
	if state[s] == 1 {
		c.fail(c.v.info[s].at, "a reference leads back to it without descending into the value")
		return
	}
	state[s] = 1
	next := append([]*jsonschema.Schema{c.v.info[s].target, s.Not, s.If, s.Then, s.Else}, s.AllOf...)
	next = append(append(next, s.AnyOf...), s.OneOf...)
	for _, deps := range []map[string]*jsonschema.Schema{s.DependentSchemas, s.DependencySchemas} {
		for _, name := range slices.Sorted(maps.Keys(deps)) {
			next = append(next, deps[name])
		}
	}
	for _, t := range next {
		c.acyclic(t, state)
	}
	state[s] = 2
}

// discriminator returns the property that tells s's oneOf branches apart
// (OpenAPI's discriminator, or a property every branch pins to one string
// with const or a one-value enum) and the branch of each of its values,
// or "".
func discriminator(s *jsonschema.Schema) (string, map[string]*jsonschema.Schema) {
	pinned := func(b *jsonschema.Schema, prop string) (string, bool) {
		p := b.Properties[prop]
		switch {
		case p == nil:
		case p.Const != nil:
			c, ok := (*p.Const).(string)
			return c, ok
		case len(p.Enum) == 1:
			c, ok := p.Enum[0].(string)
			return c, ok
		}
		return "", false
	}
	names := slices.Sorted(maps.Keys(s.OneOf[0].Properties))
	if d, ok := s.Extra["discriminator"].(map[string]any); ok {
		p, _ := d["propertyName"].(string)
		names = []string{p}
	}
	for _, prop := range names {
		byValue := map[string]*jsonschema.Schema{}
		for _, b := range s.OneOf {
			if v, ok := pinned(b, prop); ok {
				byValue[v] = b
			}
		}
		if len(byValue) == len(s.OneOf) {
			return prop, byValue
		}
	}
	return "", nil
}

var jsonTypes = []string{"null", "boolean", "object", "array", "number", "integer", "string"}
