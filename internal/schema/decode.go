package schema

import (
	"math"
	"strconv"
	"strings"
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
// of a single copy of data, which stays alive while any of them does; short
// string values and small integers may instead share memory with other
// results (they are immutable, so this is never visible).
func Decode(data []byte) (any, error) {
	_, v, err := decode(string(data), false, nil)
	return v, err
}

// decode parses s; with members set, a top-level object is returned as
// Members appended to buf instead of as a map.
func decode(s string, members bool, buf Members) (Members, any, error) {
	d := decoders.Get().(*decoder)
	d.str, d.pos, d.depth = s, 0, 0
	d.wantMembers, d.members = members, buf
	v, err := d.value()
	if err == nil {
		d.skipSpace()
		if d.pos < len(d.str) {
			err = d.invalid("after top-level value")
		}
	}
	if err != nil {
		// Members of the containers that were being parsed stay on the
		// stack after an error.
		clear(d.kvs)
		d.kvs = d.kvs[:0]
	}
	ms := d.members
	if !d.gotMembers {
		ms = nil
	}
	d.str, d.members, d.gotMembers = "", nil, false
	if cap(d.kvs) <= 1024 && cap(d.buf) <= 64<<10 {
		decoders.Put(d)
	}
	if err != nil {
		return nil, nil, err
	}
	return ms, v, nil
}

// decoders recycles the decoders' scratch memory and their boxes.
var decoders = sync.Pool{New: func() any { return &decoder{kvs: make([]kv, 0, 32)} }}

// kv is one parsed object member (or, with an empty key, one array element)
// waiting on the decoder's stack until its container is complete.
type kv struct {
	key string
	val any
	off int
}

type decoder struct {
	str   string // the input; unescaped strings are slices of it
	pos   int
	depth int
	kvs   []kv   // members and elements of the containers being parsed
	buf   []byte // scratch for strings with escapes
	boxes stringBoxes
	// A top-level object becomes members (see DecodeMembers) when
	// wantMembers is set; gotMembers says it did.
	wantMembers, gotMembers bool
	members                 Members
}

// Boxing a string or a float64 into an any allocates. Decoded values
// repeat a lot (enum values, tool and field names, small counts), so the
// decoder keeps the boxes of short strings it decoded recently and every
// small integer is boxed once for the whole process.

// maxBoxedLen is the longest string value whose box the decoder keeps.
const maxBoxedLen = 24

// stringBoxes is a small cache of boxed strings, indexed by a hash of the
// string. Each decoder has its own (decoders are not shared), so it needs
// no locking; its memory is bounded by its size times maxBoxedLen.
type stringBoxes [256]struct {
	s string
	v any
}

// box returns s as an any, from the cache when it holds s. A string that
// enters the cache is copied first: the cache outlives the input.
func (c *stringBoxes) box(s string) any {
	if len(s) > maxBoxedLen || len(s) == 0 {
		return s
	}
	// FNV-1a: the strings are short, and a poor spread only costs a box.
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * 16777619
	}
	e := &c[h%uint32(len(c))]
	if e.v != nil && e.s == s {
		return e.v
	}
	e.s = strings.Clone(s)
	e.v = e.s
	return e.v
}

// smallInts holds the boxes of the integers 0 to 1023.
var smallInts = func() (t [1024]any) {
	for i := range t {
		t[i] = float64(i)
	}
	return t
}()

// boxNumber returns f as an any, without allocating for small integers.
func boxNumber(f float64) any {
	if i := int(f); i >= 0 && i < len(smallInts) && float64(i) == f && !math.Signbit(f) {
		return smallInts[i]
	}
	return f
}

// PlainPrefix returns the length of the longest prefix of s made of whole
// 8-byte words of bytes that a JSON string holds unescaped, when decoding
// and when encoding alike: printable ASCII other than '"' and '\\'. It
// tests a word at a time, so that scanning the plain runs of strings is
// cheap; the caller handles the bytes after the prefix one by one.
func PlainPrefix(s string) int {
	n := 0
	for len(s)-n >= 8 && plainWord(s[n:n+8]) {
		n += 8
	}
	return n
}

// plainWord reports whether the 8 bytes of b are all plain (see
// PlainPrefix), testing them together as one 64-bit word: adding 0x7f to
// a byte below 0x80 sets its top bit unless the byte is zero, and adding
// 0x60 sets it when the byte is 0x20 or more. A byte of 0x80 or more
// (whose additions may carry into its neighbour) fails on its own top bit.
func plainWord(b string) bool {
	const ones = 0x0101010101010101
	w := uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
	notQuote := w ^ ones*'"' + ones*0x7f
	notBackslash := w ^ ones*'\\' + ones*0x7f
	notControl := w + ones*0x60
	return notQuote&notBackslash&notControl&^w&(ones*0x80) == ones*0x80
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
	if d.pos >= len(d.str) {
		return d.errAt(d.pos, "unexpected end of input")
	}
	switch c := d.str[d.pos]; c {
	case '{', '}', '[', ']', ':', ',', '"':
		return d.errAt(d.pos, "invalid character '"+string(rune(c))+"' "+context)
	}
	return d.errAt(d.pos, "invalid character "+context)
}

func (d *decoder) skipSpace() {
	for d.pos < len(d.str) {
		switch d.str[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

func (d *decoder) value() (any, *SyntaxError) {
	d.skipSpace()
	if d.pos >= len(d.str) {
		return nil, d.errAt(d.pos, "unexpected end of input")
	}
	switch c := d.str[d.pos]; c {
	case '{':
		return d.object()
	case '[':
		return d.array()
	case '"':
		s, err := d.string()
		if err != nil {
			return nil, err
		}
		return d.boxes.box(s), nil
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
			return boxNumber(f), nil
		}
		return nil, d.invalid("looking for beginning of value")
	}
}

func (d *decoder) literal(word string) *SyntaxError {
	for i := 0; i < len(word); i++ {
		if d.pos >= len(d.str) {
			return d.errAt(d.pos, "unexpected end of input")
		}
		if d.str[d.pos] != word[i] {
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
	if d.pos < len(d.str) && d.str[d.pos] == '}' {
		d.pos++
		d.depth--
		if d.depth == 0 && d.wantMembers {
			return d.topMembers(nil)
		}
		return map[string]any{}, nil
	}
	start := len(d.kvs)
	for {
		if d.pos >= len(d.str) || d.str[d.pos] != '"' {
			return nil, d.invalid("looking for beginning of object key string")
		}
		off := d.pos
		key, err := d.string()
		if err != nil {
			return nil, err
		}
		d.skipSpace()
		if d.pos >= len(d.str) || d.str[d.pos] != ':' {
			return nil, d.invalid("after object key")
		}
		d.pos++
		val, err := d.value()
		if err != nil {
			return nil, err
		}
		d.kvs = append(d.kvs, kv{key: key, val: val, off: off})
		d.skipSpace()
		if d.pos >= len(d.str) {
			return nil, d.errAt(d.pos, "unexpected end of input")
		}
		c := d.str[d.pos]
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
	if d.depth == 1 && d.wantMembers {
		d.depth--
		v, err := d.topMembers(members)
		clear(members)
		d.kvs = d.kvs[:start]
		return v, err
	}
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

// topMembers returns the members of the top-level object as Members, in
// d.members, after the same duplicate check as for a map.
func (d *decoder) topMembers(members []kv) (any, *SyntaxError) {
	if i := firstDuplicate(members); i >= 0 {
		return nil, d.errAt(members[i].off, "duplicate object key")
	}
	ms := d.members[:0]
	if ms == nil {
		ms = Members{} // non-nil even when empty
	}
	for i := range members {
		ms = append(ms, Member{Key: members[i].key, Value: members[i].val})
	}
	d.members, d.gotMembers = ms, true
	return nil, nil
}

// firstDuplicate returns the index of the first member whose key an
// earlier member has, or -1.
func firstDuplicate(members []kv) int {
	if len(members) <= 16 {
		for i := 1; i < len(members); i++ {
			for j := range i {
				if members[j].key == members[i].key {
					return i
				}
			}
		}
		return -1
	}
	seen := make(map[string]struct{}, len(members))
	for i := range members {
		if _, dup := seen[members[i].key]; dup {
			return i
		}
		seen[members[i].key] = struct{}{}
	}
	return -1
}

func (d *decoder) array() (any, *SyntaxError) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	d.pos++ // '['
	d.skipSpace()
	if d.pos < len(d.str) && d.str[d.pos] == ']' {
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
		if d.pos >= len(d.str) {
			return nil, d.errAt(d.pos, "unexpected end of input")
		}
		c := d.str[d.pos]
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
	data := d.str
	// Most strings are short keys and values without escapes: scan their
	// first bytes one by one, and the rest of a long string a word at a
	// time.
	head := data[start:min(len(data), start+16)]
	n := 0
	for n < len(head) && !needsCare[head[n]] {
		n++
	}
	i := start + n
	if n == len(head) {
		i += PlainPrefix(data[i:])
	}
	if i < len(data) && data[i] == '"' {
		d.pos = i + 1
		return data[start:i], nil
	}
	for i < len(data) {
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
			r, size := utf8.DecodeRuneInString(data[i:])
			if r == utf8.RuneError && size == 1 {
				return "", d.errAt(i, "invalid UTF-8 in string")
			}
			i += size
			i += PlainPrefix(data[i:])
		}
	}
	return "", d.errAt(len(data), "unexpected end of input")
}

// escapedString finishes a string whose first escape is at i.
func (d *decoder) escapedString(start, i int) (string, *SyntaxError) {
	data := d.str
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
			r, size := utf8.DecodeRuneInString(data[i:])
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
		if j >= len(d.str) {
			return 0, d.errAt(len(d.str), "unexpected end of input")
		}
		c := d.str[j]
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
	data := d.str
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
