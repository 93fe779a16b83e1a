package schema

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

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

// Validator checks decoded JSON values against one compiled schema. It is
// immutable and safe for concurrent use.
type Validator struct {
	dir  Direction
	root *jsonschema.Schema
	info map[*jsonschema.Schema]*info
}

// Where names the place at (a JSON pointer) of a schema in a message.
func Where(at string) string {
	if at == "" {
		return "the schema's root"
	}
	return at
}

// Validate checks a decoded value (as Decode or encoding/json produce it;
// another Go value is first encoded as JSON and decoded) and returns nil
// or an *Error for the first problem found, in one walk of the schema and
// the value. Problems are looked for keyword by keyword in a fixed order,
// and the properties of an object in the order of their names.
func (v *Validator) Validate(value any) error {
	if !decoded(value) {
		data, err := json.Marshal(value)
		if err != nil {
			return &Error{Reason: "cannot be encoded as JSON"}
		}
		if value, err = Decode(data); err != nil {
			return &Error{Reason: "cannot be encoded as JSON"}
		}
	}
	if e := v.check(v.root, value, true, nil); e != nil {
		slices.Reverse(e.rel)
		e.Pointer, e.rel = pointer(e.rel), nil
		return e
	}
	return nil
}

// decoded reports whether v holds only the types Decode produces, finite
// numbers among them.
func decoded(v any) bool {
	switch v := v.(type) {
	case nil, bool, string:
		return true
	case float64:
		return !math.IsInf(v, 0) && !math.IsNaN(v)
	case []any:
		return !slices.ContainsFunc(v, func(e any) bool { return !decoded(e) })
	case map[string]any:
		for _, e := range v {
			if !decoded(e) {
				return false
			}
		}
		return true
	}
	return false
}

// under returns e, a problem of the value at token tok of its parent, as
// a problem of the parent: pointers are built on the way back, so that a
// valid value costs none.
func under(e *Error, tok string) *Error {
	if e != nil && e != errNo {
		e.rel = append(e.rel, tok)
	}
	return e
}

// errNo is the answer of a check that does not explain: the value does
// not match.
var errNo = &Error{Reason: "does not match the schema"}

// evaluated is what the keywords of one place have evaluated of an
// object or an array, for unevaluatedProperties and unevaluatedItems.
type evaluated struct {
	props map[string]bool
	items int          // the first items
	found map[int]bool // and those contains matched
}

func (e *evaluated) merge(o *evaluated) {
	for k := range o.props {
		e.props = mapSet(e.props, k)
	}
	e.items = max(e.items, o.items)
	for i := range o.found {
		e.found = mapSet(e.found, i)
	}
}

func mapSet[K comparable](m map[K]bool, k K) map[K]bool {
	if m == nil {
		m = map[K]bool{}
	}
	m[k] = true
	return m
}

// check returns nil when x matches s, else its first problem when
// explain is set, errNo when it is not. ev, when not nil, collects what s
// evaluated of x, when x matches.
func (v *Validator) check(s *jsonschema.Schema, x any, explain bool, ev *evaluated) *Error {
	in := v.info[s]
	if in.rejects {
		if !explain {
			return errNo
		}
		return &Error{Reason: "is not allowed"}
	}
	var here *evaluated
	if ev != nil || s.UnevaluatedProperties != nil || s.UnevaluatedItems != nil {
		here = &evaluated{}
	}
	if in.target != nil {
		if e := v.check(in.target, x, explain, here); e != nil {
			return e
		}
	}
	if k := local(s, in, x); k != "" {
		if !explain {
			return errNo
		}
		return &Error{Reason: reason(k, s)}
	}
	if e := v.composite(s, in, x, explain, here); e != nil {
		return e
	}
	var e *Error
	switch x := x.(type) {
	case []any:
		e = v.array(s, x, explain, here)
	case map[string]any:
		e = v.object(s, in, x, explain, here)
	}
	if e == nil && ev != nil {
		ev.merge(here)
	}
	return e
}

// local returns the first keyword of s that x fails on its own, or "".
func local(s *jsonschema.Schema, in *info, x any) string {
	if s.Type != "" || s.Types != nil {
		t := jsonTypeOf(x)
		if !hasType(s, t) && !(t == "integer" && hasType(s, "number")) {
			return "type"
		}
	}
	if s.Const != nil && !reflect.DeepEqual(x, *s.Const) {
		return "const"
	}
	if s.Enum != nil && !slices.ContainsFunc(s.Enum, func(e any) bool { return reflect.DeepEqual(x, e) }) {
		return "enum"
	}
	if f := formats[s.Format]; f != nil && !f(x) {
		return "format"
	}
	switch x := x.(type) {
	case float64:
		switch {
		case s.Minimum != nil && x < *s.Minimum:
			return "minimum"
		case s.Maximum != nil && x > *s.Maximum:
			return "maximum"
		case s.ExclusiveMinimum != nil && x <= *s.ExclusiveMinimum:
			return "exclusiveMinimum"
		case s.ExclusiveMaximum != nil && x >= *s.ExclusiveMaximum:
			return "exclusiveMaximum"
		}
		if s.MultipleOf != nil {
			// As float64 division: 0.3 is not a multiple of 0.1.
			if _, f := math.Modf(x / *s.MultipleOf); f != 0 {
				return "multipleOf"
			}
		}
	case string:
		if s.MinLength != nil || s.MaxLength != nil {
			switch c := utf8.RuneCountInString(x); {
			case s.MinLength != nil && c < *s.MinLength:
				return "minLength"
			case s.MaxLength != nil && c > *s.MaxLength:
				return "maxLength"
			}
		}
		if in.pattern != nil && !in.pattern.MatchString(x) {
			return "pattern"
		}
	case []any:
		switch {
		case s.MinItems != nil && len(x) < *s.MinItems:
			return "minItems"
		case s.MaxItems != nil && len(x) > *s.MaxItems:
			return "maxItems"
		case s.UniqueItems && !unique(x):
			return "uniqueItems"
		}
	case map[string]any:
		switch {
		case s.MinProperties != nil && len(x) < *s.MinProperties:
			return "minProperties"
		case s.MaxProperties != nil && len(x) > *s.MaxProperties:
			return "maxProperties"
		}
		for _, deps := range []map[string][]string{s.DependentRequired, s.DependencyStrings} {
			for name, needs := range deps {
				if _, ok := x[name]; ok && slices.ContainsFunc(needs, func(r string) bool { _, ok := x[r]; return !ok }) {
					return "dependentRequired"
				}
			}
		}
	}
	return ""
}

func hasType(s *jsonschema.Schema, t string) bool { return s.Type == t || slices.Contains(s.Types, t) }

// unique reports whether no two items of a are equal as JSON values, by
// their encoding (decoded values encode one way: keys sorted, numbers in
// their shortest form, -0 decoded as 0).
func unique(a []any) bool {
	seen := make(map[string]bool, len(a))
	for _, e := range a {
		data, _ := json.Marshal(e)
		if seen[string(data)] {
			return false
		}
		seen[string(data)] = true
	}
	return true
}

// jsonTypeOf is the JSON type of a decoded value: an integral number is
// an integer.
func jsonTypeOf(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		if _, f := math.Modf(v); f == 0 {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	}
	return "object"
}

// formats are the formats Compile enforces, as checks of the values they
// apply to: kin-openapi's defaults, which the spec's date-times rely on.
var formats = map[string]func(any) bool{
	"date-time": matches(dateTimeRE),
	"date":      matches(dateRE),
	"byte":      matches(byteRE),
	"int32":     within(math.MinInt32, math.MaxInt32+1),
	"int64":     within(math.MinInt64, -float64(math.MinInt64)),
}

// The formats' patterns are compiled on first use, not at package init.
var (
	dateTimeRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile("^" + date + `T([01][0-9]|2[0-3]):[0-5][0-9]:([0-5][0-9]|60)(\.[0-9]+)?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$`)
	})
	dateRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("^" + date + "$") })
	byteRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-zA-Z0-9+/\-_]*=*$`) })
)

// date is an RFC 3339 full-date with a day that exists: 30 days hath
// September, and February 29 only in leap years.
const date = `(?:[0-9]{4}-(?:(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])|(?:0[13-9]|1[0-2])-(?:29|30)|(?:0[13578]|1[02])-31)` +
	`|(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)-02-29)`

func matches(re func() *regexp.Regexp) func(any) bool {
	return func(x any) bool { s, ok := x.(string); return !ok || re().MatchString(s) }
}

// within is the check that a number is in [lo, hi).
func within(lo, hi float64) func(any) bool {
	return func(x any) bool { f, ok := x.(float64); return !ok || lo <= f && f < hi }
}

func (v *Validator) composite(s *jsonschema.Schema, in *info, x any, explain bool, ev *evaluated) *Error {
	fail := func(reason string) *Error {
		if !explain {
			return errNo
		}
		return &Error{Reason: reason}
	}
	for _, b := range s.AllOf {
		if e := v.check(b, x, explain, ev); e != nil {
			return e
		}
	}
	if s.AnyOf != nil && v.count(s.AnyOf, x, ev, len(s.AnyOf)) == 0 {
		if c := candidate(s.AnyOf, x); c != nil && explain {
			return v.check(c, x, explain, nil)
		}
		return fail("must match at least one of its schemas")
	}
	if s.OneOf != nil {
		obj, _ := x.(map[string]any)
		name, isString := obj[in.discriminator].(string)
		if b := in.byValue[name]; in.discriminator != "" && isString && b != nil {
			// The others pin the property to another value.
			if e := v.check(b, x, explain, ev); e != nil {
				return e
			}
		} else if v.count(s.OneOf, x, ev, 2) != 1 {
			return v.oneOf(s, in, x, explain)
		}
	}
	if s.Not != nil && v.check(s.Not, x, false, nil) == nil {
		return fail("must not match its schema")
	}
	if s.If != nil {
		next := s.Else
		if v.check(s.If, x, false, ev) == nil {
			next = s.Then
		}
		if next != nil {
			if e := v.check(next, x, explain, ev); e != nil {
				return e
			}
		}
	}
	obj, _ := x.(map[string]any)
	for _, deps := range []map[string]*jsonschema.Schema{s.DependentSchemas, s.DependencySchemas} {
		if deps == nil || obj == nil {
			continue
		}
		for _, name := range slices.Sorted(maps.Keys(deps)) {
			if _, present := obj[name]; present {
				if e := v.check(deps[name], x, explain, ev); e != nil {
					return e
				}
			}
		}
	}
	return nil
}

// count returns how many of branches x matches, stopping at most; ev
// collects what the matching ones evaluated, which needs them all.
func (v *Validator) count(branches []*jsonschema.Schema, x any, ev *evaluated, most int) int {
	matched := 0
	for _, b := range branches {
		if v.check(b, x, false, ev) == nil {
			if matched++; matched >= most && ev == nil {
				break
			}
		}
	}
	return matched
}

// candidate is the one branch that can explain why x matches none: the
// only one, when a null branch (an optional value's) does not count.
func candidate(branches []*jsonschema.Schema, x any) *jsonschema.Schema {
	var c *jsonschema.Schema
	for _, b := range branches {
		if x != nil && (b.Type == "null" || len(b.Types) == 1 && b.Types[0] == "null") {
			continue
		}
		if c != nil {
			return nil
		}
		c = b
	}
	return c
}

// oneOf explains why x does not match exactly one branch: for branches
// told apart by a property, what is wrong with the property.
func (v *Validator) oneOf(s *jsonschema.Schema, in *info, x any, explain bool) *Error {
	if !explain {
		return errNo
	}
	if in.discriminator != "" {
		obj, isObject := x.(map[string]any)
		prop, present := obj[in.discriminator]
		_, isString := prop.(string)
		switch {
		case !isObject:
			return &Error{Reason: "must be an object"}
		case !present:
			return under(&Error{Reason: "is required"}, in.discriminator)
		case !isString:
			return under(&Error{Reason: "must be a string"}, in.discriminator)
		default:
			return under(&Error{Reason: "must be one of " + strings.Join(slices.Sorted(maps.Keys(in.byValue)), ", ")}, in.discriminator)
		}
	}
	if c := candidate(s.OneOf, x); c != nil && v.check(c, x, false, nil) != nil {
		return v.check(c, x, true, nil)
	}
	return &Error{Reason: "must match exactly one of its schemas"}
}

func (v *Validator) array(s *jsonschema.Schema, x []any, explain bool, ev *evaluated) *Error {
	if s.Contains != nil {
		found := 0
		for i, e := range x {
			if v.check(s.Contains, e, false, nil) == nil {
				found++
				if ev != nil {
					ev.found = mapSet(ev.found, i)
				}
			}
		}
		lo, hi := 1, math.MaxInt
		if s.MinContains != nil {
			lo = *s.MinContains
		}
		if s.MaxContains != nil {
			hi = *s.MaxContains
		}
		if found < lo || found > hi {
			if !explain {
				return errNo
			}
			return &Error{Reason: fmt.Sprintf("must contain at least %d and at most %d items that match its schema", lo, min(hi, len(x)))}
		}
	}
	prefix, rest := s.PrefixItems, s.Items
	if s.ItemsArray != nil {
		prefix, rest = s.ItemsArray, s.AdditionalItems
	}
	for i, e := range x {
		child := rest
		if i < len(prefix) {
			child = prefix[i]
		}
		if child == nil {
			break
		}
		if err := v.check(child, e, explain, nil); err != nil {
			return under(err, strconv.Itoa(i))
		}
		if ev != nil {
			ev.items = max(ev.items, i+1)
		}
	}
	if s.UnevaluatedItems != nil {
		for i, e := range x {
			if i < ev.items || ev.found[i] {
				continue
			}
			if err := v.check(s.UnevaluatedItems, e, explain, nil); err != nil {
				return under(err, strconv.Itoa(i))
			}
		}
		ev.items = len(x)
	}
	return nil
}

func (v *Validator) object(s *jsonschema.Schema, in *info, x map[string]any, explain bool, ev *evaluated) *Error {
	if s.PropertyNames != nil {
		for k := range x {
			if v.check(s.PropertyNames, k, false, nil) != nil {
				if !explain {
					return errNo
				}
				return &Error{Reason: "must have property names that match their schema"}
			}
		}
	}
	// The problem of the first property by name, without sorting names
	// when there is none.
	var first *Error
	var firstKey string
	for k, val := range x {
		if first != nil && k >= firstKey {
			continue
		}
		if e := v.property(s, in, k, val, explain, ev); e != nil {
			if !explain {
				return e
			}
			first, firstKey = e, k
		}
	}
	if first != nil {
		return first
	}
	for _, r := range s.Required {
		if _, present := x[r]; !present && (s.Properties[r] == nil || !v.barred(s.Properties[r])) {
			if !explain {
				return errNo
			}
			return under(&Error{Reason: "is required"}, r)
		}
	}
	if s.UnevaluatedProperties != nil {
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if ev.props[k] {
				continue
			}
			if v.info[s.UnevaluatedProperties].rejects {
				return under(v.unknown(in, explain), k)
			}
			if e := v.check(s.UnevaluatedProperties, x[k], explain, nil); e != nil {
				return under(e, k)
			}
			ev.props = mapSet(ev.props, k)
		}
	}
	return nil
}

// property checks the member k of an object against the subschemas of n
// that apply to it.
func (v *Validator) property(s *jsonschema.Schema, in *info, k string, val any, explain bool, ev *evaluated) *Error {
	var buf [4]*jsonschema.Schema
	children := buf[:0]
	if child, ok := s.Properties[k]; ok {
		if v.barred(child) {
			if !explain {
				return errNo
			}
			return under(&Error{Reason: barred[v.dir]}, k)
		}
		children = append(children, child)
	}
	for _, pp := range in.patterns {
		if pp.re.MatchString(k) {
			children = append(children, pp.s)
		}
	}
	if len(children) == 0 && s.AdditionalProperties != nil {
		if v.info[s.AdditionalProperties].rejects {
			return under(v.unknown(in, explain), k)
		}
		children = append(children, s.AdditionalProperties)
	}
	for _, child := range children {
		if e := v.check(child, val, explain, nil); e != nil {
			if explain && val == nil && slices.Contains(s.Required, k) {
				e = &Error{Reason: "is required and must not be null"}
			}
			return under(e, k)
		}
	}
	if ev != nil && len(children) > 0 {
		ev.props = mapSet(ev.props, k)
	}
	return nil
}

// unknown is the problem of a property the schema does not declare.
func (v *Validator) unknown(in *info, explain bool) *Error {
	if !explain {
		return errNo
	}
	return &Error{Reason: "is not allowed", Unknown: true, Allowed: in.declared}
}

// barred reports whether a property of schema n is refused in v's
// direction: readOnly in a request, writeOnly in a response.
func (v *Validator) barred(s *jsonschema.Schema) bool {
	return v.dir == Request && s.ReadOnly || v.dir == Response && s.WriteOnly
}

// barred is what a value of a property its direction refuses is told.
var barred = map[Direction]string{
	Request:  "is read-only and not allowed in a request",
	Response: "is write-only and not allowed in a response",
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

// reason says why a value fails keyword k of s. It quotes only the
// schema, never the value.
func reason(k string, s *jsonschema.Schema) string {
	var m map[string]any
	data, _ := json.Marshal(s)
	json.Unmarshal(data, &m)
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

	rel []string // while Validate walks back: the pointer's tokens, last first
}

// Error formats the error as `field "/pointer": reason`, or as
// "value: reason" when the problem is the whole value.
func (e *Error) Error() string {
	if e.Pointer == "" {
		return "value: " + e.Reason
	}
	return "field " + quotePointer(e.Pointer) + ": " + e.Reason
}

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
