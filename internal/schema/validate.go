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

// Direction says which side of an exchange a value is on, which decides
// whether readOnly or writeOnly properties are refused, as OpenAPI says.
type Direction int

const (
	// Request values (tool arguments, request bodies) must not carry readOnly
	// properties.
	Request Direction = iota
	// Response values (tool results, response bodies) must not carry
	// writeOnly properties.
	Response
	// Neither is for values that are not sent in either direction, such as
	// a model's action or a trace line: readOnly and writeOnly are not
	// checked (and kin-openapi does not copy the value to try oneOf
	// branches).
	Neither
)

// Validator checks decoded JSON values against one schema of the spec with
// kin-openapi. It is immutable and safe for concurrent use.
type Validator struct {
	schema *openapi3.Schema
	opts   []openapi3.SchemaValidationOption
}

// Compile returns the Validator of a kin-openapi schema, with its
// references resolved, for request values. Build it once and share it.
func Compile(s *openapi3.Schema) (*Validator, error) { return CompileFor(s, Request) }

// CompileFor is Compile for values going in the given direction.
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
	return &Validator{schema: s, opts: opts}, nil
}

// Validate checks a decoded value (as Decode or encoding/json produce it)
// and returns nil or an *Error for the first problem kin-openapi found.
func (v *Validator) Validate(value any) error {
	if err := v.schema.VisitJSON(value, v.opts...); err != nil {
		return FromSchemaError(err)
	}
	return nil
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
}

// Error formats the error as `field "/pointer": reason`, or as
// "value: reason" when the problem is the whole value.
func (e *Error) Error() string {
	if e.Pointer == "" {
		return "value: " + e.Reason
	}
	return "field " + quotePointer(e.Pointer) + ": " + e.Reason
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
