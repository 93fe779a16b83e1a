package adapt

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"

	"github.com/specloop/specloop/internal/schema"
)

// The adapters write request bodies with these appenders instead of
// encoding/json's reflection (or the SDKs' encoders, which re-compact every
// nested value): a 50-step history is then a few hundred microseconds
// cheaper per model call. The output is what encoding/json produces without
// HTML escaping; FuzzAppendValue checks it.

// AppendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD, as
// with encoding/json.
func AppendString(dst []byte, s string) []byte { return schema.AppendString(dst, s) }

// AppendFloat appends f as encoding/json does.
func AppendFloat(dst []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	n := len(dst)
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		if m := len(dst) - n; m >= 4 && dst[len(dst)-4] == 'e' && dst[len(dst)-3] == '-' && dst[len(dst)-2] == '0' {
			dst[len(dst)-2] = dst[len(dst)-1]
			dst = dst[:len(dst)-1]
		}
	}
	return dst
}

// AppendValue appends a JSON value: the types a JSON decoder produces
// (map[string]any with sorted keys, []any, string, float64, bool, nil) fast,
// anything else through encoding/json. NaN and infinities are errors, as
// with encoding/json.
func AppendValue(dst []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case string:
		return AppendString(dst, v), nil
	case bool:
		return strconv.AppendBool(dst, v), nil
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return dst, &json.UnsupportedValueError{Str: strconv.FormatFloat(v, 'g', -1, 64)}
		}
		return AppendFloat(dst, v), nil
	case int:
		return strconv.AppendInt(dst, int64(v), 10), nil
	case int64:
		return strconv.AppendInt(dst, v, 10), nil
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendString(dst, k)
			dst = append(dst, ':')
			var err error
			if dst, err = AppendValue(dst, v[k]); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	case []any:
		dst = append(dst, '[')
		for i, item := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = AppendValue(dst, item); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		return dst, err
	}
	return append(dst, data...), nil
}
