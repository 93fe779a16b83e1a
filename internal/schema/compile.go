package schema

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/getkin/kin-openapi/openapi3"
)

// Compile compiles a kin-openapi schema, with its references resolved, into a
// Validator. Compile it once and share the Validator: validation does not
// touch the schema again.
//
// Compile fails, naming the keyword and where it is, for every keyword that
// would change which values are valid but that the Validator does not
// implement (anyOf, not, if/then/else, const, prefixItems, contains,
// patternProperties, propertyNames, dependentRequired, dependentSchemas,
// unevaluatedItems, unevaluatedProperties, $dynamicRef, a discriminator
// outside oneOf, allOf parts that contradict each other, enum values that
// are not scalars, patterns that Go's regexp rejects), so a document cannot
// silently rely on a rule nobody checks. Annotations (title, description,
// default, example, readOnly, writeOnly, deprecated, xml, externalDocs,
// extensions) and formats other than double, float, int32, int64 and
// date-time are ignored.
//
// A oneOf with a discriminator dispatches on the discriminator property to
// the one schema its value selects (through the mapping, or by component
// name when there is no mapping) and validates against that schema only; a
// oneOf without one requires exactly one schema to match. As in
// kin-openapi and OpenAPI 3.0, null is valid only where nullable is true (or,
// in the 3.1 form, the type list has "null"), except that a schema with
// neither type nor nullable leaves null to its oneOf and allOf.
//
// Recursive schemas are supported: each *openapi3.Schema is compiled once.
func Compile(s *openapi3.Schema) (*Validator, error) {
	if s == nil {
		return nil, errors.New("schema: Compile: nil schema")
	}
	c := compiler{nodes: make(map[*openapi3.Schema]*node)}
	n, err := c.compile(s, "#")
	if err != nil {
		return nil, err
	}
	return &Validator{root: n}, nil
}

type compiler struct {
	nodes map[*openapi3.Schema]*node
}

// compileError is the error of Compile. It names where in the schema the
// problem is (a reference or a path of keywords below one) and what it is.
type compileError struct {
	at  string
	msg string
}

func (e *compileError) Error() string {
	return "schema: at " + e.at + ": " + e.msg
}

func errAt(at, format string, args ...any) error {
	return &compileError{at: at, msg: fmt.Sprintf(format, args...)}
}

// ref compiles a SchemaRef; a reference restarts the location at its target.
func (c *compiler) ref(r *openapi3.SchemaRef, at string) (*node, error) {
	if r == nil {
		return nil, errAt(at, "missing schema")
	}
	if r.Ref != "" {
		at = r.Ref
	}
	if r.Value == nil {
		return nil, errAt(at, "unresolved reference")
	}
	return c.compile(r.Value, at)
}

func (c *compiler) compile(s *openapi3.Schema, at string) (*node, error) {
	if n, ok := c.nodes[s]; ok {
		return n, nil
	}
	n := &node{}
	c.nodes[s] = n

	if err := unsupported(s, at); err != nil {
		return nil, err
	}
	if s.Always != nil {
		n.never = !*s.Always
		n.nullable = *s.Always
		return n, nil
	}

	// Types.
	n.nullable = s.Nullable
	for _, t := range s.Type.Slice() {
		switch t {
		case openapi3.TypeNull:
			n.nullable = true
		case openapi3.TypeBoolean:
			n.types |= kBool
		case openapi3.TypeInteger:
			n.types |= kInt
		case openapi3.TypeNumber:
			n.types |= kInt | kFrac
		case openapi3.TypeString:
			n.types |= kString
		case openapi3.TypeArray:
			n.types |= kArray
		case openapi3.TypeObject:
			n.types |= kObject
		default:
			return nil, errAt(at, "unknown type %q", t)
		}
	}
	if n.types != 0 {
		n.typeReason = typeReason(n.types)
	}

	if err := c.enum(n, s, at); err != nil {
		return nil, err
	}

	// Strings.
	n.minLength = int(min(s.MinLength, math.MaxInt/utf8.UTFMax))
	if s.MaxLength != nil {
		n.hasMaxLength, n.maxLength = true, int(min(*s.MaxLength, math.MaxInt))
	}
	if s.Pattern != "" {
		re, err := regexp.Compile(s.Pattern)
		if err != nil {
			return nil, errAt(at, "pattern is not a valid Go regular expression: %v", err)
		}
		n.pattern = re
		n.patternReason = "does not match pattern " + s.Pattern
	}

	// Formats.
	switch s.Format {
	case "date-time":
		if n.types == 0 || n.types&kString != 0 {
			n.format = fmtDateTime
		}
	case "float":
		n.format = fmtFloat
	case "int32":
		n.format = fmtInt32
	case "int64":
		n.format = fmtInt64
	}

	// Numbers.
	if err := numberBounds(n, s, at); err != nil {
		return nil, err
	}

	// Arrays.
	n.minItems = int(min(s.MinItems, math.MaxInt))
	if s.MaxItems != nil {
		n.hasMaxItems, n.maxItems = true, int(min(*s.MaxItems, math.MaxInt))
	}
	n.uniqueItems = s.UniqueItems
	if s.Items != nil {
		items, err := c.ref(s.Items, at+"/items")
		if err != nil {
			return nil, err
		}
		n.items = items
	}

	// Objects.
	if err := c.object(n, s, at); err != nil {
		return nil, err
	}

	// Combinators.
	if err := allOfConflicts(s, at); err != nil {
		return nil, err
	}
	for i, part := range s.AllOf {
		pn, err := c.ref(part, at+"/allOf/"+strconv.Itoa(i))
		if err != nil {
			return nil, err
		}
		n.allOf = append(n.allOf, pn)
	}
	if s.Discriminator != nil {
		if err := c.discriminator(n, s, at); err != nil {
			return nil, err
		}
	} else {
		for i, alt := range s.OneOf {
			an, err := c.ref(alt, at+"/oneOf/"+strconv.Itoa(i))
			if err != nil {
				return nil, err
			}
			n.oneOf = append(n.oneOf, an)
		}
	}
	return n, nil
}

// unsupported rejects the keywords that constrain values but are not
// implemented.
func unsupported(s *openapi3.Schema, at string) error {
	var kw string
	switch {
	case len(s.AnyOf) > 0:
		kw = "anyOf"
	case s.Not != nil:
		kw = "not"
	case s.If != nil:
		kw = "if"
	case s.Then != nil:
		kw = "then"
	case s.Else != nil:
		kw = "else"
	case s.Const != nil:
		kw = "const"
	case len(s.PrefixItems) > 0:
		kw = "prefixItems"
	case s.Contains != nil:
		kw = "contains"
	case s.MinContains != nil:
		kw = "minContains"
	case s.MaxContains != nil:
		kw = "maxContains"
	case len(s.PatternProperties) > 0:
		kw = "patternProperties"
	case len(s.DependentSchemas) > 0:
		kw = "dependentSchemas"
	case len(s.DependentRequired) > 0:
		kw = "dependentRequired"
	case s.PropertyNames != nil:
		kw = "propertyNames"
	case s.UnevaluatedItems.Has != nil || s.UnevaluatedItems.Schema != nil:
		kw = "unevaluatedItems"
	case s.UnevaluatedProperties.Has != nil || s.UnevaluatedProperties.Schema != nil:
		kw = "unevaluatedProperties"
	case s.DynamicRef != "":
		kw = "$dynamicRef"
	case s.Discriminator != nil && len(s.OneOf) == 0:
		return errAt(at, "discriminator is only supported with oneOf")
	default:
		return nil
	}
	return errAt(at, "unsupported keyword %q", kw)
}

func (c *compiler) enum(n *node, s *openapi3.Schema, at string) error {
	if s.Enum == nil {
		return nil
	}
	n.hasEnum = true
	shown := make([]string, 0, len(s.Enum))
	for _, e := range s.Enum {
		switch e := e.(type) {
		case nil:
			shown = append(shown, "null")
		case bool:
			if e {
				n.enumTrue = true
			} else {
				n.enumFalse = true
			}
			shown = append(shown, strconv.FormatBool(e))
		case string:
			n.enumStrings = append(n.enumStrings, e)
			shown = append(shown, e)
		default:
			f, ok := toFloat(e)
			if !ok {
				return errAt(at, "enum values must be strings, numbers, booleans or null")
			}
			n.enumNumbers = append(n.enumNumbers, f)
			shown = append(shown, formatNumber(f))
		}
	}
	n.enumReason = "must be one of " + strings.Join(shown, ", ")
	if len(n.enumStrings) > 8 {
		n.enumSet = make(map[string]struct{}, len(n.enumStrings))
		for _, e := range n.enumStrings {
			n.enumSet[e] = struct{}{}
		}
	}
	return nil
}

func numberBounds(n *node, s *openapi3.Schema, at string) error {
	if s.Min != nil {
		n.min, n.hasMin = *s.Min, true
		n.minReason = "must be at least " + formatNumber(*s.Min)
	}
	if s.Max != nil {
		n.max, n.hasMax = *s.Max, true
		n.maxReason = "must be at most " + formatNumber(*s.Max)
	}
	if b := s.ExclusiveMin; b.Bool != nil && *b.Bool {
		if s.Min == nil {
			return errAt(at, "exclusiveMinimum: true needs minimum")
		}
		n.exclMin = true
		n.minReason = "must be greater than " + formatNumber(*s.Min)
	}
	if b := s.ExclusiveMax; b.Bool != nil && *b.Bool {
		if s.Max == nil {
			return errAt(at, "exclusiveMaximum: true needs maximum")
		}
		n.exclMax = true
		n.maxReason = "must be less than " + formatNumber(*s.Max)
	}
	// The OpenAPI 3.1 numeric form is its own bound; keep the stricter one.
	if v := s.ExclusiveMin.Value; v != nil {
		if !n.hasMin || *v >= n.min {
			n.min, n.hasMin, n.exclMin = *v, true, true
			n.minReason = "must be greater than " + formatNumber(*v)
		}
	}
	if v := s.ExclusiveMax.Value; v != nil {
		if !n.hasMax || *v <= n.max {
			n.max, n.hasMax, n.exclMax = *v, true, true
			n.maxReason = "must be less than " + formatNumber(*v)
		}
	}
	if m := s.MultipleOf; m != nil {
		if !(*m > 0) || math.IsInf(*m, 0) {
			return errAt(at, "multipleOf must be a positive number")
		}
		n.multipleOf = *m
		n.multipleReason = "must be a multiple of " + formatNumber(*m)
	}
	return nil
}

func (c *compiler) object(n *node, s *openapi3.Schema, at string) error {
	names := slices.Sorted(maps.Keys(s.Properties))
	required := make(map[string]bool, len(s.Required))
	for _, r := range s.Required {
		required[r] = true
	}
	for _, name := range names {
		pn, err := c.ref(s.Properties[name], at+"/properties/"+escapePointer(name))
		if err != nil {
			return err
		}
		n.props = append(n.props, prop{name: name, node: pn, required: required[name]})
		if required[name] {
			n.nRequired++
		}
	}
	n.addl = addlAny
	if ap := s.AdditionalProperties; ap.Has != nil && !*ap.Has {
		n.addl = addlNone
	} else if ap.Schema != nil {
		an, err := c.ref(ap.Schema, at+"/additionalProperties")
		if err != nil {
			return err
		}
		n.addl, n.addlNode = addlSchema, an
	}
	for _, r := range slices.Sorted(maps.Keys(required)) {
		if _, ok := s.Properties[r]; ok {
			continue
		}
		if n.addl == addlNone {
			return errAt(at, "required property %q is not in properties and additionalProperties is false", r)
		}
		n.requiredOther = append(n.requiredOther, r)
	}
	slices.Sort(n.requiredOther)
	if len(n.props) > 8 {
		n.propIndex = make(map[string]int, len(n.props))
		for i := range n.props {
			n.propIndex[n.props[i].name] = i
		}
	}
	n.minProps = int(min(s.MinProps, math.MaxInt))
	if s.MaxProps != nil {
		n.hasMaxProps, n.maxProps = true, int(min(*s.MaxProps, math.MaxInt))
	}
	return nil
}

// allOfConflicts rejects allOf parts (the schema itself counting as one)
// that no value can satisfy together: types with nothing in common, or
// additionalProperties: false in one part while another names a property
// the first does not declare.
func allOfConflicts(s *openapi3.Schema, at string) error {
	if len(s.AllOf) == 0 {
		return nil
	}
	parts := []*openapi3.Schema{s}
	for i, p := range s.AllOf {
		if p == nil || p.Value == nil {
			return errAt(at+"/allOf/"+strconv.Itoa(i), "unresolved reference")
		}
		parts = append(parts, p.Value)
	}
	types := kAny
	for _, p := range parts {
		if p.Type == nil {
			continue
		}
		var m kind
		for _, t := range p.Type.Slice() {
			switch t {
			case openapi3.TypeBoolean:
				m |= kBool
			case openapi3.TypeInteger:
				m |= kInt
			case openapi3.TypeNumber:
				m |= kInt | kFrac
			case openapi3.TypeString:
				m |= kString
			case openapi3.TypeArray:
				m |= kArray
			case openapi3.TypeObject:
				m |= kObject
			case openapi3.TypeNull:
				m |= kNull
			}
		}
		if p.Nullable {
			m |= kNull
		}
		types &= m
	}
	if types == 0 {
		return errAt(at, "allOf parts have conflicting types")
	}
	for i, closed := range parts {
		if ap := closed.AdditionalProperties; ap.Has == nil || *ap.Has {
			continue
		}
		for j, other := range parts {
			if i == j {
				continue
			}
			names := slices.Sorted(maps.Keys(other.Properties))
			names = append(names, other.Required...)
			for _, name := range names {
				if _, ok := closed.Properties[name]; !ok {
					return errAt(at, "allOf parts conflict: additionalProperties is false in one part, which does not declare property %q that another part names", name)
				}
			}
		}
	}
	return nil
}

func (c *compiler) discriminator(n *node, s *openapi3.Schema, at string) error {
	d := s.Discriminator
	if d.PropertyName == "" {
		return errAt(at, "discriminator has no propertyName")
	}
	dn := &discriminator{
		prop:    d.PropertyName,
		pointer: "/" + escapePointer(d.PropertyName),
		byValue: make(map[string]*node),
	}
	covered := make([]bool, len(s.OneOf))
	// refIndex finds the oneOf alternative a mapping or implicit name targets.
	refIndex := func(ref string) int {
		if !strings.Contains(ref, "/") {
			ref = "#/components/schemas/" + ref
		}
		for i, alt := range s.OneOf {
			if alt != nil && alt.Ref == ref {
				return i
			}
		}
		return -1
	}
	add := func(value string, i int) error {
		alt, err := c.ref(s.OneOf[i], at+"/oneOf/"+strconv.Itoa(i))
		if err != nil {
			return err
		}
		dn.byValue[value] = alt
		covered[i] = true
		return nil
	}
	if len(d.Mapping) > 0 {
		for _, value := range slices.Sorted(maps.Keys(d.Mapping)) {
			target := d.Mapping[value]
			i := refIndex(target.Ref)
			if i < 0 {
				return errAt(at, "discriminator mapping %q targets %q, which is not one of the oneOf schemas", value, target.Ref)
			}
			if err := add(value, i); err != nil {
				return err
			}
		}
	} else {
		for i, alt := range s.OneOf {
			if alt == nil || alt.Ref == "" {
				return errAt(at+"/oneOf/"+strconv.Itoa(i), "a discriminator without mapping needs every oneOf schema to be a reference")
			}
			if err := add(alt.Ref[strings.LastIndexByte(alt.Ref, '/')+1:], i); err != nil {
				return err
			}
		}
	}
	for i, ok := range covered {
		if !ok {
			return errAt(at+"/oneOf/"+strconv.Itoa(i), "no discriminator value selects this oneOf schema")
		}
	}
	keys := slices.Sorted(maps.Keys(dn.byValue))
	dn.reason = "must be one of " + strings.Join(keys, ", ")
	if len(keys) <= 8 {
		// Comparing a few strings is quicker than hashing one.
		for _, k := range keys {
			dn.values = append(dn.values, k)
			dn.nodes = append(dn.nodes, dn.byValue[k])
		}
		dn.byValue = nil
	}
	n.disc = dn
	return nil
}

func typeReason(types kind) string {
	var names []string
	if types&kObject != 0 {
		names = append(names, "an object")
	}
	if types&kArray != 0 {
		names = append(names, "an array")
	}
	if types&kString != 0 {
		names = append(names, "a string")
	}
	switch {
	case types&kFrac != 0:
		names = append(names, "a number")
	case types&kInt != 0:
		names = append(names, "an integer")
	}
	if types&kBool != 0 {
		names = append(names, "a boolean")
	}
	return "must be " + strings.Join(names, " or ")
}

func formatNumber(f float64) string {
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// escapePointer escapes one RFC 6901 reference token.
func escapePointer(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}
