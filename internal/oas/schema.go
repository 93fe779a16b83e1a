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
	kSchema     kind = iota // a schema (items, not), or (3.1) true or false
	kSchemas                // a non-empty list of schemas (allOf ...)
	kProperties             // an object of schemas (properties ...)
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

// keywords are the keywords of an OpenAPI 3.0 Schema Object and those
// OpenAPI 3.1 adds from JSON Schema 2020-12, by what their values are.
// exclusiveMinimum/Maximum, type and pattern are checked by themselves.
var keywords = map[string]kind{
	"items": kSchema, "not": kSchema, "additionalProperties": kSchema,
	"allOf": kSchemas, "anyOf": kSchemas, "oneOf": kSchemas,
	"properties": kProperties,
	"minLength":  kCount, "maxLength": kCount, "minItems": kCount, "maxItems": kCount,
	"minProperties": kCount, "maxProperties": kCount,
	"minimum": kNumber, "maximum": kNumber, "multipleOf": kNumber,
	"uniqueItems": kBool, "readOnly": kBool, "writeOnly": kBool, "deprecated": kBool, "nullable": kBool,
	"title": kString, "description": kString, "format": kString,
	"required": kStrings, "enum": kList,
	"discriminator": kObject,
	"default":       kValue,
	"example":       kDrop, "examples": kDrop, "xml": kDrop, "externalDocs": kDrop,
	// OpenAPI 3.1's. $defs is dropped: a $ref into it is inlined like any
	// other, and an $id or $anchor would name each inlined copy.
	"contains": kSchema, "propertyNames": kSchema, "if": kSchema, "then": kSchema, "else": kSchema,
	"unevaluatedItems": kSchema, "unevaluatedProperties": kSchema, "contentSchema": kSchema,
	"prefixItems":       kSchemas,
	"patternProperties": kProperties, "dependentSchemas": kProperties,
	"minContains": kCount, "maxContains": kCount,
	"contentMediaType": kString, "contentEncoding": kString,
	"const": kValue, "dependentRequired": kObject,
	"$defs": kDrop, "$id": kDrop, "$anchor": kDrop, "$schema": kDrop, "$comment": kDrop,
}

// typeNames are the names a type may have.
var typeNames = []string{"string", "number", "integer", "boolean", "array", "object", "null"}

// schema converts the schema v at the place at to JSON Schema, inlining
// its $refs; refs are the $refs being inlined around it, depth its
// nesting.
func (p *parser) schema(v any, at []string, depth int, refs []string) map[string]any {
	m, ok := v.(map[string]any)
	switch p.schemas++; {
	case p.err != nil:
		return nil // stop at the first problem: the budgets count only work that matters
	case depth > MaxSchemaDepth:
		p.fail(at, "a schema nested deeper than %d levels once its $refs are inlined", MaxSchemaDepth)
		return nil
	case p.schemas > maxSchemas:
		p.fail(at, "the schemas expand to more than %d schemas once their $refs are inlined", maxSchemas)
		return nil
	case !ok:
		p.fail(at, "a schema must be an object")
		return nil
	}
	if ref, ok := m["$ref"]; ok {
		target, tat := p.resolve(ref, at)
		if s, _ := ref.(string); target != nil && slices.Contains(refs, s) {
			p.fail(at, "$ref %q is recursive: a schema that contains itself cannot be inlined", textclip.Clip(s, 200))
		} else if target != nil {
			return p.schema(target, tat, depth+1, append(slices.Clip(refs), s))
		}
		return nil
	}
	out := make(map[string]any, len(m))
	for _, key := range slices.Sorted(maps.Keys(m)) {
		val, kat := m[key], join(at, key)
		k, known := keywords[key]
		switch {
		case key == "type":
			p.checkType(val, kat)
			k, known = kValue, true
		case key == "pattern":
			if s, ok := val.(string); ok && !p.patterns[s] {
				if _, err := regexp.Compile(s); err != nil {
					p.fail(kat, "invalid pattern %q: %v", textclip.Clip(s, 200), err)
				}
				p.patterns[s] = true
			}
			k, known = kString, true
		case key == "exclusiveMinimum" || key == "exclusiveMaximum":
			if _, ok := val.(bool); ok {
				continue // converted below
			}
			k, known = kNumber, true
		case !known && strings.HasPrefix(key, "x-"):
			continue
		case !known:
			p.fail(kat, "%q is not a keyword of an OpenAPI schema", textclip.Clip(key, 64))
		}
		if k != kDrop {
			out[key] = p.keyword(k, val, kat, depth, refs)
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
	return out
}

// keyword checks and converts the value v of a keyword of kind k.
func (p *parser) keyword(k kind, v any, at []string, depth int, refs []string) any {
	var ok bool
	switch k {
	case kSchema:
		return p.subschema(v, at, depth, refs)
	case kSchemas:
		list, _ := v.([]any)
		if len(list) == 0 {
			p.fail(at, "must be a non-empty list of schemas")
		}
		out := make([]any, len(list))
		for i, s := range list {
			out[i] = p.subschema(s, join(at, strconv.Itoa(i)), depth, refs)
		}
		return out
	case kProperties:
		props, ok := v.(map[string]any)
		if !ok {
			p.fail(at, "must be an object of schemas")
		}
		out := make(map[string]any, len(props))
		for _, name := range slices.Sorted(maps.Keys(props)) {
			out[name] = p.subschema(props[name], join(at, name), depth, refs)
		}
		return out
	case kCount:
		f, isNum := v.(float64)
		if !isNum || f < 0 || f != math.Trunc(f) {
			p.fail(at, "must be a non-negative integer")
		}
		return f
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
	case kValue:
		ok = true
	}
	if !ok {
		p.fail(at, "must be %s", map[kind]string{
			kNumber: "a number", kBool: "a boolean", kString: "a string",
			kStrings: "a list of strings", kList: "a list", kObject: "an object",
		}[k])
	}
	return clone(v)
}

// subschema converts a schema inside another, which may also be true or
// false (OpenAPI 3.0 allows that only for additionalProperties).
func (p *parser) subschema(v any, at []string, depth int, refs []string) any {
	if b, ok := v.(bool); ok {
		return b
	}
	return p.schema(v, at, depth+1, refs)
}

// checkType checks a type: one name, or (OpenAPI 3.1) a list of names.
func (p *parser) checkType(v any, at []string) {
	names, isList := v.([]any)
	if !isList {
		names = []any{v}
	}
	for _, n := range names {
		if s, _ := n.(string); !slices.Contains(typeNames, s) {
			p.fail(at, "%s is not a type (string, number, integer, boolean, array, object)", textclip.Clip(fmt.Sprint(v), 64))
		}
	}
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
