package schema

import (
	"strconv"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth is the deepest nesting of arrays and objects that Decode accepts.
const maxDepth = 512

// SyntaxError reports why Decode rejected its input. Msg never quotes the
// input except for a JSON structural character, so it is safe to log and to
// show to a model.
type SyntaxError struct {
	Offset int64  // The byte offset in the input where the problem was found.
	Msg    string // A short description of the problem.
}

// Error formats the error as "invalid JSON at offset N: Msg".
func (e *SyntaxError) Error() string {
	return "invalid JSON at offset " + strconv.FormatInt(e.Offset, 10) + ": " + e.Msg
}

// Decode parses one JSON value strictly. Objects become map[string]any,
// arrays []any, numbers float64, strings string, true and false bool, and
// null nil, as encoding/json produces when decoding into an any.
//
// Unlike encoding/json, Decode rejects duplicate object keys, invalid UTF-8
// in strings and nesting deeper than 512 arrays and objects. Like
// encoding/json, it rejects data after the value other than white space,
// numbers out of the float64 range and control characters in strings, and
// it replaces an escaped lone UTF-16 surrogate with U+FFFD. Decode is safe
// for concurrent use.
//
// Every error is a *SyntaxError. The strings of the result share the memory
// of a single copy of data, which stays alive while any of them does.
func Decode(data []byte) (any, error) {
	d := decoders.Get().(*decoder)
	d.data, d.str, d.pos, d.depth = data, string(data), 0, 0
	v, err := d.value()
	if err == nil {
		d.skipSpace()
		if d.pos < len(d.data) {
			err = d.invalid("after top-level value")
		}
	}
	if err != nil {
		// Members of the containers that were being parsed stay on the
		// stack after an error.
		clear(d.kvs)
		d.kvs = d.kvs[:0]
	}
	d.data, d.str = nil, ""
	if cap(d.kvs) <= 1024 && cap(d.buf) <= 64<<10 {
		decoders.Put(d)
	}
	if err != nil {
		return nil, err
	}
	return v, nil
}

// decoders recycles the decoders' scratch memory.
var decoders = sync.Pool{New: func() any { return &decoder{kvs: make([]kv, 0, 32)} }}

// kv is one parsed object member (or, with an empty key, one array element)
// waiting on the decoder's stack until its container is complete.
type kv struct {
	key string
	val any
	off int
}

type decoder struct {
	data  []byte
	str   string // string(data): unescaped strings are slices of it
	pos   int
	depth int
	kvs   []kv   // members and elements of the containers being parsed
	buf   []byte // scratch for strings with escapes
}

// needsCare marks the string bytes that the fast path cannot copy as they are.
var needsCare = func() (t [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = true
	}
	t['"'] = true
	t['\\'] = true
	for c := 0x80; c < 0x100; c++ {
		t[c] = true
	}
	return t
}()

func (d *decoder) errAt(off int, msg string) *SyntaxError {
	return &SyntaxError{Offset: int64(off), Msg: msg}
}

// invalid reports the byte at d.pos (or the end of input) in a context.
// Only structural characters are quoted: anything else could be part of a
// secret value.
func (d *decoder) invalid(context string) *SyntaxError {
	if d.pos >= len(d.data) {
		return d.errAt(d.pos, "unexpected end of input")
	}
	switch c := d.data[d.pos]; c {
	case '{', '}', '[', ']', ':', ',', '"':
		return d.errAt(d.pos, "invalid character '"+string(rune(c))+"' "+context)
	}
	return d.errAt(d.pos, "invalid character "+context)
}

func (d *decoder) skipSpace() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

func (d *decoder) value() (any, *SyntaxError) {
	d.skipSpace()
	if d.pos >= len(d.data) {
		return nil, d.errAt(d.pos, "unexpected end of input")
	}
	switch c := d.data[d.pos]; c {
	case '{':
		return d.object()
	case '[':
		return d.array()
	case '"':
		s, err := d.string()
		if err != nil {
			return nil, err
		}
		return s, nil
	case 't':
		return true, d.literal("true")
	case 'f':
		return false, d.literal("false")
	case 'n':
		return nil, d.literal("null")
	default:
		if c == '-' || c >= '0' && c <= '9' {
			f, err := d.number()
			if err != nil {
				return nil, err
			}
			return f, nil
		}
		return nil, d.invalid("looking for beginning of value")
	}
}

func (d *decoder) literal(word string) *SyntaxError {
	for i := 0; i < len(word); i++ {
		if d.pos >= len(d.data) {
			return d.errAt(d.pos, "unexpected end of input")
		}
		if d.data[d.pos] != word[i] {
			return d.errAt(d.pos, "invalid character in literal "+word)
		}
		d.pos++
	}
	return nil
}

func (d *decoder) enter() *SyntaxError {
	d.depth++
	if d.depth > maxDepth {
		return d.errAt(d.pos, "exceeded maximum nesting depth of "+strconv.Itoa(maxDepth))
	}
	return nil
}

func (d *decoder) object() (any, *SyntaxError) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	d.pos++ // '{'
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == '}' {
		d.pos++
		d.depth--
		return map[string]any{}, nil
	}
	start := len(d.kvs)
	for {
		if d.pos >= len(d.data) || d.data[d.pos] != '"' {
			return nil, d.invalid("looking for beginning of object key string")
		}
		off := d.pos
		key, err := d.string()
		if err != nil {
			return nil, err
		}
		d.skipSpace()
		if d.pos >= len(d.data) || d.data[d.pos] != ':' {
			return nil, d.invalid("after object key")
		}
		d.pos++
		val, err := d.value()
		if err != nil {
			return nil, err
		}
		d.kvs = append(d.kvs, kv{key: key, val: val, off: off})
		d.skipSpace()
		if d.pos >= len(d.data) {
			return nil, d.errAt(d.pos, "unexpected end of input")
		}
		c := d.data[d.pos]
		d.pos++
		if c == '}' {
			break
		}
		if c != ',' {
			d.pos--
			return nil, d.invalid("after object key:value pair")
		}
		d.skipSpace()
	}
	members := d.kvs[start:]
	m := make(map[string]any, len(members))
	for i := range members {
		m[members[i].key] = members[i].val
		if len(m) != i+1 {
			return nil, d.errAt(members[i].off, "duplicate object key")
		}
	}
	clear(members)
	d.kvs = d.kvs[:start]
	d.depth--
	return m, nil
}

func (d *decoder) array() (any, *SyntaxError) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	d.pos++ // '['
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == ']' {
		d.pos++
		d.depth--
		return []any{}, nil
	}
	start := len(d.kvs)
	for {
		val, err := d.value()
		if err != nil {
			return nil, err
		}
		d.kvs = append(d.kvs, kv{val: val})
		d.skipSpace()
		if d.pos >= len(d.data) {
			return nil, d.errAt(d.pos, "unexpected end of input")
		}
		c := d.data[d.pos]
		d.pos++
		if c == ']' {
			break
		}
		if c != ',' {
			d.pos--
			return nil, d.invalid("after array element")
		}
	}
	elems := d.kvs[start:]
	a := make([]any, len(elems))
	for i := range elems {
		a[i] = elems[i].val
	}
	clear(elems)
	d.kvs = d.kvs[:start]
	d.depth--
	return a, nil
}

// string parses the string starting at d.pos, which holds '"'.
func (d *decoder) string() (string, *SyntaxError) {
	start := d.pos + 1
	data := d.data
	for i := start; i < len(data); {
		c := data[i]
		if !needsCare[c] {
			i++
			continue
		}
		switch {
		case c == '"':
			d.pos = i + 1
			return d.str[start:i], nil
		case c == '\\':
			return d.escapedString(start, i)
		case c < 0x20:
			return "", d.errAt(i, "invalid control character in string")
		default:
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size == 1 {
				return "", d.errAt(i, "invalid UTF-8 in string")
			}
			i += size
		}
	}
	return "", d.errAt(len(data), "unexpected end of input")
}

// escapedString finishes a string whose first escape is at i.
func (d *decoder) escapedString(start, i int) (string, *SyntaxError) {
	data := d.data
	b := append(d.buf[:0], data[start:i]...)
	for i < len(data) {
		c := data[i]
		switch {
		case c == '"':
			d.pos = i + 1
			d.buf = b
			return string(b), nil
		case c == '\\':
			if i+1 >= len(data) {
				return "", d.errAt(len(data), "unexpected end of input")
			}
			switch e := data[i+1]; e {
			case '"', '\\', '/':
				b = append(b, e)
				i += 2
			case 'b':
				b = append(b, '\b')
				i += 2
			case 'f':
				b = append(b, '\f')
				i += 2
			case 'n':
				b = append(b, '\n')
				i += 2
			case 'r':
				b = append(b, '\r')
				i += 2
			case 't':
				b = append(b, '\t')
				i += 2
			case 'u':
				r, err := d.hex4(i + 2)
				if err != nil {
					return "", err
				}
				i += 6
				if utf16.IsSurrogate(r) {
					// A high surrogate followed by an escaped low one is a
					// pair; anything else leaves a lone surrogate, which
					// becomes U+FFFD as in encoding/json.
					if i+1 < len(data) && data[i] == '\\' && data[i+1] == 'u' {
						if r2, err := d.hex4(i + 2); err == nil {
							if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
								r = dec
								i += 6
							}
						}
					}
					if utf16.IsSurrogate(r) {
						r = utf8.RuneError
					}
				}
				b = utf8.AppendRune(b, r)
			default:
				return "", d.errAt(i+1, "invalid escape in string")
			}
		case c < 0x20:
			return "", d.errAt(i, "invalid control character in string")
		case c < utf8.RuneSelf:
			b = append(b, c)
			i++
		default:
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size == 1 {
				return "", d.errAt(i, "invalid UTF-8 in string")
			}
			b = append(b, data[i:i+size]...)
			i += size
		}
	}
	return "", d.errAt(len(data), "unexpected end of input")
}

// hex4 reads the four hex digits of a \u escape starting at i.
func (d *decoder) hex4(i int) (rune, *SyntaxError) {
	var r rune
	for j := i; j < i+4; j++ {
		if j >= len(d.data) {
			return 0, d.errAt(len(d.data), "unexpected end of input")
		}
		c := d.data[j]
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, d.errAt(j, "invalid \\u escape in string")
		}
		r = r<<4 | rune(c)
	}
	return r, nil
}

// number parses the number starting at d.pos.
func (d *decoder) number() (float64, *SyntaxError) {
	data := d.data
	start := d.pos
	i := start
	neg := data[i] == '-'
	if neg {
		i++
	}
	if i >= len(data) {
		return 0, d.errAt(i, "unexpected end of input")
	}
	digits := i
	var n uint64
	switch c := data[i]; {
	case c == '0':
		i++
	case c >= '1' && c <= '9':
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			n = n*10 + uint64(data[i]-'0')
			i++
		}
	default:
		d.pos = i
		return 0, d.invalid("in numeric literal")
	}
	simple := true
	if i < len(data) && data[i] == '.' {
		simple = false
		i++
		if i >= len(data) {
			return 0, d.errAt(i, "unexpected end of input")
		}
		if data[i] < '0' || data[i] > '9' {
			d.pos = i
			return 0, d.invalid("after decimal point in numeric literal")
		}
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		simple = false
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i >= len(data) {
			return 0, d.errAt(i, "unexpected end of input")
		}
		if data[i] < '0' || data[i] > '9' {
			d.pos = i
			return 0, d.invalid("in exponent of numeric literal")
		}
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
	}
	d.pos = i
	// Up to 15 digits fit exactly in a float64's 53-bit mantissa.
	if simple && i-digits <= 15 {
		f := float64(n)
		if neg {
			f = -f
		}
		return f, nil
	}
	f, err := strconv.ParseFloat(d.str[start:i], 64)
	if err != nil {
		return 0, d.errAt(start, "number out of range")
	}
	return f, nil
}
