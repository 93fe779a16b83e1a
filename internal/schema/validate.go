package schema

import (
	"encoding/json"
	"math"
	"regexp"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// maxValidateDepth bounds recursion on values built in Go, which, unlike
// decoded ones, can be nested arbitrarily deeply or even contain cycles.
const maxValidateDepth = 10000

// Validator checks decoded JSON values against a compiled schema. It is
// immutable and safe for concurrent use.
type Validator struct {
	root *node
}

// Error describes the first problem Validate (or Bind) found. Neither field
// ever contains the submitted value: Reason may quote only what comes from
// the schema, such as enum values, bounds and patterns.
type Error struct {
	// Pointer is the RFC 6901 JSON pointer to the offending value, such as
	// "/arguments/operation", or "" for the whole value. For a missing
	// required property it points at where the property should be.
	Pointer string
	// Reason says what is wrong, such as "is required" or "must be one of
	// add, subtract, multiply, divide".
	Reason string
}

// Error formats the error as `field "/pointer": reason`, or as
// "value: reason" when the problem is the whole value.
func (e *Error) Error() string {
	if e.Pointer == "" {
		return "value: " + e.Reason
	}
	return "field " + strconv.Quote(e.Pointer) + ": " + e.Reason
}

// under prefixes the pointer with one reference token and returns e.
func (e *Error) under(token string) *Error {
	e.Pointer = "/" + escapePointer(token) + e.Pointer
	return e
}

func (e *Error) at(index int) *Error {
	e.Pointer = "/" + strconv.Itoa(index) + e.Pointer
	return e
}

// Validate checks a decoded value: maps, slices, strings, bools and nil as
// produced by Decode or by encoding/json decoding into an any, with numbers
// as float64, json.Number or any Go integer or float type. It returns nil
// or an *Error for the first problem in a fixed order: at each object,
// required properties (in sorted order) before everything else, then
// minProperties and maxProperties, then the properties in sorted key order.
// Validate does not allocate when the value is valid, except for
// oneOf schemas without a discriminator that have to try a failing branch.
func (v *Validator) Validate(value any) error {
	if e := v.root.validate(value, 0); e != nil {
		return e
	}
	return nil
}

// ValidateMembers is Validate for an object given as Members (see
// DecodeMembers): it returns exactly what Validate returns for the same
// object as a map[string]any.
func (v *Validator) ValidateMembers(ms Members) error {
	if ms == nil {
		ms = Members{}
	}
	if e := v.root.validateObject(object{ms: ms}, 0); e != nil {
		return e
	}
	return nil
}

// kind is a set of JSON value kinds; numbers are split into integral and
// non-integral ones so that "integer" and "number" are both sets.
type kind uint8

const (
	kNull kind = 1 << iota
	kBool
	kInt
	kFrac
	kString
	kArray
	kObject

	kAny = kNull | kBool | kInt | kFrac | kString | kArray | kObject
)

type format uint8

const (
	fmtNone format = iota
	fmtDateTime
	fmtFloat
	fmtInt32
	fmtInt64
)

type addlMode uint8

const (
	addlAny addlMode = iota
	addlNone
	addlSchema
)

type prop struct {
	name     string
	node     *node
	required bool
}

type discriminator struct {
	prop    string
	pointer string
	byValue map[string]*node // or, when there are few values:
	values  []string
	nodes   []*node
	reason  string
}

// node is one compiled schema. The zero node accepts every value but null.
type node struct {
	never      bool // the boolean schema false
	nullable   bool
	types      kind // 0 means any
	typeReason string

	hasEnum, enumTrue, enumFalse bool
	enumStrings                  []string
	enumSet                      map[string]struct{}
	enumNumbers                  []float64
	enumReason                   string

	minLength, maxLength int
	hasMaxLength         bool
	pattern              *regexp.Regexp
	patternReason        string
	format               format

	hasMin, hasMax, exclMin, exclMax bool
	min, max                         float64
	minReason, maxReason             string
	multipleOf                       float64
	multipleReason                   string

	minItems, maxItems int
	hasMaxItems        bool
	uniqueItems        bool
	items              *node

	props         []prop // sorted by name
	propIndex     map[string]int
	nRequired     int      // required properties in props
	requiredOther []string // required properties not in props, sorted
	addl          addlMode
	addlNode      *node
	minProps      int
	maxProps      int
	hasMaxProps   bool

	allOf []*node
	oneOf []*node
	disc  *discriminator
}

func fail(reason string) *Error { return &Error{Reason: reason} }

func (n *node) validate(v any, depth int) *Error {
	if m, ok := v.(map[string]any); ok {
		return n.validateObject(object{m: m}, depth)
	}
	if depth > maxValidateDepth {
		return fail("is nested too deeply")
	}
	if n.never {
		return fail("is not allowed")
	}
	var e *Error
	switch x := v.(type) {
	case string:
		e = n.string(x)
	case float64:
		e = n.number(x)
	case bool:
		e = n.boolean(x)
	case []any:
		e = n.array(x, depth)
	case nil:
		if n.nullable {
			return nil
		}
		// Without a type, oneOf and allOf decide, as in kin-openapi.
		if n.types != 0 || len(n.allOf) == 0 && len(n.oneOf) == 0 && n.disc == nil {
			e = n.null()
		}
	default:
		f, ok := toFloat(x)
		if !ok {
			return fail("has a Go type that is not a JSON value")
		}
		e = n.number(f)
	}
	if e != nil {
		return e
	}
	for _, part := range n.allOf {
		if e := part.validate(v, depth+1); e != nil {
			return e
		}
	}
	if n.disc != nil {
		return fail("must be an object") // only objects have a discriminator
	}
	if len(n.oneOf) > 0 {
		return n.one(kindOf(v), func(alt *node) *Error { return alt.validate(v, depth+1) })
	}
	return nil
}

// validateObject is validate for an object, in either form.
func (n *node) validateObject(o object, depth int) *Error {
	if depth > maxValidateDepth {
		return fail("is nested too deeply")
	}
	if n.never {
		return fail("is not allowed")
	}
	if e := n.object(o, depth); e != nil {
		return e
	}
	for _, part := range n.allOf {
		if e := part.validateObject(o, depth+1); e != nil {
			return e
		}
	}
	if n.disc != nil {
		return n.dispatch(o, depth)
	}
	if len(n.oneOf) > 0 {
		return n.one(kObject, func(alt *node) *Error { return alt.validateObject(o, depth+1) })
	}
	return nil
}

// null rejects null for a schema that is not nullable. As in kin-openapi
// (and OpenAPI 3.0), that includes schemas without a type.
func (n *node) null() *Error {
	if n.types != 0 {
		return fail(n.typeReason)
	}
	return fail("must not be null")
}

func (n *node) boolean(b bool) *Error {
	if n.types != 0 && n.types&kBool == 0 {
		return fail(n.typeReason)
	}
	if n.hasEnum && !(b && n.enumTrue || !b && n.enumFalse) {
		return fail(n.enumReason)
	}
	return nil
}

func (n *node) string(s string) *Error {
	if n.types != 0 && n.types&kString == 0 {
		return fail(n.typeReason)
	}
	if n.hasEnum && !n.inEnum(s) {
		return fail(n.enumReason)
	}
	// Lengths count code points; a string has at most as many as bytes
	// and at least a quarter as many.
	if n.hasMaxLength && len(s) > n.maxLength && utf8.RuneCountInString(s) > n.maxLength {
		return fail("must be at most " + plural(n.maxLength, "character"))
	}
	if n.minLength > 0 && (len(s) < n.minLength ||
		len(s) < n.minLength*utf8.UTFMax && utf8.RuneCountInString(s) < n.minLength) {
		return fail("must be at least " + plural(n.minLength, "character"))
	}
	if n.pattern != nil && !n.pattern.MatchString(s) {
		return fail(n.patternReason)
	}
	if n.format == fmtDateTime && !validDateTime(s) {
		return fail("must be an RFC 3339 date-time")
	}
	return nil
}

func (n *node) inEnum(s string) bool {
	if n.enumSet != nil {
		_, ok := n.enumSet[s]
		return ok
	}
	for _, e := range n.enumStrings {
		if e == s {
			return true
		}
	}
	return false
}

// validDateTime reports whether s is an RFC 3339 date-time, as
// time.Time.UnmarshalText (and so encoding/json) accepts it.
func validDateTime(s string) bool {
	var t time.Time
	return t.UnmarshalText([]byte(s)) == nil
}

func (n *node) number(f float64) *Error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fail("must be a finite number")
	}
	integral := f == math.Trunc(f)
	if n.types != 0 {
		k := kFrac
		if integral {
			k = kInt
		}
		if n.types&k == 0 {
			return fail(n.typeReason)
		}
	}
	if n.hasEnum && !slices.Contains(n.enumNumbers, f) {
		return fail(n.enumReason)
	}
	switch n.format {
	case fmtInt32:
		if !integral || f < math.MinInt32 || f > math.MaxInt32 {
			return fail("must be a 32-bit integer")
		}
	case fmtInt64:
		if !integral || f < math.MinInt64 || f >= -math.MinInt64 {
			return fail("must be a 64-bit integer")
		}
	case fmtFloat:
		if math.Abs(f) > math.MaxFloat32 {
			return fail("is out of range for a 32-bit float")
		}
	}
	if n.hasMin && (f < n.min || n.exclMin && f == n.min) {
		return fail(n.minReason)
	}
	if n.hasMax && (f > n.max || n.exclMax && f == n.max) {
		return fail(n.maxReason)
	}
	if n.multipleOf != 0 {
		q := f / n.multipleOf
		if math.IsInf(q, 0) || math.Abs(q-math.Round(q)) > 1e-9 {
			return fail(n.multipleReason)
		}
	}
	return nil
}

func (n *node) array(a []any, depth int) *Error {
	if n.types != 0 && n.types&kArray == 0 {
		return fail(n.typeReason)
	}
	if n.hasEnum {
		return fail(n.enumReason)
	}
	if len(a) < n.minItems {
		return fail("must have at least " + plural(n.minItems, "item"))
	}
	if n.hasMaxItems && len(a) > n.maxItems {
		return fail("must have at most " + plural(n.maxItems, "item"))
	}
	if n.items != nil {
		for i, x := range a {
			if e := n.items.validate(x, depth+1); e != nil {
				return e.at(i)
			}
		}
	}
	if n.uniqueItems {
		if i, j, dup := duplicate(a); dup {
			return fail("must not contain duplicate items (items " + strconv.Itoa(i) + " and " + strconv.Itoa(j) + " are equal)")
		}
	}
	return nil
}

func (n *node) object(m object, depth int) *Error {
	if n.types != 0 && n.types&kObject == 0 {
		return fail(n.typeReason)
	}
	if n.hasEnum {
		return fail(n.enumReason)
	}
	if len(n.props) == 0 && len(n.requiredOther) == 0 && n.addl == addlAny &&
		n.minProps == 0 && !n.hasMaxProps {
		return nil
	}
	ok, failKey, failErr := n.objectFast(m, depth)
	if ok {
		return nil
	}
	return n.objectSlow(m, depth, failKey, failErr)
}

// lookup returns the index of the property named name, or -1.
func (n *node) lookup(name string) int {
	if n.propIndex != nil {
		if i, ok := n.propIndex[name]; ok {
			return i
		}
		return -1
	}
	for i := range n.props {
		if n.props[i].name == name {
			return i
		}
	}
	return -1
}

// objectFast reports whether m is valid, in whatever order is quickest. When
// a property's value is invalid it returns the key and the property's error,
// so that objectSlow never validates that value again.
func (n *node) objectFast(m object, depth int) (ok bool, failKey string, failErr *Error) {
	size := m.size()
	if size < n.minProps || n.hasMaxProps && size > n.maxProps {
		return false, "", nil
	}
	for _, r := range n.requiredOther {
		if _, ok := m.get(r); !ok {
			return false, "", nil
		}
	}
	if len(n.props) <= 2*size+4 {
		// Look every property up in m.
		found := 0
		for i := range n.props {
			p := &n.props[i]
			x, ok := m.get(p.name)
			if !ok {
				if p.required {
					return false, "", nil
				}
				continue
			}
			found++
			if e := p.node.validate(x, depth+1); e != nil {
				return false, p.name, e
			}
		}
		if found == size || n.addl == addlAny {
			return true, "", nil
		}
		if n.addl == addlNone {
			return false, "", nil
		}
	}
	// Look every key of m up in the properties.
	requiredFound := 0
	ok = true
	m.each(func(k string, x any) bool {
		i := n.lookup(k)
		if i < 0 {
			switch n.addl {
			case addlNone:
				ok = false
				return false
			case addlSchema:
				if e := n.addlNode.validate(x, depth+1); e != nil {
					ok, failKey, failErr = false, k, e
					return false
				}
			}
			return true
		}
		p := &n.props[i]
		if p.required {
			requiredFound++
		}
		if len(n.props) > 2*size+4 {
			if e := p.node.validate(x, depth+1); e != nil {
				ok, failKey, failErr = false, k, e
				return false
			}
		}
		return true
	})
	if !ok {
		return false, failKey, failErr
	}
	return requiredFound == n.nRequired, "", nil
}

// objectSlow finds the first problem of an invalid object in the documented
// order. failErr, when not nil, is the error of the value at failKey.
func (n *node) objectSlow(m object, depth int, failKey string, failErr *Error) *Error {
	missing := ""
	for i := range n.props {
		p := &n.props[i]
		if p.required {
			if _, ok := m.get(p.name); !ok {
				missing = p.name
				break
			}
		}
	}
	for _, r := range n.requiredOther {
		if _, ok := m.get(r); !ok {
			if missing == "" || r < missing {
				missing = r
			}
			break
		}
	}
	if missing != "" {
		return (&Error{Reason: "is required"}).under(missing)
	}
	if m.size() < n.minProps {
		return fail("must have at least " + plural(n.minProps, "property"))
	}
	if n.hasMaxProps && m.size() > n.maxProps {
		return fail("must have at most " + plural(n.maxProps, "property"))
	}
	keys := make([]string, 0, m.size())
	m.each(func(k string, _ any) bool {
		keys = append(keys, k)
		return true
	})
	slices.Sort(keys)
	for _, k := range keys {
		if failErr != nil && k == failKey {
			return failErr.under(k)
		}
		var sub *node
		if i := n.lookup(k); i >= 0 {
			sub = n.props[i].node
		} else {
			switch n.addl {
			case addlNone:
				return (&Error{Reason: "is not allowed (additionalProperties is false)"}).under(k)
			case addlSchema:
				sub = n.addlNode
			default:
				continue
			}
		}
		x, _ := m.get(k)
		if e := sub.validate(x, depth+1); e != nil {
			return e.under(k)
		}
	}
	if failErr != nil {
		return failErr.under(failKey)
	}
	return nil
}

func (n *node) dispatch(m object, depth int) *Error {
	d := n.disc
	x, ok := m.get(d.prop)
	if !ok {
		return &Error{Pointer: d.pointer, Reason: "is required"}
	}
	s, ok := x.(string)
	var alt *node
	if d.byValue != nil {
		alt = d.byValue[s]
	} else {
		for i, value := range d.values {
			if value == s {
				alt = d.nodes[i]
				break
			}
		}
	}
	if !ok || alt == nil {
		return &Error{Pointer: d.pointer, Reason: d.reason}
	}
	return alt.validateObject(m, depth+1)
}

// one checks a oneOf without a discriminator: exactly one alternative must
// accept the value. When none does and only one alternative accepts the
// value's kind, that alternative's error is the useful one.
func (n *node) one(k kind, validate func(alt *node) *Error) *Error {
	matched, candidates := 0, 0
	var candidate *Error
	for _, alt := range n.oneOf {
		e := validate(alt)
		if e == nil {
			matched++
			continue
		}
		if alt.accepts()&k != 0 {
			candidates++
			candidate = e
		}
	}
	switch {
	case matched == 1:
		return nil
	case matched > 1:
		return fail("must match exactly one oneOf schema but matches " + strconv.Itoa(matched))
	case candidates == 1:
		return candidate
	}
	return fail("does not match any oneOf schema")
}

// accepts is the set of kinds the node's type keyword lets through.
func (n *node) accepts() kind {
	if n.types == 0 {
		return kAny
	}
	if n.nullable {
		return n.types | kNull
	}
	return n.types
}

func kindOf(v any) kind {
	switch x := v.(type) {
	case nil:
		return kNull
	case bool:
		return kBool
	case string:
		return kString
	case []any:
		return kArray
	case map[string]any:
		return kObject
	default:
		if f, ok := toFloat(x); ok {
			if f == math.Trunc(f) {
				return kInt
			}
			return kFrac
		}
	}
	return 0
}

// toFloat converts the Go number types a decoded value may hold.
func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int8:
		return float64(x), true
	case int16:
		return float64(x), true
	case int32:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint:
		return float64(x), true
	case uint8:
		return float64(x), true
	case uint16:
		return float64(x), true
	case uint32:
		return float64(x), true
	case uint64:
		return float64(x), true
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		return f, err == nil
	}
	return 0, false
}

// duplicate finds the first pair of equal items.
func duplicate(a []any) (int, int, bool) {
	if len(a) <= 16 {
		for j := 1; j < len(a); j++ {
			for i := 0; i < j; i++ {
				if equal(a[i], a[j]) {
					return i, j, true
				}
			}
		}
		return 0, 0, false
	}
	seen := make(map[any]int, len(a))
	for j, x := range a {
		k := canonical(x)
		if i, ok := seen[k]; ok {
			return i, j, true
		}
		seen[k] = j
	}
	return 0, 0, false
}

// composite is the canonical key of an array or object: its JSON encoding,
// which has sorted keys and normalized numbers.
type composite string

// canonical returns a comparable key that is equal for equal JSON values.
func canonical(v any) any {
	switch x := v.(type) {
	case nil, bool, string:
		return x
	case []any, map[string]any:
		b, err := json.Marshal(x)
		if err != nil {
			return &x // unique: never equal to another item
		}
		return composite(b)
	}
	if f, ok := toFloat(v); ok {
		return f
	}
	return &v
}

// equal compares two JSON values; numbers compare by value.
func equal(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !equal(xv, yv) {
				return false
			}
		}
		return true
	}
	f, ok := toFloat(a)
	g, ok2 := toFloat(b)
	return ok && ok2 && f == g
}

func plural(n int, noun string) string {
	s := strconv.Itoa(n) + " " + noun
	if n == 1 {
		return s
	}
	if noun == "property" {
		return strconv.Itoa(n) + " properties"
	}
	return s + "s"
}
