package gitshape

import (
	"strings"
)

// Var is one variable of a git configuration file: its name as git
// builds it (and git config --list prints it), the section and key
// lower-cased, a subsection as written, "section.subsection.key" or
// "section.key" (the key alone before any section), and its value after
// git's unquoting (each blank outside quotes between other characters a
// space). A key with no "=" has the value "" and Bool set.
type Var struct {
	Name, Value string
	Bool        bool
}

// ParseConfig reads the variables of a git configuration file the way
// git's own parser does (config.c: sections "[s]", "[s "sub"]" and the
// old "[s.sub]", "key = value" with quotes, escapes, comments and
// continued lines, a variable on the line of its section, a byte-order
// mark), without includes. It never fails: where git would stop with
// "bad config line", the variables before it are returned (git refuses
// the whole file then, so this errs on reading more).
func ParseConfig(data []byte) []Var {
	p := configParser{s: string(data)}
	if strings.HasPrefix(p.s, "\xef\xbb\xbf") {
		p.i = 3
	}
	p.parse()
	return p.vars
}

type configParser struct {
	s    string
	i    int
	eof  bool
	stem string // the section header's name and a dot, "" before any
	vars []Var
}

// next is git's get_next_char: "\r\n" reads as "\n", and the end of the
// data as "\n" with eof set.
func (p *configParser) next() byte {
	if p.i >= len(p.s) {
		p.eof = true
		return '\n'
	}
	c := p.s[p.i]
	p.i++
	if c == '\r' && p.i < len(p.s) && p.s[p.i] == '\n' {
		p.i++
		return '\n'
	}
	return c
}

// isSpace is git's isspace: tab, newline, carriage return and space.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isKeyChar(c byte) bool { return isAlnum(c) || c == '-' }

func (p *configParser) parse() {
	comment := false
	for {
		c := p.next()
		switch {
		case c == '\n':
			if p.eof {
				return
			}
			comment = false
		case comment, isSpace(c):
		case c == '#', c == ';':
			comment = true
		case c == '[':
			if !p.header() {
				return
			}
		case isAlpha(c):
			if !p.variable(c) {
				return
			}
		default:
			return
		}
	}
}

// header reads the rest of "[section]", "[section.sub]" or
// "[section "subsection"]" (git's get_base_var and
// get_extended_base_var): the name lower-cased, then a dot and the
// quoted subsection as written.
func (p *configParser) header() bool {
	var name strings.Builder
	for {
		c := p.next()
		if p.eof {
			return false
		}
		if c == ']' {
			break
		}
		if isSpace(c) {
			for ; isSpace(c); c = p.next() {
				if c == '\n' {
					return false
				}
			}
			if c != '"' {
				return false
			}
			name.WriteByte('.')
			for {
				c := p.next()
				if c == '\n' {
					return false
				}
				if c == '"' {
					break
				}
				if c == '\\' {
					if c = p.next(); c == '\n' {
						return false
					}
				}
				name.WriteByte(c)
			}
			if p.next() != ']' {
				return false
			}
			break
		}
		if !isKeyChar(c) && c != '.' {
			return false
		}
		name.WriteByte(lower(c))
	}
	if name.Len() == 0 {
		return false
	}
	p.stem = name.String() + "."
	return true
}

// variable reads the rest of "key" or "key = value" (git's get_value),
// first being the key's first letter.
func (p *configParser) variable(first byte) bool {
	name := []byte(p.stem + string(lower(first)))
	c := p.next()
	for !p.eof && isKeyChar(c) {
		name = append(name, lower(c))
		c = p.next()
	}
	for c == ' ' || c == '\t' {
		c = p.next()
	}
	// Git holds names and values as C strings: one ends at a NUL byte.
	v := Var{Name: cutNUL(string(name))}
	if c == '\n' {
		v.Bool = true
		p.vars = append(p.vars, v)
		return true
	}
	if c != '=' {
		return false
	}
	value, ok := p.value()
	if !ok {
		return false
	}
	v.Value = cutNUL(value)
	p.vars = append(p.vars, v)
	return true
}

func cutNUL(s string) string {
	s, _, _ = strings.Cut(s, "\x00")
	return s
}

// value reads a value after "=" to the end of its line (git's
// parse_value): blanks outside quotes before the first character and at
// the end dropped, each one between characters a space; quotes toggled;
// \n \t \b \\ \" escaped and a backslash before the newline continuing
// the line; # and ; outside quotes starting a comment.
func (p *configParser) value() (string, bool) {
	var b strings.Builder
	quoted, comment, space := false, false, 0
	for {
		c := p.next()
		if c == '\n' {
			return b.String(), !quoted
		}
		switch {
		case comment:
			continue
		case isSpace(c) && !quoted:
			if b.Len() > 0 {
				space++
			}
			continue
		case !quoted && (c == ';' || c == '#'):
			comment = true
			continue
		}
		b.WriteString(strings.Repeat(" ", space))
		space = 0
		switch c {
		case '\\':
			// A backslash before the newline (or the end of the data, as
			// in git) continues the line.
			if e := p.next(); e != '\n' {
				r, ok := escapes[e]
				if !ok {
					return "", false
				}
				b.WriteByte(r)
			}
		case '"':
			quoted = !quoted
		default:
			b.WriteByte(c)
		}
	}
}

// escapes are the characters git unescapes in a value.
var escapes = map[byte]byte{'t': '\t', 'b': '\b', 'n': '\n', '\\': '\\', '"': '"'}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isAlnum(c byte) bool { return isAlpha(c) || c >= '0' && c <= '9' }
