package schema

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

// CompileFor returns the Validator of a kin-openapi schema, with its
// references resolved, for values going in the given direction. It goes
// when nothing passes kin-openapi schemas any more: use Compile.
func CompileFor(s *openapi3.Schema, dir Direction) (*Validator, error) {
	if s == nil {
		return nil, errors.New("schema: nil schema")
	}
	var opts []openapi3.SchemaValidationOption
	switch dir {
	case Request:
		opts = append(opts, openapi3.VisitAsRequest())
	case Response:
		opts = append(opts, openapi3.VisitAsResponse())
	}
	return &Validator{check: func(value any) error {
		if err := s.VisitJSON(value, opts...); err != nil {
			return FromSchemaError(err)
		}
		return nil
	}}, nil
}

// FromSchemaError turns an error of kin-openapi's VisitJSON (or of
// openapi3filter's request validation, which wraps one) into an *Error
// that names the deepest field found and says what is wrong without the
// value. An error that holds no *openapi3.SchemaError becomes a generic
// *Error for the whole value.
func FromSchemaError(err error) *Error {
	var se *openapi3.SchemaError
	if !errors.As(err, &se) {
		return &Error{Reason: "does not match the schema"}
	}
	se = Innermost(se)
	tokens := se.JSONPointer()
	n := len(tokens)
	reason := reasonOf(se, &tokens)
	unknown := (se.SchemaField == "properties" || se.SchemaField == "additionalProperties") && len(tokens) > n
	return &Error{Pointer: pointer(tokens), Reason: reason, Unknown: unknown}
}

// Innermost follows a oneOf failure into the branch the discriminator chose
// (or the only branch tried), so the pointer names the deepest field.
func Innermost(se *openapi3.SchemaError) *openapi3.SchemaError {
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
		return "must be " + kinTypeNames(s)
	case "nullable":
		if s.Type != nil && len(*s.Type) > 0 {
			return "must be " + kinTypeNames(s)
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

// kinTypeNames says which types a schema allows: "a string", "an integer or
// null".
func kinTypeNames(s *openapi3.Schema) string {
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
