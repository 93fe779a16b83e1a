package tools

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/specloop/specloop/internal/schema"
)

// toData turns a generated result struct into the JSON values encoding/json
// would produce for it (objects as map[string]any, numbers as float64), with
// a per-type plan built once, so a tool call does not pay for a marshal and
// a parse.
func toData(out any) (map[string]any, error) {
	v := reflect.ValueOf(out)
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil, fmt.Errorf("nil result")
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil, fmt.Errorf("result is %s, not a struct", v.Type())
	}
	m, ok := plainValue(v).(map[string]any)
	if !ok {
		return slowData(out)
	}
	return m, nil
}

type fieldPlan struct {
	index     int
	name      string
	omitEmpty bool
}

var plans sync.Map // reflect.Type -> []fieldPlan

func planFor(t reflect.Type) []fieldPlan {
	if p, ok := plans.Load(t); ok {
		return p.([]fieldPlan)
	}
	var fields []fieldPlan
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		fields = append(fields, fieldPlan{index: i, name: name, omitEmpty: strings.Contains(opts, "omitempty")})
	}
	plans.Store(t, fields)
	return fields
}

var timeType = reflect.TypeFor[time.Time]()

// plainValue converts v; it returns errUnsupported for kinds it does not
// handle, and toData then falls back to encoding/json.
func plainValue(v reflect.Value) any {
	switch v.Kind() {
	case reflect.String:
		return v.String()
	case reflect.Bool:
		return v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return float64(v.Uint())
	case reflect.Float32, reflect.Float64:
		return v.Float()
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return plainValue(v.Elem())
	case reflect.Slice:
		if v.IsNil() {
			return nil
		}
		out := make([]any, v.Len())
		for i := range out {
			if out[i] = plainValue(v.Index(i)); out[i] == errUnsupported {
				return errUnsupported
			}
		}
		return out
	case reflect.Map:
		if v.IsNil() {
			return nil
		}
		if v.Type().Key().Kind() != reflect.String {
			return errUnsupported
		}
		out := make(map[string]any, v.Len())
		for it := v.MapRange(); it.Next(); {
			if out[it.Key().String()] = plainValue(it.Value()); out[it.Key().String()] == errUnsupported {
				return errUnsupported
			}
		}
		return out
	case reflect.Struct:
		if v.Type() == timeType {
			return v.Interface().(time.Time).Format(time.RFC3339Nano)
		}
		plan := planFor(v.Type())
		out := make(map[string]any, len(plan))
		for _, f := range plan {
			fv := v.Field(f.index)
			if f.omitEmpty && fv.IsZero() && fv.Kind() != reflect.Struct {
				continue
			}
			if out[f.name] = plainValue(fv); out[f.name] == errUnsupported {
				return errUnsupported
			}
		}
		return out
	}
	return errUnsupported
}

// errUnsupported marks a value plainValue cannot convert.
var errUnsupported = &struct{ unsupported bool }{true}

func slowData(out any) (map[string]any, error) {
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	v, err := schema.Decode(b)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("result is %T, not an object", v)
	}
	return m, nil
}
