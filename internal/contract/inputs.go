package contract

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// unknownProperty is the name of a property no input schema declares; the
// generated inputs add it to prove that closed schemas are enforced.
const unknownProperty = "contract_unknown_property"

// notInEnum is a string that no enum of the spec contains.
const notInEnum = "contract_value_not_in_enum"

// Input is one tool input generated from a tool's input schema: a spec
// example, or an example with one field varied (or removed, or added).
type Input struct {
	// Example is the name of the spec example the input starts from.
	Example string
	// Field is the JSON pointer of the varied field; empty for the example
	// itself.
	Field string
	// Value is the varied field's value; nil when Absent.
	Value any
	// Absent is set when the variation removes the field.
	Absent bool
	// Verbatim is set for a spec example exactly as written.
	Verbatim bool
	// Args are the tool call's arguments.
	Args map[string]any
}

// describe is the input's variation, for problems.
func (in Input) describe() (field, value string) {
	switch {
	case in.Field == "":
		return "", ""
	case in.Absent:
		return in.Field, "(absent)"
	}
	return in.Field, showValue(in.Value)
}

// GenerateInputs derives tool inputs from an input schema and the
// operation's examples (name → arguments): every example as written, then,
// from each example with its missing required fields filled, one field at a
// time: every enum value (and one outside the enum), the boundary values of
// numbers (minimum, maximum, one past each, 0, ±1, large values, a
// fraction) and of strings (empty, minLength, maxLength, one past it),
// both booleans, each optional field removed or added, each required field
// removed, and an undeclared property. Inputs are deduplicated. Whether each
// input is valid is for the schema to say (see CheckTools); generation only
// aims at the places where handlers and schemas tend to disagree.
func GenerateInputs(s *openapi3.Schema, examples map[string]any) []Input {
	var out []Input
	seen := map[string]bool{}
	add := func(in Input) {
		key, err := json.Marshal(in.Args)
		if err != nil || seen[string(key)] {
			return
		}
		seen[string(key)] = true
		out = append(out, in)
	}
	names := slices.Sorted(maps.Keys(examples))
	if len(names) == 0 {
		// No example: start from a sample of the schema.
		names = []string{""}
		examples = map[string]any{"": sample(s)}
	}
	for _, name := range names {
		base, ok := clone(examples[name]).(map[string]any)
		if !ok {
			continue
		}
		add(Input{Example: name, Verbatim: true, Args: clone(base).(map[string]any)})
		for _, req := range s.Required {
			if _, ok := base[req]; !ok {
				if p := s.Properties[req]; p != nil && p.Value != nil {
					base[req] = sample(p.Value)
				}
			}
		}
		add(Input{Example: name, Args: clone(base).(map[string]any)})
		required := map[string]bool{}
		for _, r := range s.Required {
			required[r] = true
		}
		for _, prop := range slices.Sorted(maps.Keys(s.Properties)) {
			ref := s.Properties[prop]
			if ref == nil || ref.Value == nil {
				continue
			}
			field := pointer(prop)
			if _, present := base[prop]; present {
				args := clone(base).(map[string]any)
				delete(args, prop)
				add(Input{Example: name, Field: field, Absent: true, Args: args})
			}
			for _, v := range candidates(ref.Value) {
				args := clone(base).(map[string]any)
				args[prop] = v
				add(Input{Example: name, Field: field, Value: v, Args: args})
			}
		}
		args := clone(base).(map[string]any)
		args[unknownProperty] = true
		add(Input{Example: name, Field: pointer(unknownProperty), Value: true, Args: args})
	}
	return out
}

// candidates are the values GenerateInputs tries for one field: the values
// that sit on the edges of what the schema allows, on both sides.
func candidates(s *openapi3.Schema) []any {
	var vs []any
	if len(s.Enum) > 0 {
		vs = append(vs, s.Enum...)
		if s.Type.Is(openapi3.TypeString) {
			vs = append(vs, notInEnum)
		}
		return vs
	}
	switch {
	case s.Type.Is(openapi3.TypeBoolean):
		vs = append(vs, true, false)
	case s.Type.Is(openapi3.TypeInteger), s.Type.Is(openapi3.TypeNumber):
		integer := s.Type.Is(openapi3.TypeInteger)
		nums := []float64{0, 1, -1}
		if s.Min != nil {
			nums = append(nums, *s.Min, *s.Min-1)
		}
		if s.Max != nil {
			nums = append(nums, *s.Max, *s.Max+1)
		}
		if integer {
			nums = append(nums, 1<<31, -(1 << 31))
		} else {
			nums = append(nums, 0.5, -0.5, math.MaxFloat64, -math.MaxFloat64)
		}
		slices.Sort(nums)
		for _, n := range slices.Compact(nums) {
			vs = append(vs, n)
		}
	case s.Type.Is(openapi3.TypeString):
		lengths := []int{0, 1, int(s.MinLength)}
		if s.MinLength > 0 {
			lengths = append(lengths, int(s.MinLength)-1)
		}
		if s.MaxLength != nil {
			lengths = append(lengths, int(*s.MaxLength), int(*s.MaxLength)+1)
		} else {
			lengths = append(lengths, longString)
		}
		slices.Sort(lengths)
		for _, n := range slices.Compact(lengths) {
			vs = append(vs, strings.Repeat("x", n))
		}
	case s.Type.Is(openapi3.TypeArray):
		vs = append(vs, []any{})
		if s.Items != nil && s.Items.Value != nil {
			vs = append(vs, []any{sample(s.Items.Value)})
		}
	case s.Type.Is(openapi3.TypeObject):
		vs = append(vs, map[string]any{}, sample(s))
	}
	return vs
}

// longString is the length of the long string tried for a string field
// without maxLength.
const longString = 5000

// sample returns a value the schema accepts: its default, its example, its
// first enum value, or the smallest value of its type within its bounds.
func sample(s *openapi3.Schema) any {
	switch {
	case s.Default != nil:
		return clone(s.Default)
	case s.Example != nil:
		return clone(s.Example)
	case len(s.Enum) > 0:
		return s.Enum[0]
	case len(s.OneOf) > 0 && s.OneOf[0].Value != nil:
		return sample(s.OneOf[0].Value)
	}
	switch {
	case s.Type.Is(openapi3.TypeBoolean):
		return false
	case s.Type.Is(openapi3.TypeInteger), s.Type.Is(openapi3.TypeNumber):
		n := 1.0
		if s.Min != nil && n < *s.Min {
			n = math.Ceil(*s.Min)
			if s.ExclusiveMin.IsTrue() {
				n++
			}
		}
		if s.Max != nil && n > *s.Max {
			n = math.Floor(*s.Max)
		}
		return n
	case s.Type.Is(openapi3.TypeString):
		n := max(int(s.MinLength), 1)
		if s.MaxLength != nil && n > int(*s.MaxLength) {
			n = int(*s.MaxLength)
		}
		return strings.Repeat("x", n)
	case s.Type.Is(openapi3.TypeArray):
		var items []any
		if s.Items != nil && s.Items.Value != nil {
			for range s.MinItems {
				items = append(items, sample(s.Items.Value))
			}
		}
		if items == nil {
			items = []any{}
		}
		return items
	}
	obj := map[string]any{}
	for _, r := range s.Required {
		if p := s.Properties[r]; p != nil && p.Value != nil {
			obj[r] = sample(p.Value)
		}
	}
	return obj
}

// clone deep-copies a JSON value.
func clone(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = clone(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = clone(x)
		}
		return out
	case int:
		return float64(v)
	case int64:
		return float64(v)
	case uint64:
		return float64(v)
	case float32:
		return float64(v)
	}
	return v
}

// examplesOf returns the named examples of the operation's JSON request
// body.
func examplesOf(op *openapi3.Operation) (map[string]any, error) {
	out := map[string]any{}
	if op.RequestBody == nil || op.RequestBody.Value == nil {
		return out, nil
	}
	mt := op.RequestBody.Value.Content.Get("application/json")
	if mt == nil {
		return out, nil
	}
	for name, ex := range mt.Examples {
		if ex == nil || ex.Value == nil {
			return nil, fmt.Errorf("example %s is empty", name)
		}
		out[name] = normalize(ex.Value.Value)
	}
	if mt.Example != nil {
		out["example"] = normalize(mt.Example)
	}
	return out, nil
}

// normalize turns a value decoded from YAML into the shapes encoding/json
// produces (float64 numbers, map[string]any objects).
func normalize(v any) any {
	data, err := json.Marshal(v)
	if err != nil {
		return clone(v)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		return clone(v)
	}
	return out
}
