package trace

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unsafe"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/schema"
)

// The trace's JSON encoder. Emit runs once per event, so it must not pay
// for encoding/json's generality: an encodeFunc appends a value's JSON to a
// reused buffer, following a plan built once by reflection from the Go type
// and its `json` tags (field names come from the generated struct, never
// from this file). The plan reads fields at their offsets, so encoding an
// event costs no reflection and no allocation. The output is byte for byte
// what encoding/json writes with HTML escaping off, for every type the
// planner accepts; the tests fuzz the two against each other. A type it
// does not accept (a custom marshaler, a map, an interface, a []byte, an
// embedded struct, a tag option other than omitempty) makes the planner
// fail, and the Writer then uses encoding/json for the whole event.

// encodeFunc appends the JSON encoding of the value at p, whose type is
// the one the func was planned for.
type encodeFunc func(b []byte, p unsafe.Pointer) ([]byte, error)

// emptyFunc reports whether the value at p is empty in the sense of
// omitempty.
type emptyFunc func(p unsafe.Pointer) bool

// eventEncoder is the plan for gen.TraceEvent, or nil when the planner
// does not accept the type and encoding/json must do the work.
var eventEncoder = sync.OnceValue(func() encodeFunc {
	enc, err := newEncoder(reflect.TypeFor[gen.TraceEvent]())
	if err != nil {
		return nil
	}
	return enc
})

// appendEvent appends the JSON encoding of ev (without a newline) to b.
func appendEvent(b []byte, ev *gen.TraceEvent) ([]byte, error) {
	if enc := eventEncoder(); enc != nil {
		return enc(b, unsafe.Pointer(ev))
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(ev); err != nil {
		return b, err
	}
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...), nil
}

var (
	timeType          = reflect.TypeFor[time.Time]()
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// newEncoder plans the encoding of values of type t.
func newEncoder(t reflect.Type) (encodeFunc, error) {
	return (&planner{building: map[reflect.Type]bool{}}).encoder(t)
}

type planner struct {
	building map[reflect.Type]bool // struct types being planned, to refuse recursion
}

func (p *planner) encoder(t reflect.Type) (encodeFunc, error) {
	if t == timeType {
		return appendTime, nil
	}
	for _, m := range []reflect.Type{marshalerType, textMarshalerType} {
		if t.Implements(m) || t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(m) {
			return nil, fmt.Errorf("%s has its own JSON or text encoding", t)
		}
	}
	switch t.Kind() {
	case reflect.Bool:
		return func(b []byte, p unsafe.Pointer) ([]byte, error) { return strconv.AppendBool(b, *(*bool)(p)), nil }, nil
	case reflect.Int:
		return intEncoder[int](), nil
	case reflect.Int8:
		return intEncoder[int8](), nil
	case reflect.Int16:
		return intEncoder[int16](), nil
	case reflect.Int32:
		return intEncoder[int32](), nil
	case reflect.Int64:
		return intEncoder[int64](), nil
	case reflect.Uint:
		return uintEncoder[uint](), nil
	case reflect.Uint8:
		return uintEncoder[uint8](), nil
	case reflect.Uint16:
		return uintEncoder[uint16](), nil
	case reflect.Uint32:
		return uintEncoder[uint32](), nil
	case reflect.Uint64:
		return uintEncoder[uint64](), nil
	case reflect.Uintptr:
		return uintEncoder[uintptr](), nil
	case reflect.Float32:
		return func(b []byte, p unsafe.Pointer) ([]byte, error) { return appendFloat(b, float64(*(*float32)(p)), 32) }, nil
	case reflect.Float64:
		return func(b []byte, p unsafe.Pointer) ([]byte, error) { return appendFloat(b, *(*float64)(p), 64) }, nil
	case reflect.String:
		return func(b []byte, p unsafe.Pointer) ([]byte, error) { return schema.AppendString(b, *(*string)(p)), nil }, nil
	case reflect.Pointer:
		elem, err := p.encoder(t.Elem())
		if err != nil {
			return nil, err
		}
		return func(b []byte, p unsafe.Pointer) ([]byte, error) {
			target := *(*unsafe.Pointer)(p)
			if target == nil {
				return append(b, "null"...), nil
			}
			return elem(b, target)
		}, nil
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return nil, fmt.Errorf("%s is encoded as base64", t)
		}
		elem, err := p.encoder(t.Elem())
		if err != nil {
			return nil, err
		}
		if t.Elem().Kind() == reflect.String {
			return appendStrings, nil
		}
		return sliceEncoder(t, elem), nil
	case reflect.Struct:
		return p.structEncoder(t)
	}
	return nil, fmt.Errorf("%s: unsupported kind %s", t, t.Kind())
}

func intEncoder[T int | int8 | int16 | int32 | int64]() encodeFunc {
	return func(b []byte, p unsafe.Pointer) ([]byte, error) {
		return strconv.AppendInt(b, int64(*(*T)(p)), 10), nil
	}
}

func uintEncoder[T uint | uint8 | uint16 | uint32 | uint64 | uintptr]() encodeFunc {
	return func(b []byte, p unsafe.Pointer) ([]byte, error) {
		return strconv.AppendUint(b, uint64(*(*T)(p)), 10), nil
	}
}

// sliceEncoder walks a slice with reflection: slices are rare in events.
func sliceEncoder(t reflect.Type, elem encodeFunc) encodeFunc {
	return func(b []byte, p unsafe.Pointer) ([]byte, error) {
		v := reflect.NewAt(t, p).Elem()
		if v.IsNil() {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for i := range v.Len() {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = elem(b, v.Index(i).Addr().UnsafePointer()); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	}
}

// appendStrings writes a slice of strings (or of a string type, which has
// the same memory layout), such as argument_keys.
func appendStrings(b []byte, p unsafe.Pointer) ([]byte, error) {
	ss := *(*[]string)(p)
	if ss == nil {
		return append(b, "null"...), nil
	}
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = schema.AppendString(b, s)
	}
	return append(b, ']'), nil
}

// field is one member of a struct's plan.
type field struct {
	offset  uintptr
	key     string // `"name":`
	omitNil bool   // an omitempty pointer, tested inline: most event fields are
	empty   emptyFunc
	encode  encodeFunc
}

func (p *planner) structEncoder(t reflect.Type) (encodeFunc, error) {
	if p.building[t] {
		return nil, fmt.Errorf("%s is recursive", t)
	}
	p.building[t] = true
	defer delete(p.building, t)
	var fields []field
	seen := map[string]bool{}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			return nil, fmt.Errorf("%s embeds %s", t, f.Type)
		}
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" || !validTagName(name) {
			name = f.Name
		}
		if opts != "" && opts != "omitempty" {
			return nil, fmt.Errorf("%s.%s: unsupported tag options %q", t, f.Name, opts)
		}
		if seen[name] {
			return nil, fmt.Errorf("%s: two fields named %s", t, name)
		}
		seen[name] = true
		enc, err := p.encoder(f.Type)
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", t, f.Name, err)
		}
		fp := field{offset: f.Offset, key: string(schema.AppendString(nil, name)) + ":", encode: enc}
		switch {
		case opts != "omitempty":
		case f.Type.Kind() == reflect.Pointer:
			fp.omitNil = true
		default:
			fp.empty = emptyTest(f.Type)
		}
		fields = append(fields, fp)
	}
	return func(b []byte, p unsafe.Pointer) ([]byte, error) {
		b = append(b, '{')
		first := true
		for i := range fields {
			f := &fields[i]
			fp := unsafe.Add(p, f.offset)
			if f.omitNil && *(*unsafe.Pointer)(fp) == nil || f.empty != nil && f.empty(fp) {
				continue
			}
			if !first {
				b = append(b, ',')
			}
			first = false
			b = append(b, f.key...)
			var err error
			if b, err = f.encode(b, fp); err != nil {
				return b, err
			}
		}
		return append(b, '}'), nil
	}, nil
}

// validTagName reports whether encoding/json uses a tag's name (it falls
// back to the Go field name otherwise).
func validTagName(s string) bool {
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

// emptyTest is encoding/json's test for omitempty on type t (but
// pointers, which the struct encoder tests itself): false, 0, an empty
// string or slice. Structs are never empty.
func emptyTest(t reflect.Type) emptyFunc {
	switch t.Kind() {
	case reflect.String:
		return func(p unsafe.Pointer) bool { return len(*(*string)(p)) == 0 }
	case reflect.Struct:
		return nil
	}
	// Numbers, bools and slices: by reflection, as they are rare.
	return func(p unsafe.Pointer) bool {
		v := reflect.NewAt(t, p).Elem()
		if v.Kind() == reflect.Slice {
			return v.Len() == 0
		}
		return v.IsZero()
	}
}

// appendTime writes a time as time.Time.MarshalJSON does: RFC 3339 with
// nanoseconds, quoted. Times in UTC, as the loop writes them, take a path
// that formats the fields directly, reusing the date and time of the last
// second formatted; it writes the same bytes.
func appendTime(b []byte, p unsafe.Pointer) ([]byte, error) {
	t := (*time.Time)(p)
	if t.Location() == time.UTC {
		if sec := secondOf(t); sec != nil {
			b = append(b, '"')
			b = append(b, sec.text[:]...)
			b = appendNanos(b, t.Nanosecond())
			return append(b, 'Z', '"'), nil
		}
	}
	text, err := t.AppendText(append(b, '"'))
	if err != nil {
		return b, err // the year is outside 0 to 9999
	}
	return append(text, '"'), nil
}

// second is the formatted date and time of one second, in UTC.
type second struct {
	unix int64
	text [len("2006-01-02T15:04:05")]byte
}

// lastSecond is the second formatted last: the events of a run share it.
var lastSecond atomic.Pointer[second]

// secondOf returns the second of t, a time in UTC, or nil when its year
// is outside 0 to 9999.
func secondOf(t *time.Time) *second {
	unix := t.Unix()
	if s := lastSecond.Load(); s != nil && s.unix == unix {
		return s
	}
	y, mo, d := t.Date()
	if y < 0 || y > 9999 {
		return nil
	}
	h, mi, sec := t.Clock()
	s := &second{unix: unix}
	b := append2(append2(s.text[:0], y/100), y%100)
	b = append2(append(b, '-'), int(mo))
	b = append2(append(b, '-'), d)
	b = append2(append(b, 'T'), h)
	b = append2(append(b, ':'), mi)
	append2(append(b, ':'), sec)
	lastSecond.Store(s)
	return s
}

// append2 appends n (0 to 99) in two digits.
func append2(b []byte, n int) []byte {
	return append(b, byte('0'+n/10), byte('0'+n%10))
}

// appendNanos appends the fraction of a second as RFC3339Nano does: a dot
// and up to nine digits without trailing zeros, or nothing for zero.
func appendNanos(b []byte, ns int) []byte {
	if ns == 0 {
		return b
	}
	var digits [10]byte
	digits[0] = '.'
	for i := 9; i > 0; i-- {
		digits[i] = byte('0' + ns%10)
		ns /= 10
	}
	n := 10
	for digits[n-1] == '0' {
		n--
	}
	return append(b, digits[:n]...)
}

// appendFloat writes a number as encoding/json does: like ES6, in %f form
// unless the exponent is very small or large, and never NaN or infinity.
func appendFloat(b []byte, f float64, bits int) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b, fmt.Errorf("unsupported number %s", strconv.FormatFloat(f, 'g', -1, bits))
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if format == 'e' {
		// e-09 becomes e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}
