package gitshape

import (
	"strings"
)

// Var is one variable of a git configuration file: its section and key
// lower-cased (git compares them without case), its subsection as written
// (git compares it with case; HasSubsection tells "[s]" from "[s \"\"]"),
// and its value after git's unquoting (each blank outside quotes between
// other characters a space). A key with no "=" has the value "" and Bool
// set.
type Var struct {
	Section, Subsection, Key, Value string
	HasSubsection, Bool             bool
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
	s                   string
	i                   int
	eof                 bool
	section, subsection string
	hasSub              bool
	vars                []Var
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

// header reads the rest of "[section]", "[section "subsection"]" or
// "[section.sub]" (git's get_base_var and get_extended_base_var).
func (p *configParser) header() bool {
	var name strings.Builder
	sub, hasSub := "", false
	for {
		c := p.next()
		if p.eof {
			return false
		}
		if c == ']' {
			break
		}
		if isSpace(c) {
			for {
				if c == '\n' {
					return false
				}
				if c = p.next(); !isSpace(c) {
					break
				}
			}
			if c != '"' {
				return false
			}
			var b strings.Builder
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
				b.WriteByte(c)
			}
			if p.next() != ']' {
				return false
			}
			sub, hasSub = b.String(), true
			break
		}
		if !isKeyChar(c) && c != '.' {
			return false
		}
		name.WriteByte(lower(c))
	}
	section := name.String()
	// A dot in the name (the old form, or before a quoted subsection)
	// starts the subsection: "a.b" and "a.b "c"" name a.b.c.
	if dot := strings.IndexByte(section, '.'); dot >= 0 {
		if hasSub {
			sub = section[dot+1:] + "." + sub
		} else {
			sub = section[dot+1:]
		}
		section, hasSub = section[:dot], true
	}
	if section == "" && !hasSub {
		return false
	}
	// Git holds names as C strings: one ends at a NUL byte.
	sub, _, _ = strings.Cut(sub, "\x00")
	p.section, p.subsection, p.hasSub = section, sub, hasSub
	return true
}

// variable reads the rest of "key" or "key = value" (git's get_value),
// first being the key's first letter.
func (p *configParser) variable(first byte) bool {
	key := []byte{lower(first)}
	c := p.next()
	for !p.eof && isKeyChar(c) {
		key = append(key, lower(c))
		c = p.next()
	}
	for c == ' ' || c == '\t' {
		c = p.next()
	}
	v := Var{Section: p.section, Subsection: p.subsection, HasSubsection: p.hasSub, Key: string(key)}
	if c == '\n' {
		v.Bool = true
		p.vars = append(p.vars, v)
		if p.eof {
			p.i = len(p.s) // parse sees the end again
			p.eof = false
		}
		return true
	}
	if c != '=' {
		return false
	}
	value, ok := p.value()
	if !ok {
		return false
	}
	v.Value, _, _ = strings.Cut(value, "\x00")
	p.vars = append(p.vars, v)
	return true
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
			if p.eof {
				p.i, p.eof = len(p.s), false
			}
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
		for ; space > 0; space-- {
			b.WriteByte(' ')
		}
		switch c {
		case '\\':
			switch e := p.next(); e {
			case '\n': // also the end of the data, as in git
			case 't':
				b.WriteByte('\t')
			case 'b':
				b.WriteByte('\b')
			case 'n':
				b.WriteByte('\n')
			case '\\', '"':
				b.WriteByte(e)
			default:
				return "", false
			}
		case '"':
			quoted = !quoted
		default:
			b.WriteByte(c)
		}
	}
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isAlnum(c byte) bool { return isAlpha(c) || c >= '0' && c <= '9' }
