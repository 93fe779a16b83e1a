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
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/specloop/specloop/internal/textclip"
)

// Direction says which side of an exchange a value is on, which decides
// whether readOnly or writeOnly properties are refused, as OpenAPI says.
type Direction int

const (
	// Request values (tool arguments, request bodies) must not carry readOnly
	// properties; a readOnly property is not required in them.
	Request Direction = iota
	// Response values (tool results, response bodies) must not carry
	// writeOnly properties; a writeOnly property is not required in them.
	Response
	// Neither is for values that are not sent in either direction, such as
	// a model's action or a trace line: readOnly and writeOnly are not
	// checked.
	Neither
)

// Validator checks decoded JSON values against one schema, as
// google/jsonschema-go validates it: prepared (readOnly/writeOnly and the
// enforced formats written as keywords the library checks) and resolved,
// with its quick check. It is immutable and safe for concurrent use.
type Validator struct {
	dir      Direction
	root     map[string]any
	resolved *resolved
}

// Compile returns the Validator of a JSON Schema (draft 2020-12) object,
// such as internal/oas produces from the spec or an MCP server sends, for
// values going in the given direction. Compiling resolves the schema's
// references and regular expressions: build it once and keep it.
//
// google/jsonschema-go treats format as an annotation; Compile enforces
// the formats kin-openapi enforced by default, which the spec relies on:
// date-time and date (RFC 3339, with a real day of the month), byte
// (base64) and the ranges of int32 and int64. Other formats are
// annotations. A $schema the library does not know is ignored: the schema
// is read as draft 2020-12.
func Compile(s map[string]any, dir Direction) (*Validator, error) {
	if s == nil {
		return nil, errors.New("schema: nil schema")
	}
	root, err := prepare(s, dir)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	if v, ok := root["$schema"].(string); ok && !slices.Contains(knownDrafts, v) {
		delete(root, "$schema")
	}
	if err := check(root); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	rs, err := resolve(root)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	return &Validator{dir: dir, root: root, resolved: rs}, nil
}

// check refuses what the library accepts but cannot use: a type that is
// not a JSON type, and a reference that leads back to its own place
// without descending into the value (the library would recurse without
// end).
func check(root map[string]any) error {
	l := &locator{c: &Validator{root: root}}
	var errs []error
	state := map[uintptr]uint8{} // 1: being followed, 2: done
	var follow func(m map[string]any, at string)
	follow = func(m map[string]any, at string) {
		k := reflect.ValueOf(m).Pointer()
		switch state[k] {
		case 1:
			errs = append(errs, fmt.Errorf("%s: a reference leads back to it without descending into the value", Where(at)))
			return
		case 2:
			return
		}
		state[k] = 1
		var next []any
		if r, ok := m["$ref"].(string); ok {
			next = append(next, l.ref(r))
		}
		for _, key := range []string{"allOf", "anyOf", "oneOf"} {
			list, _ := m[key].([]any)
			next = append(next, list...)
		}
		for _, key := range []string{"not", "if", "then", "else"} {
			next = append(next, m[key])
		}
		deps, _ := m["dependentSchemas"].(map[string]any)
		for _, d := range deps {
			next = append(next, d)
		}
		for _, n := range next {
			if nm, ok := n.(map[string]any); ok && len(errs) == 0 {
				follow(nm, at)
			}
		}
		state[k] = 2
	}
	walkSchemas(root, "", func(m map[string]any, at string) {
		if types, ok := m["type"]; ok {
			for _, t := range typeList(types) {
				if !slices.Contains(jsonTypes, t) {
					errs = append(errs, fmt.Errorf("%s: type %.40v is not a JSON type", Where(at), t))
				}
			}
		}
		if len(errs) == 0 {
			follow(m, at)
		}
	})
	return errors.Join(errs...)
}

var jsonTypes = []any{"null", "boolean", "object", "array", "number", "integer", "string"}

// Where names the place at (a JSON pointer) of a schema in a message.
func Where(at string) string {
	if at == "" {
		return "the schema's root"
	}
	return at
}

// knownDrafts are the $schema values google/jsonschema-go validates.
var knownDrafts = []string{
	"https://json-schema.org/draft/2020-12/schema",
	"http://json-schema.org/draft-07/schema#",
	"https://json-schema.org/draft-07/schema#",
}

// resolved is a schema the library resolved and, when it has one, its
// quick check.
type resolved struct {
	*jsonschema.Resolved
	quick func(any) bool
}

// valid reports whether v matches: the quick check's yes, or the
// library's verdict.
func (r *resolved) valid(v any) bool {
	return r.quick != nil && r.quick(v) || r.Validate(v) == nil
}

func resolve(s any) (*resolved, error) {
	data, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	var js jsonschema.Schema
	if err := json.Unmarshal(data, &js); err != nil {
		return nil, err
	}
	rs, err := js.Resolve(nil)
	if err != nil {
		return nil, err
	}
	return &resolved{Resolved: rs, quick: quick(rs)}, nil
}

// Validate checks a decoded value (as Decode or encoding/json produce it)
// and returns nil or an *Error for the first problem found. It asks the
// quick check or the library, and only when the value does not match walks
// the schema and the value to say where and why: the library's messages
// quote the value, which may be a secret.
func (v *Validator) Validate(value any) error {
	if v.resolved.valid(value) {
		return nil
	}
	l := &locator{c: v}
	if e := l.at(v.root, value, nil, 0); e != nil {
		return e
	}
	return &Error{Reason: "does not match the schema"}
}

// The keywords whose values are schemas, lists of schemas and maps of
// schemas.
var (
	schemaKeys     = []string{"items", "additionalItems", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames", "unevaluatedItems", "unevaluatedProperties"}
	schemaListKeys = []string{"allOf", "anyOf", "oneOf", "prefixItems", "items"}
	schemaMapKeys  = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
)

// prepare copies a schema, as JSON, with what the library does not check
// written as keywords it does: a property the direction bars (readOnly in
// a request, writeOnly in a response) becomes a false schema that keeps
// its marker and is no longer required, and an enforced format adds its
// pattern or range to allOf. The original is not modified.
func prepare(s map[string]any, dir Direction) (map[string]any, error) {
	data, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	var root map[string]any
	if err := json.Unmarshal(data, &root); err != nil {
		return nil, err
	}
	walkSchemas(root, "", func(m map[string]any, _ string) {
		if props, ok := m["properties"].(map[string]any); ok && dir != Neither {
			for name, p := range props {
				if pm, ok := p.(map[string]any); ok && pm[barred[dir].marker] == true {
					props[name] = map[string]any{"not": map[string]any{}, barred[dir].marker: true}
					if req, ok := m["required"].([]any); ok {
						m["required"] = slices.DeleteFunc(req, func(r any) bool { return r == name })
					}
				}
			}
		}
		if f, ok := m["format"].(string); ok && formats[f] != nil {
			all, _ := m["allOf"].([]any)
			m["allOf"] = append(all, formats[f])
		}
	})
	return root, nil
}

// barred is the marker of the properties a direction refuses, and what a
// value of one is told.
var barred = map[Direction]struct{ marker, reason string }{
	Request:  {"readOnly", "is read-only and not allowed in a request"},
	Response: {"writeOnly", "is write-only and not allowed in a response"},
}

// formats are the formats Compile enforces, as the keywords that check
// them: kin-openapi's defaults, which the spec's date-times rely on.
var formats = map[string]map[string]any{
	"date-time": {"pattern": "^" + date + `T([01][0-9]|2[0-3]):[0-5][0-9]:([0-5][0-9]|60)(\.[0-9]+)?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$`},
	"date":      {"pattern": "^" + date + "$"},
	"byte":      {"pattern": `^[a-zA-Z0-9+/\-_]*=*$`},
	"int32":     {"minimum": math.MinInt32, "maximum": math.MaxInt32},
	"int64":     {"minimum": math.MinInt64, "exclusiveMaximum": -float64(math.MinInt64)},
}

// date is an RFC 3339 full-date with a day that exists: 30 days hath
// September, and February 29 only in leap years.
const date = `(?:[0-9]{4}-(?:(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])|(?:0[13-9]|1[0-2])-(?:29|30)|(?:0[13578]|1[02])-31)` +
	`|(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)-02-29)`

// locator finds the first problem of a value the library refused, by
// asking the library about each part of the schema that applies to each
// part of the value, and says it with what the schema holds.
type locator struct {
	c        *Validator
	places   map[uintptr]string // each part of the root: its JSON pointer
	resolved map[string]*resolved
}

// maxLocate bounds the walk; schemas and values are bounded already.
const maxLocate = 1024

// rootID is the base URI the locator gives a root without $id, so that a
// part of it can be validated alone with the root's references intact.
const rootID = "urn:specloop:schema"

// matcher returns whether values match s: a part of the root, validated in
// the root's context (its references resolve as in the root), or a schema
// the locator made of one keyword, validated alone. A part that cannot be
// resolved counts as not matching, so the walk goes into it.
func (l *locator) matcher(s any) func(any) bool {
	switch s := s.(type) {
	case bool:
		return func(any) bool { return s }
	case map[string]any:
		if l.places == nil {
			l.places, l.resolved = map[uintptr]string{}, map[string]*resolved{}
			walkSchemas(l.c.root, "", func(m map[string]any, at string) {
				if _, seen := l.places[reflect.ValueOf(m).Pointer()]; !seen {
					l.places[reflect.ValueOf(m).Pointer()] = at
				}
			})
		}
		var rs *resolved
		var err error
		if at, ok := l.places[reflect.ValueOf(s).Pointer()]; ok {
			rs, ok = l.resolved[at]
			if !ok {
				rs, err = l.inRoot(at)
				l.resolved[at] = rs
			}
		} else {
			rs, err = resolve(s)
		}
		if rs == nil || err != nil {
			return func(any) bool { return false }
		}
		return rs.valid
	}
	return func(any) bool { return true }
}

// inRoot resolves the part of the root at JSON pointer at, as a reference
// into a copy of the root.
func (l *locator) inRoot(at string) (*resolved, error) {
	root := maps.Clone(l.c.root)
	id, _ := root["$id"].(string)
	if id == "" {
		id = rootID
		root["$id"] = id
	}
	wrapper := map[string]any{"$defs": map[string]any{"root": root}, "$ref": id + "#" + at}
	if draft, ok := root["$schema"]; ok {
		wrapper["$schema"] = draft
		delete(root, "$schema")
	}
	return resolve(wrapper)
}

// walkSchemas calls f with every schema object in s and its JSON pointer.
func walkSchemas(s any, at string, f func(map[string]any, string)) {
	m, ok := s.(map[string]any)
	if !ok {
		return
	}
	f(m, at)
	for _, k := range schemaKeys {
		walkSchemas(m[k], at+"/"+k, f)
	}
	for _, k := range schemaListKeys {
		list, _ := m[k].([]any)
		for i, x := range list {
			walkSchemas(x, at+"/"+k+"/"+strconv.Itoa(i), f)
		}
	}
	for _, k := range schemaMapKeys {
		sub, _ := m[k].(map[string]any)
		for name, x := range sub {
			walkSchemas(x, at+"/"+k+"/"+escapeToken(name), f)
		}
	}
}

func (l *locator) matches(s, x any) bool { return l.matcher(s)(x) }

// ref returns the part of the root a local $ref names, or nil.
func (l *locator) ref(ref string) any {
	p, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil
	}
	at, _ := Lookup(l.c.root, p)
	return at
}

// localKeywords are the keywords checked at one place, in the order their
// problems are reported.
var localKeywords = []string{
	"type", "const", "enum", "format",
	"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
	"minLength", "maxLength", "pattern",
	"minItems", "maxItems", "uniqueItems",
	"minProperties", "maxProperties", "dependentRequired",
}

// at returns the first problem of x (at ptr) against s, or nil when it
// finds none.
func (l *locator) at(s, x any, ptr []string, depth int) *Error {
	fail := func(reason string) *Error { return errAt(ptr, reason) }
	m, ok := s.(map[string]any)
	if !ok {
		if s == false {
			return fail("is not allowed")
		}
		return nil
	}
	if depth++; depth > maxLocate {
		return nil
	}
	if r, ok := m["$ref"].(string); ok {
		if t := l.ref(r); t != nil && !l.matches(t, x) {
			return l.at(t, x, ptr, depth)
		}
	}
	for _, k := range localKeywords {
		sub := map[string]any{k: m[k]}
		if k == "format" {
			f, _ := m[k].(string)
			sub = formats[f]
		}
		if m[k] != nil && sub != nil && !l.matches(sub, x) {
			return fail(reason(k, m))
		}
	}
	if e := l.composite(m, x, ptr, depth); e != nil {
		return e
	}
	switch x := x.(type) {
	case []any:
		if c, ok := m["contains"]; ok && !slices.ContainsFunc(x, l.matcher(c)) {
			return fail("must contain an item that matches its schema")
		}
		return l.array(m, x, ptr, depth)
	case map[string]any:
		if names, ok := m["propertyNames"]; ok {
			matches := l.matcher(names)
			for k := range x {
				if !matches(k) {
					return fail("must have property names that match their schema")
				}
			}
		}
		return l.object(m, x, ptr, depth)
	}
	return nil
}

func (l *locator) composite(m map[string]any, x any, ptr []string, depth int) *Error {
	fail := func(reason string) *Error { return errAt(ptr, reason) }
	if all, ok := m["allOf"].([]any); ok {
		for _, b := range all {
			if !l.matches(b, x) {
				if e := l.at(b, x, ptr, depth); e != nil {
					return e
				}
				return fail("does not match the schema")
			}
		}
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		branches, ok := m[k].([]any)
		if !ok {
			continue
		}
		if k == "oneOf" {
			if e, ok := l.discriminated(m, branches, x, ptr, depth); ok {
				return e
			}
		}
		var valid, candidates []any
		for _, b := range branches {
			if l.matches(b, x) {
				valid = append(valid, b)
			}
			if bm, _ := b.(map[string]any); x == nil || bm["type"] != "null" {
				candidates = append(candidates, b)
			}
		}
		switch {
		case len(valid) == 0 && len(candidates) == 1:
			return l.at(candidates[0], x, ptr, depth)
		case len(valid) == 0 && k == "anyOf":
			return fail("must match at least one of its schemas")
		case len(valid) != 1 && k == "oneOf":
			return fail("must match exactly one of its schemas")
		}
	}
	if not, ok := m["not"]; ok && l.matches(not, x) {
		return fail("must not match its schema")
	}
	if cond, ok := m["if"]; ok {
		next := m["else"]
		if l.matches(cond, x) {
			next = m["then"]
		}
		if next != nil && !l.matches(next, x) {
			return l.at(next, x, ptr, depth)
		}
	}
	return nil
}

// discriminated reports the problem of a value against a oneOf whose
// branches are told apart by one property (OpenAPI's discriminator, or a
// property every branch pins to one value): the property's problem, or the
// chosen branch's. ok is false when the oneOf is not of that kind.
func (l *locator) discriminated(m map[string]any, branches []any, x any, ptr []string, depth int) (*Error, bool) {
	prop, byValue := discriminator(m, branches)
	if prop == "" {
		return nil, false
	}
	obj, isObject := x.(map[string]any)
	if !isObject {
		return errAt(ptr, "must be an object"), true
	}
	at := pointer(append(slices.Clip(ptr), prop))
	v, present := obj[prop]
	name, isString := v.(string)
	branch, known := byValue[name]
	switch {
	case !present:
		return &Error{Pointer: at, Reason: "is required"}, true
	case !isString:
		return &Error{Pointer: at, Reason: "must be a string"}, true
	case !known:
		return &Error{Pointer: at, Reason: "must be one of " + strings.Join(slices.Sorted(maps.Keys(byValue)), ", ")}, true
	case !l.matches(branch, x):
		return l.at(branch, x, ptr, depth), true
	}
	return errAt(ptr, "must match exactly one of its schemas"), true
}

// discriminator returns the property that tells m's oneOf branches apart
// and the branch of each of its values, or "".
func discriminator(m map[string]any, branches []any) (string, map[string]any) {
	pinned := func(b any, prop string) (string, bool) {
		bm, _ := b.(map[string]any)
		props, _ := bm["properties"].(map[string]any)
		p, _ := props[prop].(map[string]any)
		if c, ok := p["const"].(string); ok {
			return c, true
		}
		if e, _ := p["enum"].([]any); len(e) == 1 {
			c, ok := e[0].(string)
			return c, ok
		}
		return "", false
	}
	if len(branches) == 0 {
		return "", nil
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
		byValue := map[string]any{}
		for _, b := range branches {
			if v, ok := pinned(b, prop); ok {
				byValue[v] = b
			}
		}
		if len(byValue) == len(branches) {
			return prop, byValue
		}
	}
	return "", nil
}

func (l *locator) array(m map[string]any, x []any, ptr []string, depth int) *Error {
	prefix, _ := m["prefixItems"].([]any)
	rest := m["items"]
	if list, ok := rest.([]any); ok {
		prefix, rest = list, m["additionalItems"]
	}
	var restMatches func(any) bool
	for i, e := range x {
		child, matches := rest, restMatches
		if i < len(prefix) {
			child, matches = prefix[i], l.matcher(prefix[i])
		} else if child == nil {
			break
		} else if matches == nil {
			restMatches = l.matcher(rest)
			matches = restMatches
		}
		if !matches(e) {
			return l.at(child, e, append(slices.Clip(ptr), strconv.Itoa(i)), depth)
		}
	}
	return nil
}

func (l *locator) object(m map[string]any, x map[string]any, ptr []string, depth int) *Error {
	props, _ := m["properties"].(map[string]any)
	patterns, _ := m["patternProperties"].(map[string]any)
	extra, hasExtra := m["additionalProperties"]
	required, _ := m["required"].([]any)
	for _, k := range slices.Sorted(maps.Keys(x)) {
		at := append(slices.Clip(ptr), k)
		var children []any
		if child, ok := props[k]; ok {
			if cm, ok := child.(map[string]any); ok && cm[barred[l.c.dir].marker] == true {
				return errAt(at, barred[l.c.dir].reason)
			}
			children = append(children, child)
		}
		for _, p := range slices.Sorted(maps.Keys(patterns)) {
			if re, err := regexp.Compile(p); err == nil && re.MatchString(k) {
				children = append(children, patterns[p])
			}
		}
		if len(children) == 0 && hasExtra {
			if isFalse(extra) {
				return &Error{Pointer: pointer(at), Reason: "is not allowed", Unknown: true, Allowed: slices.Sorted(maps.Keys(props))}
			}
			children = append(children, extra)
		}
		for _, child := range children {
			if !l.matches(child, x[k]) {
				if x[k] == nil && slices.Contains(required, any(k)) {
					return errAt(at, "is required and must not be null")
				}
				if e := l.at(child, x[k], at, depth); e != nil {
					return e
				}
				return errAt(at, "does not match the schema")
			}
		}
	}
	for _, r := range required {
		if name, ok := r.(string); ok {
			if _, present := x[name]; !present {
				return errAt(append(slices.Clip(ptr), name), "is required")
			}
		}
	}
	return nil
}

// isFalse reports whether s is the schema no value matches, as false or
// {"not": {}}.
func isFalse(s any) bool {
	if m, ok := s.(map[string]any); ok {
		not, ok := m["not"].(map[string]any)
		return ok && len(m) == 1 && len(not) == 0
	}
	return s == false
}

// reasons say, in the style of the project's messages, why a value fails
// a keyword; {} stands for the keyword's value in the schema.
var reasons = map[string]string{
	"const":            "must be {}",
	"format":           "must be a valid {}",
	"minimum":          "must be at least {}",
	"maximum":          "must be at most {}",
	"exclusiveMinimum": "must be greater than {}",
	"exclusiveMaximum": "must be less than {}",
	"multipleOf":       "must be a multiple of {}",
	"minLength":        "must be at least {} characters long",
	"maxLength":        "must be at most {} characters long",
	"minItems":         "must have at least {} items",
	"maxItems":         "must have at most {} items",
	"uniqueItems":      "must not contain duplicate items",
	"minProperties":    "must have at least {} properties",
	"maxProperties":    "must have at most {} properties",
}

// reason says why a value fails keyword k of m. It quotes only the
// schema, never the value.
func reason(k string, m map[string]any) string {
	v := m[k]
	switch k {
	case "type":
		return "must be " + typeNames(v)
	case "enum":
		list, _ := v.([]any)
		shown := make([]string, len(list))
		for i, e := range list {
			shown[i] = fmt.Sprint(e)
		}
		return "must be one of " + strings.Join(shown, ", ")
	case "pattern":
		return "must match the pattern " + strconv.Quote(textclip.Clip(fmt.Sprint(v), 200))
	}
	if r, ok := reasons[k]; ok {
		return strings.ReplaceAll(r, "{}", fmt.Sprint(v))
	}
	return "does not match the schema (" + k + ")"
}

// typeNames says which types a schema's type keyword allows: "a string",
// "an integer or null".
func typeNames(t any) string {
	var names []string
	for _, t := range typeList(t) {
		switch t {
		case "array", "object", "integer":
			names = append(names, "an "+t.(string))
		case "null":
			names = append(names, "null")
		default:
			names = append(names, "a "+fmt.Sprint(t))
		}
	}
	if len(names) == 0 {
		return "of another type"
	}
	return strings.Join(names, " or ")
}

// typeList is the list of types a type keyword's value names.
func typeList(t any) []any {
	if list, ok := t.([]any); ok {
		return list
	}
	return []any{t}
}

// Error is a value that does not match its schema (or its Go type). Neither
// field ever contains the submitted value: Reason quotes only what comes
// from the schema, such as enum values, bounds and patterns.
type Error struct {
	// Pointer is the RFC 6901 JSON pointer to the offending value, such as
	// "/arguments/operation", or "" for the whole value. For a missing
	// required property it points at where the property should be.
	Pointer string
	// Reason says what is wrong, such as "is required" or "must be one of
	// add, subtract, multiply, divide".
	Reason string
	// Unknown is set when Pointer's last token is a property the schema
	// does not declare: the sender's text, which a reply to a client
	// must not repeat.
	Unknown bool
	// Allowed, when Unknown is set, are the properties the object's schema
	// declares, sorted.
	Allowed []string
}

// Error formats the error as `field "/pointer": reason`, or as
// "value: reason" when the problem is the whole value.
func (e *Error) Error() string {
	if e.Pointer == "" {
		return "value: " + e.Reason
	}
	return "field " + quotePointer(e.Pointer) + ": " + e.Reason
}

// errAt is the problem reason at the reference tokens ptr.
func errAt(ptr []string, reason string) *Error { return &Error{Pointer: pointer(ptr), Reason: reason} }

// pointer renders reference tokens as an RFC 6901 JSON pointer.
func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(escapeToken(t))
	}
	return b.String()
}

func escapeToken(t string) string {
	return strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1")
}

// Lookup returns what the RFC 6901 JSON pointer ptr ("" for the whole)
// names in the decoded document doc; false when it names nothing.
func Lookup(doc any, ptr string) (any, bool) {
	if ptr == "" {
		return doc, true
	}
	rest, ok := strings.CutPrefix(ptr, "/")
	if !ok {
		return nil, false
	}
	for tok := range strings.SplitSeq(rest, "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := doc.(type) {
		case map[string]any:
			doc, ok = x[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if ok = err == nil && i >= 0 && i < len(x); ok {
				doc = x[i]
			}
		default:
			ok = false
		}
		if !ok {
			return nil, false
		}
	}
	return doc, true
}

// MaxPointer is the longest pointer, in bytes, an error message shows: keys
// are the model's or the client's and may be long.
const MaxPointer = 256

// quotePointer quotes p for a message, clipped to MaxPointer bytes and
// saying so.
func quotePointer(p string) string {
	if len(p) <= MaxPointer {
		return strconv.Quote(p)
	}
	return strconv.Quote(textclip.Clip(p, MaxPointer)) + " (clipped, " + strconv.Itoa(len(p)) + " bytes in all)"
}
