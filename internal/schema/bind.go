package schema

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/go-json-experiment/json"
)

// Bind stores a decoded value (normally already validated) in the Go value
// out points to, such as a generated input type, by encoding it and decoding
// the result with the JSON library: names match exactly, unknown keys are
// ignored. An integral number fits an integer field whatever way it was
// written (1.0, 1e2), because decoded numbers are float64 and encode in
// their shortest form.
//
// A value that does not fit its Go type (an integer past the type's range,
// a string for a number) is an *Error naming the field; any other error
// means out is not a type JSON can fill.
func Bind(value any, out any) error {
	if rv := reflect.ValueOf(out); rv.Kind() != reflect.Pointer || rv.IsNil() {
		return errors.New("schema: Bind: out must be a non-nil pointer")
	}
	// Through a pointer, the JSON library encodes the decoded values
	// (map[string]any, []any, ...) on its fast path for an any, rather
	// than by reflection: half the time of a calculator's arguments.
	data, err := json.Marshal(&value)
	if err != nil {
		return fmt.Errorf("schema: Bind: encode: %w", err)
	}
	return Unmarshal(data, out)
}

// Unmarshal decodes JSON text into the Go value out points to, as Bind does:
// a value that does not fit its Go type is an *Error naming the field.
// It does not reject duplicate keys or check schemas: use Decode and
// Validate first for untrusted input.
func Unmarshal(data []byte, out any) error {
	err := json.Unmarshal(data, out)
	if err == nil {
		return nil
	}
	var me *json.SemanticError
	if errors.As(err, &me) && me.JSONKind != 0 {
		reason := "does not fit its type"
		if me.GoType != nil {
			switch me.GoType.Kind() {
			case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
				reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
				reason = fmt.Sprintf("must be an integer that fits in %d bits", me.GoType.Bits())
				if me.GoType.Kind() >= reflect.Uint {
					reason = fmt.Sprintf("must be a non-negative integer that fits in %d bits", me.GoType.Bits())
				}
			case reflect.Float32, reflect.Float64:
				reason = "is out of range"
			}
		}
		return &Error{Pointer: string(me.JSONPointer), Reason: reason}
	}
	return fmt.Errorf("schema: decode into %T: %w", out, err)
}
