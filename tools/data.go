package tools

import (
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"unicode/utf8"
)

// toData turns a generated result struct into the JSON values of the
// Observation's data (objects as map[string]any, numbers as float64): the
// data is exactly what the result's JSON is. The plain shapes the tools'
// results are made of (structs of tagged fields, pointers, slices,
// string-keyed maps, strings, ints, float64s, booleans) are converted
// directly, without encoding the result as text and decoding it again,
// which cost a step more than the tool's own work; a result of any other
// shape (see direct) goes through encoding/json.
func toData(out any) (map[string]any, error) {
	v, err := direct(reflect.ValueOf(out))
	if errors.Is(err, errIndirect) {
		var b []byte
		if b, err = json.Marshal(out); err == nil {
			err = json.Unmarshal(b, &v)
		}
	}
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok || m == nil {
		return nil, fmt.Errorf("result is not an object")
	}
	return m, nil
}

// errIndirect says that direct leaves a value to encoding/json.
var errIndirect = errors.New("not a plain value")

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// direct is v as the JSON values encoding/json would make of it, for the
// plain shapes; for anything else (a value that encodes itself, such as a
// union or a time, an embedded field, a tag option but omitempty, a map of
// other keys, a string that is not UTF-8, a number JSON cannot hold, a
// float32 or an unsigned integer, []byte) it returns errIndirect, so that
// toData encodes the whole.
func direct(v reflect.Value) (any, error) {
	if !v.IsValid() {
		return nil, nil
	}
	t := v.Type()
	if t.Implements(jsonMarshaler) || t.Implements(textMarshaler) || reflect.PointerTo(t).Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(textMarshaler) {
		return nil, errIndirect // it encodes itself
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil, nil
		}
		return direct(v.Elem())
	case reflect.Bool:
		return v.Bool(), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(v.Int()), nil
	case reflect.Float64:
		if f := v.Float(); !math.IsInf(f, 0) && !math.IsNaN(f) {
			return f, nil
		}
	case reflect.String:
		if s := v.String(); utf8.ValidString(s) {
			return s, nil
		}
	case reflect.Slice:
		if v.IsNil() {
			return nil, nil
		}
		if t.Elem().Kind() != reflect.Uint8 { // []byte is base64 text
			out := make([]any, v.Len())
			for i := range out {
				e, err := direct(v.Index(i))
				if err != nil {
					return nil, err
				}
				out[i] = e
			}
			return out, nil
		}
	case reflect.Map:
		if t.Key() != reflect.TypeFor[string]() {
			break
		}
		if v.IsNil() {
			return nil, nil
		}
		out := make(map[string]any, v.Len())
		for it := v.MapRange(); it.Next(); {
			k := it.Key().String()
			if !utf8.ValidString(k) {
				return nil, errIndirect
			}
			e, err := direct(it.Value())
			if err != nil {
				return nil, err
			}
			out[k] = e
		}
		return out, nil
	case reflect.Struct:
		return directStruct(v)
	}
	return nil, errIndirect
}

// directStruct is direct for a struct: its exported fields by their JSON
// names, those tagged omitempty left out when empty.
func directStruct(v reflect.Value) (any, error) {
	t := v.Type()
	out := make(map[string]any, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			return nil, errIndirect
		}
		if !f.IsExported() || f.Tag.Get("json") == "-" {
			continue
		}
		name, opts := fieldName(f)
		if opts != "" && opts != "omitempty" || !utf8.ValidString(name) {
			return nil, errIndirect
		}
		for j := range i { // two fields of one name: encoding/json's rules say which is kept
			if g := t.Field(j); g.IsExported() && g.Tag.Get("json") != "-" {
				if other, _ := fieldName(g); other == name {
					return nil, errIndirect
				}
			}
		}
		fv := v.Field(i)
		if opts == "omitempty" && empty(fv) {
			continue
		}
		e, err := direct(fv)
		if err != nil {
			return nil, err
		}
		out[name] = e
	}
	return out, nil
}

// fieldName is the JSON name of f and its tag's options.
func fieldName(f reflect.StructField) (name, opts string) {
	name, opts, _ = strings.Cut(f.Tag.Get("json"), ",")
	if name == "" {
		name = f.Name
	}
	return name, opts
}

// empty is encoding/json's omitempty: false, 0, a nil pointer or
// interface, an empty string, slice, map or array.
func empty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Struct:
		return false
	}
	return v.IsZero()
}
