// Package termsafe makes text a run produced (a model's answer, a patch, a
// command's output, names from a trace) safe to print on a terminal: one
// sanitiser for every view of the command line.
//
// A terminal acts on control characters in what it prints: OSC 52
// (`ESC ] 52 ; c ; BASE64 BEL`) sets the person's clipboard, `CR ESC [ 2K`
// erases the line it is on, other CSI, OSC and DCS sequences move the
// cursor, retitle the window or recolour text, the C1 controls
// (U+0080–U+009F, and the raw byte 0x9B, which 8-bit terminals read as
// CSI) start the same sequences without an ESC, and bidi controls (U+202E
// …) reorder what is shown. The sanitiser shows each of them as a visible
// escape in Go's syntax instead: ESC as `\x1b`, a lone carriage return as
// `\r`, U+009B as `\u009b`, U+202E as `\u202e`, a byte that is not UTF-8
// as `\xHH`. Without ESC, C1 and the 0x9B byte no sequence can start, so
// what followed them prints as the text it is. Every other character
// (letters of any script, emoji, …) is left as it is; so is a backslash, so
// `\x1b` in the output is either an escape or those four characters.
package termsafe

import (
	"fmt"
	"io"
	"os"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/term"
)

// Text returns s safe to print on a terminal as lines of text: newline,
// tab and a carriage return right before a newline (a CRLF line end, which
// hides nothing) stay; every other character that could drive the terminal
// or disguise text is shown as a visible escape (see the package comment).
// The result is valid UTF-8, and Text of it is itself.
func Text(s string) string { return escape(s, false) }

// Line is Text for a text shown on one line: newline, tab and every
// carriage return are escaped too (`\n`, `\t`, `\r`).
func Line(s string) string { return escape(s, true) }

func escape(s string, oneLine bool) string {
	var b strings.Builder
	done := 0 // s[:done] is in b, escaped
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		var esc string
		size := 1
		switch {
		case c == '\n' && oneLine:
			esc = `\n`
		case c == '\t' && oneLine:
			esc = `\t`
		case c == '\n' || c == '\t':
			i++
			continue
		case c == '\r':
			if !oneLine && i+1 < len(s) && s[i+1] == '\n' {
				i++
				continue
			}
			esc = `\r`
		case c < utf8.RuneSelf: // the other C0 controls and DEL
			esc = fmt.Sprintf(`\x%02x`, c)
		default:
			var r rune
			r, size = utf8.DecodeRuneInString(s[i:])
			switch {
			case r == utf8.RuneError && size == 1: // not UTF-8, like a raw 0x9B
				esc = fmt.Sprintf(`\x%02x`, c)
			case unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r): // C1, bidi
				esc = fmt.Sprintf(`\u%04x`, r)
			default:
				i += size
				continue
			}
		}
		if b.Len() == 0 {
			b.Grow(len(s) + 16)
		}
		b.WriteString(s[done:i])
		b.WriteString(esc)
		i += size
		done = i
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

// Writer writes what it is given through Text. Each Write is sanitised on
// its own: a character or a CRLF split across two writes is shown as
// escapes (still safe, only less readable), so a write should hold whole
// lines, as those of fmt.Fprintf do.
type Writer struct {
	w io.Writer
}

// NewWriter returns a Writer writing to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write writes Text(p) to the underlying writer and reports p written.
func (w *Writer) Write(p []byte) (int, error) {
	if _, err := io.WriteString(w.w, Text(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Needed reports whether text written to w may reach a terminal and so
// should pass the sanitiser: w is a terminal, or a pipe or socket (which
// usually end in one: `| tee log`, `| less -R`, which passes colour
// sequences on). A regular file, /dev/null and writers that are not files
// (buffers) get text exactly as it is, so that a patch written to a file
// applies.
func Needed(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	if term.IsTerminal(int(f.Fd())) {
		return true
	}
	st, err := f.Stat()
	if err != nil {
		return true
	}
	m := st.Mode()
	return !m.IsRegular() && m&os.ModeDevice == 0
}

// Guard returns w wrapped in a Writer when Needed(w), else w itself.
func Guard(w io.Writer) io.Writer {
	if _, ok := w.(*Writer); ok || !Needed(w) {
		return w
	}
	return NewWriter(w)
}

// Exact returns the writer under a Writer, and any other w itself: for
// output that must stay byte for byte what was written (JSON for machines).
func Exact(w io.Writer) io.Writer {
	if s, ok := w.(*Writer); ok {
		return s.w
	}
	return w
}
