package trace

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/specloop/specloop/gen"
)

// TestLineEncoderIsEncodingJSON: a LineEncoder's line is the one
// encoding/json writes with HTML characters as they are, byte for byte,
// for values with every field of the trace's and the transcript's types
// filled at random: text that needs escaping, invalid UTF-8, U+2028,
// numbers of every size, empty and nil slices and maps, nested values.
func TestLineEncoderIsEncodingJSON(t *testing.T) {
	values := []func() any{
		func() any { return new(gen.TraceEvent) },
		func() any { return new(gen.TranscriptEntry) },
		func() any { return new(gen.RunResult) },
		func() any { return new(gen.Observation) },
		func() any { return new(gen.ToolCall) },
	}
	r := rand.New(rand.NewPCG(1, 2))
	var enc LineEncoder
	for i := range 3000 {
		v := values[i%len(values)]()
		// Half the values hold no invalid UTF-8, which go-json-experiment
		// encodes; the others mostly do, which encoding/json encodes.
		pool = texts
		if i%2 == 0 {
			pool = texts[:len(texts)-1]
		}
		fill(r, reflect.ValueOf(v).Elem(), 0)
		var want bytes.Buffer
		std := json.NewEncoder(&want)
		std.SetEscapeHTML(false)
		wantErr := std.Encode(v)
		got, err := enc.Encode(v)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("%T: error %v, encoding/json's %v", v, err, wantErr)
		}
		if err == nil && !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("%T:\n got %s\nwant %s", v, got, want.Bytes())
		}
	}
}

var (
	// texts ends with the one of invalid UTF-8; fill picks from pool.
	texts = []string{"", "calculator", "a\"b\\c", "line\nbreak\ttab\r\b\f\x00\x1f", "<b>&</b>", "é ü 日本",
		"\u2028\u2029", "\U0001F600", "\ufffd", "0123456789abcdef", "bad \xff utf-8 \xc3"}
	pool    []string
	numbers = []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 1e-6, 1e-7, 123456789.125, 1e20, 1e21, 1.5e300, -2.5e-300, 7, 0.012345}
)

// fill sets v, and what it holds, at random.
func fill(r *rand.Rand, v reflect.Value, depth int) {
	if v.Type() == reflect.TypeFor[time.Time]() {
		v.Set(reflect.ValueOf(time.Unix(r.Int64N(4e9), r.Int64N(1e9)).UTC()))
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if depth < 6 && r.IntN(4) > 0 {
			v.Set(reflect.New(v.Type().Elem()))
			fill(r, v.Elem(), depth+1)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(r, v.Field(i), depth+1)
			}
		}
	case reflect.String:
		v.SetString(pool[r.IntN(len(pool))])
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 0)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt([]int64{0, 1, -1, 42, math.MaxInt32, math.MinInt64}[r.IntN(6)])
	case reflect.Float64, reflect.Float32:
		v.SetFloat(numbers[r.IntN(len(numbers))])
	case reflect.Slice:
		switch n := r.IntN(4); {
		case n == 0 || depth >= 6:
		case n == 1:
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
		default:
			s := reflect.MakeSlice(v.Type(), n, n)
			for i := range n {
				fill(r, s.Index(i), depth+1)
			}
			v.Set(s)
		}
	case reflect.Map:
		switch n := r.IntN(5); {
		case n == 0 || depth >= 6:
		case n == 1:
			v.Set(reflect.MakeMap(v.Type()))
		default:
			m := reflect.MakeMap(v.Type())
			for range n {
				k := reflect.New(v.Type().Key()).Elem()
				fill(r, k, depth+1)
				e := reflect.New(v.Type().Elem()).Elem()
				fill(r, e, depth+1)
				m.SetMapIndex(k, e)
			}
			v.Set(m)
		}
	case reflect.Interface:
		if a := anyValue(r, depth); a != nil && v.NumMethod() == 0 {
			v.Set(reflect.ValueOf(a))
		}
	}
}

// anyValue is a decoded JSON value (or nil) at random.
func anyValue(r *rand.Rand, depth int) any {
	if depth >= 6 {
		return pool[r.IntN(len(pool))]
	}
	switch r.IntN(6) {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2:
		return numbers[r.IntN(len(numbers))]
	case 3:
		return pool[r.IntN(len(pool))]
	case 4:
		s := make([]any, r.IntN(3))
		for i := range s {
			s[i] = anyValue(r, depth+1)
		}
		return s
	}
	m := map[string]any{}
	for range r.IntN(4) {
		m[pool[r.IntN(len(pool))]] = anyValue(r, depth+1)
	}
	return m
}
