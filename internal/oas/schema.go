package oas

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/specloop/specloop/internal/textclip"
)

// A schema keyword's value is one of these kinds.
type kind int

const (
	kSchema     kind = iota // a schema (items, not)
	kSchemas                // a non-empty list of schemas (allOf ...)
	kProperties             // an object of schemas
	kCount                  // a non-negative integer
	kNumber
	kBool
	kString
	kStrings // a list of strings
	kList    // a list of values
	kObject  // an object, kept as it is
	kValue   // any value
	kDrop    // a keyword that is dropped
)

// keywords are the keywords of an OpenAPI 3.0 Schema Object (and const,
// of 3.1), by what their values are. exclusiveMinimum/Maximum, type,
// additionalProperties and pattern are checked by themselves.
var keywords = map[string]kind{
	"items": kSchema, "not": kSchema,
	"allOf": kSchemas, "anyOf": kSchemas, "oneOf": kSchemas,
	"properties": kProperties,
	"minLength":  kCount, "maxLength": kCount, "minItems": kCount, "maxItems": kCount,
	"minProperties": kCount, "maxProperties": kCount,
	"minimum": kNumber, "maximum": kNumber, "multipleOf": kNumber,
	"uniqueItems": kBool, "readOnly": kBool, "writeOnly": kBool, "deprecated": kBool, "nullable": kBool,
	"title": kString, "description": kString, "format": kString,
	"required": kStrings, "enum": kList,
	"discriminator": kObject,
	"default":       kValue, "const": kValue,
	"example": kDrop, "examples": kDrop, "xml": kDrop, "externalDocs": kDrop,
}

// typeNames are the names a type may have.
var typeNames = []string{"string", "number", "integer", "boolean", "array", "object", "null"}

// schema converts the schema v at the place at to JSON Schema, inlining
// its $refs; refs are the $refs being inlined around it, depth its
// nesting.
func (p *parser) schema(v any, at []string, depth int, refs []string) (map[string]any, error) {
	if depth > MaxSchemaDepth {
		return nil, errorAt(at, "a schema nested deeper than %d levels once its $refs are inlined", MaxSchemaDepth)
	}
	if p.schemas++; p.schemas > maxSchemas {
		return nil, errorAt(at, "the schemas expand to more than %d schemas once their $refs are inlined", maxSchemas)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errorAt(at, "a schema must be an object")
	}
	if ref, ok := m["$ref"]; ok {
		target, tat, err := p.resolve(ref, at)
		if err != nil {
			return nil, err
		}
		s := ref.(string)
		if slices.Contains(refs, s) {
			return nil, errorAt(at, "$ref %q is recursive: a schema that contains itself cannot be inlined", textclip.Clip(s, 200))
		}
		return p.schema(target, tat, depth+1, append(slices.Clip(refs), s))
	}
	out := make(map[string]any, len(m))
	for _, key := range slices.Sorted(maps.Keys(m)) {
		val, kat := m[key], join(at, key)
		k, known := keywords[key]
		switch {
		case key == "type":
			if err := checkType(val, kat); err != nil {
				return nil, err
			}
			out[key] = clone(val)
			continue
		case key == "pattern":
			s, ok := val.(string)
			if !ok {
				return nil, errorAt(kat, "must be a string")
			}
			if _, err := regexp.Compile(s); err != nil {
				return nil, errorAt(kat, "invalid pattern %q: %v", textclip.Clip(s, 200), err)
			}
			out[key] = s
			continue
		case key == "additionalProperties":
			if b, ok := val.(bool); ok {
				out[key] = b
				continue
			}
			k, known = kSchema, true
		case key == "exclusiveMinimum" || key == "exclusiveMaximum":
			if _, ok := val.(bool); ok {
				continue // converted below
			}
			k, known = kNumber, true
		case !known:
			if strings.HasPrefix(key, "x-") {
				continue
			}
			return nil, errorAt(kat, "%q is not a keyword of an OpenAPI 3.0 schema", textclip.Clip(key, 64))
		}
		var err error
		if out[key], err = p.keyword(k, val, kat, depth, refs); err != nil {
			return nil, err
		}
		if k == kDrop {
			delete(out, key)
		}
	}
	for _, bound := range []string{"Minimum", "Maximum"} {
		limit := strings.ToLower(bound)
		if excl, _ := m["exclusive"+bound].(bool); excl && out[limit] != nil {
			out["exclusive"+bound] = out[limit]
			delete(out, limit)
		}
	}
	if nullable, _ := out["nullable"].(bool); nullable {
		switch t := out["type"].(type) {
		case string:
			out["type"] = []any{t, "null"}
		case []any:
			if !slices.Contains(t, any("null")) {
				out["type"] = append(t, "null")
			}
		}
		if enum, ok := out["enum"].([]any); ok && !slices.Contains(enum, nil) {
			out["enum"] = append(enum, nil)
		}
	}
	delete(out, "nullable")
	return out, nil
}

// keyword checks and converts the value v of a keyword of kind k.
func (p *parser) keyword(k kind, v any, at []string, depth int, refs []string) (any, error) {
	var ok bool
	switch k {
	case kSchema:
		return p.schema(v, at, depth+1, refs)
	case kSchemas:
		list, _ := v.([]any)
		if len(list) == 0 {
			return nil, errorAt(at, "must be a non-empty list of schemas")
		}
		out := make([]any, len(list))
		for i, s := range list {
			var err error
			if out[i], err = p.schema(s, join(at, strconv.Itoa(i)), depth+1, refs); err != nil {
				return nil, err
			}
		}
		return out, nil
	case kProperties:
		props, ok := v.(map[string]any)
		if !ok {
			return nil, errorAt(at, "must be an object of schemas")
		}
		out := make(map[string]any, len(props))
		for _, name := range slices.Sorted(maps.Keys(props)) {
			var err error
			if out[name], err = p.schema(props[name], join(at, name), depth+1, refs); err != nil {
				return nil, err
			}
		}
		return out, nil
	case kCount:
		f, isNum := v.(float64)
		if !isNum || f < 0 || f != math.Trunc(f) {
			return nil, errorAt(at, "must be a non-negative integer")
		}
		return f, nil
	case kNumber:
		_, ok = v.(float64)
	case kBool:
		_, ok = v.(bool)
	case kString:
		_, ok = v.(string)
	case kStrings:
		list, isList := v.([]any)
		ok = isList && !slices.ContainsFunc(list, func(s any) bool { _, isString := s.(string); return !isString })
	case kList:
		_, ok = v.([]any)
	case kObject:
		_, ok = v.(map[string]any)
	case kValue, kDrop:
		ok = true
	}
	if !ok {
		return nil, errorAt(at, "must be %s", map[kind]string{
			kNumber: "a number", kBool: "a boolean", kString: "a string",
			kStrings: "a list of strings", kList: "a list", kObject: "an object",
		}[k])
	}
	return clone(v), nil
}

// checkType checks a type: one name, or (OpenAPI 3.1) a list of names.
func checkType(v any, at []string) error {
	names, isList := v.([]any)
	if !isList {
		names = []any{v}
	}
	for _, n := range names {
		s, _ := n.(string)
		if !slices.Contains(typeNames, s) || s == "null" && !isList {
			return errorAt(at, "%s is not a type (string, number, integer, boolean, array, object)", textclip.Clip(fmt.Sprint(v), 64))
		}
	}
	return nil
}

// clone copies a decoded value, so that no two schemas share a map or a
// list.
func clone(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = clone(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = clone(e)
		}
		return out
	}
	return v
}
