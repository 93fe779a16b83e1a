package schema

import (
	"encoding"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unsafe"
)

// Bind copies a decoded value (as produced by Decode, normally already
// validated) into the Go value that out points to, as encoding/json would
// decode the same JSON, using the same `json` struct tags and field rules:
// exact key matches first, then case-insensitive ones; embedded structs
// promote their fields; unknown keys are ignored; null sets pointers, maps,
// slices and interfaces to nil and leaves other values alone.
//
// Supported targets are bool, strings, integers and floats (and named types
// of them), pointers, slices (and []byte from base64 strings), arrays, maps
// with string keys, structs, time.Time from RFC 3339 strings, empty
// interfaces (assigned the decoded value as it is, without a copy), and
// types that implement json.Unmarshaler or encoding.TextUnmarshaler. The
// ",string" tag option is honored. Unlike encoding/json, an integer target
// accepts any integral number, such as 1e3.
//
// A map[string]any target that is nil is set to the decoded map itself, not
// to a copy.
//
// Errors about the value are *Error, naming its JSON pointer and never the
// value itself; the messages of json.Unmarshaler and TextUnmarshaler
// implementations are dropped for that reason. The binding plan of each Go
// type is built once and cached.
func Bind(value any, out any) error {
	rv := reflect.ValueOf(out)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return errors.New("schema: Bind: out must be a non-nil pointer")
	}
	if e := planFor(rv.Type().Elem()).bind(value, rv.Elem()); e != nil {
		return e
	}
	return nil
}

// binder stores v into dst, which is settable.
type binder func(v any, dst reflect.Value) *Error

// plan is the cached binder of one type; binders of recursive types reach
// themselves through it.
type plan struct {
	bind binder
	// bindObject binds an object in either form; set for struct types
	// without a decoding method of their own.
	bindObject func(o object, dst reflect.Value) *Error
}

// BindMembers is Bind for an object given as Members (see DecodeMembers):
// it binds exactly as Bind binds the same object as a map[string]any. out
// must point to a struct without a decoding method of its own.
func BindMembers(ms Members, out any) error {
	rv := reflect.ValueOf(out)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return errors.New("schema: BindMembers: out must be a non-nil pointer")
	}
	p := planFor(rv.Type().Elem())
	if p.bindObject == nil {
		return errors.New("schema: BindMembers: out must point to a struct without a decoding method")
	}
	if e := p.bindObject(object{ms: ms}, rv.Elem()); e != nil {
		return e
	}
	return nil
}

var (
	plans  sync.Map // reflect.Type -> *plan
	planMu sync.Mutex
)

var (
	timeType            = reflect.TypeFor[time.Time]()
	mapStringAnyType    = reflect.TypeFor[map[string]any]()
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func planFor(t reflect.Type) *plan {
	if p, ok := plans.Load(t); ok {
		return p.(*plan)
	}
	planMu.Lock()
	defer planMu.Unlock()
	b := planner{building: make(map[reflect.Type]*plan)}
	p := b.plan(t)
	for t, p := range b.building {
		plans.Store(t, p)
	}
	return p
}

// planner builds the plans of a type and of the types it contains. They
// are published together once complete.
type planner struct {
	building map[reflect.Type]*plan
}

func (b *planner) plan(t reflect.Type) *plan {
	if p, ok := plans.Load(t); ok {
		return p.(*plan)
	}
	if p, ok := b.building[t]; ok {
		return p
	}
	p := &plan{}
	b.building[t] = p
	p.bind = b.binder(t)
	return p
}

func (b *planner) binder(t reflect.Type) binder {
	if t == timeType {
		return bindTime
	}
	if t.Kind() != reflect.Pointer {
		if reflect.PointerTo(t).Implements(jsonUnmarshalerType) {
			return bindUnmarshalJSON(t)
		}
		if reflect.PointerTo(t).Implements(textUnmarshalerType) {
			return bindUnmarshalText(t)
		}
	}
	switch t.Kind() {
	case reflect.Bool:
		return bindBool
	case reflect.String:
		return bindString
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return bindInt
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return bindUint
	case reflect.Float32, reflect.Float64:
		return bindFloat
	case reflect.Pointer:
		return bindPointer(b.plan(t.Elem()))
	case reflect.Interface:
		return bindInterface
	case reflect.Slice:
		return b.slice(t)
	case reflect.Array:
		return bindArray(b.plan(t.Elem()))
	case reflect.Map:
		return b.mapBinder(t)
	case reflect.Struct:
		return b.structBinder(t)
	}
	return unsupportedType(t)
}

func unsupportedType(t reflect.Type) binder {
	reason := "cannot be stored in Go type " + t.String()
	return func(v any, dst reflect.Value) *Error {
		if v == nil {
			return nil
		}
		return fail(reason)
	}
}

func bindBool(v any, dst reflect.Value) *Error {
	switch x := v.(type) {
	case bool:
		dst.SetBool(x)
	case nil:
	default:
		return fail("must be a boolean")
	}
	return nil
}

func bindString(v any, dst reflect.Value) *Error {
	switch x := v.(type) {
	case string:
		dst.SetString(x)
	case nil:
	default:
		return fail("must be a string")
	}
	return nil
}

func bindFloat(v any, dst reflect.Value) *Error {
	if v == nil {
		return nil
	}
	f, ok := toFloat(v)
	if !ok {
		return fail("must be a number")
	}
	if dst.OverflowFloat(f) {
		return fail("is out of range for Go type " + dst.Type().String())
	}
	dst.SetFloat(f)
	return nil
}

func bindInt(v any, dst reflect.Value) *Error {
	var i int64
	switch x := v.(type) {
	case nil:
		return nil
	case int:
		i = int64(x)
	case int64:
		i = x
	default:
		f, ok := toFloat(v)
		if !ok {
			return fail("must be a number")
		}
		if f != math.Trunc(f) || math.IsInf(f, 0) {
			return fail("must be an integer")
		}
		if f < math.MinInt64 || f >= -math.MinInt64 {
			return fail("is out of range for Go type " + dst.Type().String())
		}
		i = int64(f)
	}
	if dst.OverflowInt(i) {
		return fail("is out of range for Go type " + dst.Type().String())
	}
	dst.SetInt(i)
	return nil
}

func bindUint(v any, dst reflect.Value) *Error {
	if v == nil {
		return nil
	}
	var u uint64
	switch x := v.(type) {
	case uint64:
		u = x
	case uint:
		u = uint64(x)
	default:
		f, ok := toFloat(v)
		if !ok {
			return fail("must be a number")
		}
		if f != math.Trunc(f) || math.IsInf(f, 0) {
			return fail("must be an integer")
		}
		if f < 0 || f >= 2*-math.MinInt64 {
			return fail("is out of range for Go type " + dst.Type().String())
		}
		u = uint64(f)
	}
	if dst.OverflowUint(u) {
		return fail("is out of range for Go type " + dst.Type().String())
	}
	dst.SetUint(u)
	return nil
}

func bindTime(v any, dst reflect.Value) *Error {
	switch x := v.(type) {
	case nil:
		return nil
	case string:
		t := dst.Addr().Interface().(*time.Time)
		if t.UnmarshalText([]byte(x)) != nil {
			return fail("must be an RFC 3339 date-time")
		}
		return nil
	}
	return fail("must be a string")
}

func bindUnmarshalJSON(t reflect.Type) binder {
	reason := "is not valid for Go type " + t.String()
	return func(v any, dst reflect.Value) *Error {
		data, err := json.Marshal(v)
		if err != nil {
			return fail(reason)
		}
		if dst.Addr().Interface().(json.Unmarshaler).UnmarshalJSON(data) != nil {
			return fail(reason)
		}
		return nil
	}
}

func bindUnmarshalText(t reflect.Type) binder {
	reason := "is not valid for Go type " + t.String()
	return func(v any, dst reflect.Value) *Error {
		switch x := v.(type) {
		case nil:
			return nil
		case string:
			if dst.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(x)) != nil {
				return fail(reason)
			}
			return nil
		}
		return fail("must be a string")
	}
}

func bindPointer(elem *plan) binder {
	return func(v any, dst reflect.Value) *Error {
		if v == nil {
			dst.SetZero()
			return nil
		}
		if dst.IsNil() {
			dst.Set(reflect.New(dst.Type().Elem()))
		}
		return elem.bind(v, dst.Elem())
	}
}

func bindInterface(v any, dst reflect.Value) *Error {
	if v == nil {
		dst.SetZero()
		return nil
	}
	// Like encoding/json, decode into a non-nil pointer the interface holds.
	if !dst.IsNil() {
		if e := dst.Elem(); e.Kind() == reflect.Pointer && !e.IsNil() {
			return planFor(e.Type()).bind(v, e)
		}
	}
	if dst.NumMethod() != 0 {
		return fail("cannot be stored in Go type " + dst.Type().String())
	}
	dst.Set(reflect.ValueOf(v))
	return nil
}

func (b *planner) slice(t reflect.Type) binder {
	elem := b.plan(t.Elem())
	bytes := t.Elem().Kind() == reflect.Uint8 &&
		!reflect.PointerTo(t.Elem()).Implements(jsonUnmarshalerType) &&
		!reflect.PointerTo(t.Elem()).Implements(textUnmarshalerType)
	return func(v any, dst reflect.Value) *Error {
		switch x := v.(type) {
		case nil:
			dst.SetZero()
			return nil
		case []any:
			s := reflect.MakeSlice(dst.Type(), len(x), len(x))
			for i, item := range x {
				if e := elem.bind(item, s.Index(i)); e != nil {
					return e.at(i)
				}
			}
			dst.Set(s)
			return nil
		case string:
			if bytes {
				raw, err := base64.StdEncoding.DecodeString(x)
				if err != nil {
					return fail("must be base64")
				}
				dst.SetBytes(raw)
				return nil
			}
		}
		return fail("must be an array")
	}
}

func bindArray(elem *plan) binder {
	return func(v any, dst reflect.Value) *Error {
		switch x := v.(type) {
		case nil:
			return nil
		case []any:
			for i := 0; i < dst.Len(); i++ {
				if i >= len(x) {
					dst.Index(i).SetZero()
					continue
				}
				if e := elem.bind(x[i], dst.Index(i)); e != nil {
					return e.at(i)
				}
			}
			return nil
		}
		return fail("must be an array")
	}
}

func (b *planner) mapBinder(t reflect.Type) binder {
	if t.Key().Kind() != reflect.String {
		return unsupportedType(t)
	}
	elem := b.plan(t.Elem())
	plain := t == mapStringAnyType
	return func(v any, dst reflect.Value) *Error {
		m, ok := v.(map[string]any)
		if !ok {
			if v == nil {
				dst.SetZero()
				return nil
			}
			return fail("must be an object")
		}
		if plain && dst.IsNil() {
			dst.Set(reflect.ValueOf(m))
			return nil
		}
		if dst.IsNil() {
			dst.Set(reflect.MakeMapWithSize(dst.Type(), len(m)))
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		kt, et := dst.Type().Key(), dst.Type().Elem()
		for _, k := range keys {
			ev := reflect.New(et).Elem()
			if e := elem.bind(m[k], ev); e != nil {
				return e.under(k)
			}
			dst.SetMapIndex(reflect.ValueOf(k).Convert(kt), ev)
		}
		return nil
	}
}

// field is one JSON-visible field of a struct.
type field struct {
	name   string
	index  []int
	tagged bool
	plan   *plan
	// set, when not nil, stores a value of the field's usual JSON type
	// directly at the field's offset, without reflection.
	set    directSetter
	offset uintptr
}

// directSetter stores v at p when v has the one JSON type that the field's
// plan would store as it is, and reports whether it did; any other value
// goes through the plan, which converts it or explains the error.
type directSetter func(p unsafe.Pointer, v any) bool

// directSetterFor returns the direct setter for fields of type t: strings,
// float64, bool and map[string]any, without decoding methods. It returns
// nil for every other type.
func directSetterFor(t reflect.Type) directSetter {
	if t == timeType || reflect.PointerTo(t).Implements(jsonUnmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType) {
		return nil
	}
	switch {
	case t.Kind() == reflect.String:
		return func(p unsafe.Pointer, v any) bool {
			s, ok := v.(string)
			if ok {
				*(*string)(p) = s
			}
			return ok
		}
	case t.Kind() == reflect.Float64:
		return func(p unsafe.Pointer, v any) bool {
			f, ok := v.(float64)
			if ok {
				*(*float64)(p) = f
			}
			return ok
		}
	case t.Kind() == reflect.Bool:
		return func(p unsafe.Pointer, v any) bool {
			b, ok := v.(bool)
			if ok {
				*(*bool)(p) = b
			}
			return ok
		}
	case t == mapStringAnyType:
		// A nil map[string]any gets the decoded map itself (see Bind).
		return func(p unsafe.Pointer, v any) bool {
			m, ok := v.(map[string]any)
			if !ok || m == nil || *(*map[string]any)(p) != nil {
				return false
			}
			*(*map[string]any)(p) = m
			return true
		}
	}
	return nil
}

func (b *planner) structBinder(t reflect.Type) binder {
	fields := structFields(t)
	for i := range fields {
		f := &fields[i]
		sf := t.FieldByIndex(f.index)
		f.plan = b.plan(sf.Type)
		if f.quoted(t) {
			f.plan = quoted(f.plan)
		} else if len(f.index) == 1 {
			f.set, f.offset = directSetterFor(sf.Type), sf.Offset
		}
	}
	exact := make(map[string]bool, len(fields))
	for _, f := range fields {
		exact[f.name] = true
	}
	bindObject := func(m object, dst reflect.Value) *Error {
		var base unsafe.Pointer // dst's address, for direct setters
		if dst.CanAddr() {
			base = dst.Addr().UnsafePointer()
		}
		matched := 0
		for i := range fields {
			f := &fields[i]
			x, ok := m.get(f.name)
			if !ok {
				continue
			}
			matched++
			if f.set != nil && base != nil && f.set(unsafe.Add(base, f.offset), x) {
				continue
			}
			fv, e := fieldValue(dst, f.index)
			if e == nil {
				e = f.plan.bind(x, fv)
			}
			if e != nil {
				return e.under(f.name)
			}
		}
		if matched == m.size() {
			return nil
		}
		// Keys that match a field only case-insensitively, in sorted order.
		var rest []string
		m.each(func(k string, _ any) bool {
			if !exact[k] {
				rest = append(rest, k)
			}
			return true
		})
		slices.Sort(rest)
		for _, k := range rest {
			for i := range fields {
				f := &fields[i]
				if _, taken := m.get(f.name); taken || !strings.EqualFold(f.name, k) {
					continue
				}
				fv, e := fieldValue(dst, f.index)
				if e == nil {
					x, _ := m.get(k)
					e = f.plan.bind(x, fv)
				}
				if e != nil {
					return e.under(k)
				}
				break
			}
		}
		return nil
	}
	b.building[t].bindObject = bindObject
	return func(v any, dst reflect.Value) *Error {
		m, ok := v.(map[string]any)
		if !ok {
			if v == nil {
				return nil
			}
			return fail("must be an object")
		}
		return bindObject(object{m: m}, dst)
	}
}

// quoted wraps the plan of a field with the ",string" option: its JSON
// value is a string holding the JSON of the actual value.
func quoted(inner *plan) *plan {
	return &plan{bind: func(v any, dst reflect.Value) *Error {
		s, ok := v.(string)
		if !ok {
			if v == nil {
				return nil
			}
			return fail("must be a string holding a JSON value")
		}
		x, err := Decode([]byte(s))
		if err != nil {
			return fail("must be a string holding a JSON value")
		}
		if _, isMap := x.(map[string]any); isMap {
			return fail("must be a string holding a JSON scalar")
		}
		if _, isSlice := x.([]any); isSlice {
			return fail("must be a string holding a JSON scalar")
		}
		return inner.bind(x, dst)
	}}
}

// fieldValue returns the field at index, allocating embedded pointers.
func fieldValue(v reflect.Value, index []int) (reflect.Value, *Error) {
	if len(index) == 1 {
		return v.Field(index[0]), nil
	}
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				if !v.CanSet() {
					return reflect.Value{}, fail("cannot be stored through a nil pointer to unexported embedded struct " + v.Type().Elem().String())
				}
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v, nil
}

// quoted reports whether the field has the ",string" option on a type it
// applies to.
func (f *field) quoted(t reflect.Type) bool {
	sf := t.FieldByIndex(f.index)
	_, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
	if !slices.Contains(strings.Split(opts, ","), "string") {
		return false
	}
	ft := sf.Type
	if ft.Kind() == reflect.Pointer {
		ft = ft.Elem()
	}
	switch ft.Kind() {
	case reflect.Bool, reflect.String,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// structFields lists the JSON-visible fields of a struct type with the
// rules of encoding/json: tags rename or hide fields, embedded structs
// without a tag promote their fields, and of several fields with one name
// the shallowest wins, then a tagged one, and otherwise none.
func structFields(t reflect.Type) []field {
	type scan struct {
		typ   reflect.Type
		index []int
	}
	var all []field
	visited := map[reflect.Type]bool{}
	count := map[reflect.Type]int{}
	next := []scan{{typ: t}}
	nextCount := map[reflect.Type]int{t: 1}
	for len(next) > 0 {
		current := next
		next = nil
		count, nextCount = nextCount, map[reflect.Type]int{}
		for _, s := range current {
			if visited[s.typ] {
				continue
			}
			visited[s.typ] = true
			for i := 0; i < s.typ.NumField(); i++ {
				sf := s.typ.Field(i)
				if sf.Anonymous {
					ft := sf.Type
					if ft.Kind() == reflect.Pointer {
						ft = ft.Elem()
					}
					if !sf.IsExported() && ft.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, _, _ := strings.Cut(tag, ",")
				if !validTag(name) {
					name = ""
				}
				index := append(slices.Clone(s.index), i)
				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if name != "" || !sf.Anonymous || ft.Kind() != reflect.Struct {
					f := field{name: name, index: index, tagged: name != ""}
					if f.name == "" {
						f.name = sf.Name
					}
					all = append(all, f)
					if count[s.typ] > 1 {
						// The same struct embedded twice at one depth: the
						// copies annihilate each other below.
						all = append(all, f)
					}
					continue
				}
				nextCount[ft]++
				if nextCount[ft] == 1 {
					next = append(next, scan{typ: ft, index: index})
				}
			}
		}
	}
	slices.SortStableFunc(all, func(a, b field) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if c := len(a.index) - len(b.index); c != 0 {
			return c
		}
		if a.tagged != b.tagged {
			if a.tagged {
				return -1
			}
			return 1
		}
		return slices.Compare(a.index, b.index)
	})
	var out []field
	for i := 0; i < len(all); {
		j := i + 1
		for j < len(all) && all[j].name == all[i].name {
			j++
		}
		group := all[i:j]
		i = j
		if len(group) == 1 {
			out = append(out, group[0])
			continue
		}
		// The group is sorted by depth, then tagged first.
		if len(group[0].index) == len(group[1].index) && group[0].tagged == group[1].tagged {
			continue
		}
		out = append(out, group[0])
	}
	return out
}

// validTag reports whether a tag name is one encoding/json accepts.
func validTag(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}
