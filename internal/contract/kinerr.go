package contract

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/specloop/specloop/internal/textclip"
)

// The wording of kin-openapi's schema errors as internal/schema words its
// own: the contract checks validate with kin-openapi, the reference
// validator of the spec, and compare with what the runtime says.

// fromSchemaError turns an error of kin-openapi's VisitJSON (or of
// openapi3filter's request validation, which wraps one) into an *Error
// that names the deepest field found and says what is wrong without the
// value, as internal/schema words it. An error that holds no
// *openapi3.SchemaError becomes a generic one for the whole value.
func fromSchemaError(err error) *fieldError {
	var se *openapi3.SchemaError
	if !errors.As(err, &se) {
		return &fieldError{Reason: "does not match the schema"}
	}
	se = innermost(se)
	tokens := se.JSONPointer()
	reason := reasonOf(se, &tokens)
	return &fieldError{Pointer: pointer(tokens...), Reason: reason}
}

// innermost follows a oneOf failure into the branch the discriminator chose
// (or the only branch tried), so the pointer names the deepest field.
func innermost(se *openapi3.SchemaError) *openapi3.SchemaError {
	for range 64 {
		var me openapi3.MultiError
		if se.Origin == nil || !errors.As(se.Origin, &me) || len(me) != 1 {
			return se
		}
		var inner *openapi3.SchemaError
		if !errors.As(me[0], &inner) {
			return se
		}
		se = inner
	}
	return se
}

// reasonOf says what is wrong in the style of the project's messages. The
// reasons come from the schema only; unknown and missing keys, which are
// the model's or the client's, go into the pointer.
func reasonOf(se *openapi3.SchemaError, tokens *[]string) string {
	s := se.Schema
	if s == nil {
		s = &openapi3.Schema{}
	}
	switch se.SchemaField {
	case "required":
		// kin-openapi's pointer already names the missing property.
		return "is required"
	case "properties", "additionalProperties":
		if m, ok := se.Value.(map[string]any); ok {
			for _, k := range slices.Sorted(maps.Keys(m)) {
				if _, known := s.Properties[k]; !known {
					*tokens = append(*tokens, k)
					break
				}
			}
		}
		return "is not allowed"
	case "discriminator":
		if s.Discriminator != nil {
			*tokens = append(*tokens, s.Discriminator.PropertyName)
			if strings.Contains(se.Reason, "does not contain") {
				return "is required"
			}
			if strings.Contains(se.Reason, "is not a string") {
				return "must be a string"
			}
			return "must be one of " + strings.Join(slices.Sorted(maps.Keys(s.Discriminator.Mapping)), ", ")
		}
	case "type":
		return "must be " + typeNames(s)
	case "nullable":
		if s.Type != nil && len(*s.Type) > 0 {
			return "must be " + typeNames(s)
		}
		return "must not be null"
	case "enum":
		shown := make([]string, len(s.Enum))
		for i, e := range s.Enum {
			shown[i] = fmt.Sprint(e)
		}
		return "must be one of " + strings.Join(shown, ", ")
	case "minLength":
		return fmt.Sprintf("must be at least %d characters long", s.MinLength)
	case "maxLength":
		if s.MaxLength != nil {
			return fmt.Sprintf("must be at most %d characters long", *s.MaxLength)
		}
	case "minimum":
		if s.Min != nil {
			return "must be at least " + number(*s.Min)
		}
	case "maximum":
		if s.Max != nil {
			return "must be at most " + number(*s.Max)
		}
	case "exclusiveMinimum":
		if s.Min != nil {
			return "must be greater than " + number(*s.Min)
		}
	case "exclusiveMaximum":
		if s.Max != nil {
			return "must be less than " + number(*s.Max)
		}
	case "multipleOf":
		if s.MultipleOf != nil {
			return "must be a multiple of " + number(*s.MultipleOf)
		}
	case "pattern":
		return "must match the pattern " + strconv.Quote(s.Pattern)
	case "format":
		return "must be a valid " + s.Format
	case "minItems":
		return fmt.Sprintf("must have at least %d items", s.MinItems)
	case "maxItems":
		if s.MaxItems != nil {
			return fmt.Sprintf("must have at most %d items", *s.MaxItems)
		}
	case "uniqueItems":
		return "must not contain duplicate items"
	case "minProperties":
		return fmt.Sprintf("must have at least %d properties", s.MinProps)
	case "maxProperties":
		if s.MaxProps != nil {
			return fmt.Sprintf("must have at most %d properties", *s.MaxProps)
		}
	case "readOnly":
		return "is read-only and not allowed in a request"
	case "writeOnly":
		return "is write-only and not allowed in a response"
	case "oneOf":
		if _, isObject := se.Value.(map[string]any); s.Discriminator != nil && !isObject {
			return "must be an object"
		}
		return "must match exactly one of its schemas"
	}
	// kin-openapi's reasons never include the value; keep them short.
	r := strings.TrimPrefix(se.Reason, "value ")
	if r == "" {
		r = "does not match the schema (" + se.SchemaField + ")"
	}
	return textclip.Clip(r, 200)
}

// typeNames says which types a schema allows: "a string", "an integer or
// null".
func typeNames(s *openapi3.Schema) string {
	var names []string
	if s.Type != nil {
		for _, t := range *s.Type {
			switch t {
			case openapi3.TypeArray, openapi3.TypeObject, openapi3.TypeInteger:
				names = append(names, "an "+t)
			case openapi3.TypeNull:
				names = append(names, "null")
			default:
				names = append(names, "a "+t)
			}
		}
	}
	if s.Nullable {
		names = append(names, "null")
	}
	if len(names) == 0 {
		return "of another type"
	}
	return strings.Join(names, " or ")
}

func number(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
