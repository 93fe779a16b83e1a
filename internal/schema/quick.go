package schema

import (
	"math"
	"reflect"
	"regexp"
	"slices"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// quick returns a check that says whether a value matches a schema the
// library resolved, without the library's reflection, or nil when the
// schema (or a schema it reaches) uses a keyword the check does not know.
// It knows what the spec's schemas use: type, enum, const, minimum,
// maximum and their exclusive forms, minLength, maxLength, pattern,
// items, minItems, maxItems, properties, required, additionalProperties,
// allOf, anyOf, oneOf and not; the rest (multipleOf, uniqueItems,
// patternProperties, $ref ...), and any other draft than 2020-12, is left
// to the library. The spec's schemas and custom tools' have their $refs
// inlined (internal/oas); a schema with $ref is an MCP server's, whose
// calls cost a round trip anyway.
//
// For a value of the types Decode produces its verdict is the library's
// (FuzzQuickAgrees holds it to that). A value holding any other Go type
// (an int in a Go caller's map) it does not claim to know and calls
// invalid, so that Validate asks the library: only its yes is trusted.
func quick(rs *jsonschema.Resolved) func(any) bool {
	root := rs.Schema()
	if root.Schema != "" && root.Schema != knownDrafts[0] {
		return nil
	}
	q := &quickCompiler{root: root}
	f := q.compile(root)
	if q.unknown {
		return nil
	}
	return func(v any) bool { return decoded(v) && f(v) }
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

type quickCompiler struct {
	root    *jsonschema.Schema
	unknown bool // a keyword the check does not know
}

// compile returns the check of s.
func (q *quickCompiler) compile(s *jsonschema.Schema) func(any) bool {
	checks := q.checks(s)
	return func(v any) bool {
		for _, c := range checks {
			if !c(v) {
				return false
			}
		}
		return true
	}
}

// checks returns one check per group of keywords of s, each true for
// values the keywords do not apply to.
func (q *quickCompiler) checks(s *jsonschema.Schema) []func(any) bool {
	var checks []func(any) bool
	add := func(c func(any) bool) { checks = append(checks, c) }
	// rest is s without the keywords the library does not check and those
	// compiled here: anything left is unknown.
	rest := *s
	rest.Title, rest.Description, rest.Comment, rest.Format, rest.Default, rest.Examples = "", "", "", "", nil, nil
	rest.Deprecated, rest.ReadOnly, rest.WriteOnly, rest.Extra, rest.PropertyOrder = false, false, false, nil, nil
	rest.Defs, rest.Definitions = nil, nil // reached only through $ref, which is unknown
	if s == q.root {
		rest.ID, rest.Schema = "", ""
	}
	if rest.Type != "" || rest.Types != nil {
		types := rest.Types
		if rest.Type != "" {
			types = []string{rest.Type}
		}
		add(func(v any) bool {
			t := jsonTypeOf(v)
			return slices.Contains(types, t) || t == "integer" && slices.Contains(types, "number")
		})
		rest.Type, rest.Types = "", nil
	}
	if rest.Enum != nil {
		add(q.enum(rest.Enum))
	}
	if rest.Const != nil {
		add(q.enum([]any{*rest.Const}))
	}
	rest.Enum, rest.Const = nil, nil
	if rest.Minimum != nil || rest.Maximum != nil || rest.ExclusiveMinimum != nil || rest.ExclusiveMaximum != nil {
		lo, hi, xlo, xhi := rest.Minimum, rest.Maximum, rest.ExclusiveMinimum, rest.ExclusiveMaximum
		add(func(v any) bool {
			n, ok := v.(float64)
			return !ok || (lo == nil || n >= *lo) && (hi == nil || n <= *hi) && (xlo == nil || n > *xlo) && (xhi == nil || n < *xhi)
		})
		rest.Minimum, rest.Maximum, rest.ExclusiveMinimum, rest.ExclusiveMaximum = nil, nil, nil, nil
	}
	if rest.MinLength != nil || rest.MaxLength != nil || rest.Pattern != "" {
		lo, hi := rest.MinLength, rest.MaxLength
		var re *regexp.Regexp
		if rest.Pattern != "" {
			var err error
			if re, err = regexp.Compile(rest.Pattern); err != nil {
				q.unknown = true
			}
		}
		add(func(v any) bool {
			str, ok := v.(string)
			if !ok {
				return true
			}
			if lo != nil || hi != nil {
				n := utf8.RuneCountInString(str)
				if lo != nil && n < *lo || hi != nil && n > *hi {
					return false
				}
			}
			return re == nil || re.MatchString(str)
		})
		rest.MinLength, rest.MaxLength, rest.Pattern = nil, nil, ""
	}
	if rest.Items != nil || rest.MinItems != nil || rest.MaxItems != nil {
		lo, hi := rest.MinItems, rest.MaxItems
		var item func(any) bool
		if rest.Items != nil {
			item = q.compile(rest.Items)
		}
		add(func(v any) bool {
			a, ok := v.([]any)
			if !ok {
				return true
			}
			if lo != nil && len(a) < *lo || hi != nil && len(a) > *hi {
				return false
			}
			return item == nil || !slices.ContainsFunc(a, func(e any) bool { return !item(e) })
		})
		rest.Items, rest.MinItems, rest.MaxItems = nil, nil, nil
	}
	if rest.Properties != nil || rest.Required != nil || rest.AdditionalProperties != nil {
		props := make(map[string]func(any) bool, len(rest.Properties))
		for name, p := range rest.Properties {
			props[name] = q.compile(p)
		}
		required := rest.Required
		var extra func(any) bool
		if rest.AdditionalProperties != nil {
			extra = q.compile(rest.AdditionalProperties)
		}
		add(func(v any) bool {
			m, ok := v.(map[string]any)
			if !ok {
				return true
			}
			for _, r := range required {
				if _, ok := m[r]; !ok {
					return false
				}
			}
			for k, x := range m {
				if p, ok := props[k]; ok {
					if !p(x) {
						return false
					}
				} else if extra != nil && !extra(x) {
					return false
				}
			}
			return true
		})
		rest.Properties, rest.Required, rest.AdditionalProperties = nil, nil, nil
	}
	for _, sub := range rest.AllOf {
		add(q.compile(sub))
	}
	for _, of := range []struct {
		list []*jsonschema.Schema
		ok   func(matched int) bool
	}{{rest.AnyOf, func(n int) bool { return n > 0 }}, {rest.OneOf, func(n int) bool { return n == 1 }}} {
		if of.list == nil {
			continue
		}
		subs := make([]func(any) bool, len(of.list))
		for i, sub := range of.list {
			subs[i] = q.compile(sub)
		}
		add(func(v any) bool {
			n := 0
			for _, f := range subs {
				if f(v) {
					n++
				}
			}
			return of.ok(n)
		})
	}
	if rest.Not != nil {
		not := q.compile(rest.Not)
		add(func(v any) bool { return !not(v) })
	}
	rest.AllOf, rest.AnyOf, rest.OneOf, rest.Not = nil, nil, nil, nil
	if !reflect.ValueOf(rest).IsZero() {
		q.unknown = true
	}
	return checks
}

// enum is the check that a value equals one of vals, which the library
// compares as JSON values; only scalars are known here.
func (q *quickCompiler) enum(vals []any) func(any) bool {
	for _, e := range vals {
		switch e.(type) {
		case nil, bool, float64, string:
		default:
			q.unknown = true
		}
	}
	// Scalars of one type compare as Go values; numbers are float64 both
	// in the schema and in a decoded value, and -0 == 0.
	return func(v any) bool { return slices.Contains(vals, v) }
}

// jsonTypeOf is the JSON type of a value as Decode produces it, as the
// library names it: an integral number is an integer.
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
