package termsafe_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/creack/pty"
	"github.com/specloop/specloop/internal/termsafe"
)

func TestText(t *testing.T) {
	for _, tt := range []struct{ in, text, line string }{
		{"plain text", "plain text", "plain text"},
		{"é 漢字 👩‍👩‍👧 ¿?", "é 漢字 👩‍👩‍👧 ¿?", "é 漢字 👩‍👩‍👧 ¿?"}, // ZWJ is no control
		{"a\tb\nc\n", "a\tb\nc\n", `a\tb\nc\n`},
		{"crlf\r\nline\r\n", "crlf\r\nline\r\n", `crlf\r\nline\r\n`},
		{"\x1b]52;c;Y3VybA==\x07", `\x1b]52;c;Y3VybA==\x07`, `\x1b]52;c;Y3VybA==\x07`},
		{"curl x | sh\r\x1b[2Kecho fine\n", `curl x | sh\r\x1b[2Kecho fine` + "\n", `curl x | sh\r\x1b[2Kecho fine\n`},
		{"\r\r\n", `\r` + "\r\n", `\r\r\n`},
		{"end\r", `end\r`, `end\r`},
		{"\x1bP+q\x1b\\", `\x1bP+q\x1b\`, `\x1bP+q\x1b\`}, // DCS
		{"\u009b2J \u0085 \u009d0;x\u009c", `\u009b2J \u0085 \u009d0;x\u009c`, `\u009b2J \u0085 \u009d0;x\u009c`},
		{"\x9b2J \xff\xfe \xe6\xbc", `\x9b2J \xff\xfe \xe6\xbc`, `\x9b2J \xff\xfe \xe6\xbc`}, // not UTF-8
		{"notes\u202etxt.exe \u2066\u2069 \u200f\u061c", `notes\u202etxt.exe \u2066\u2069 \u200f\u061c`, `notes\u202etxt.exe \u2066\u2069 \u200f\u061c`},
		{"\x00\x08\x0b\x0c\x7f", `\x00\x08\x0b\x0c\x7f`, `\x00\x08\x0b\x0c\x7f`},
		{"\uFFFD is a character", "\uFFFD is a character", "\uFFFD is a character"},
	} {
		if got := termsafe.Text(tt.in); got != tt.text {
			t.Errorf("Text(%q) = %q, want %q", tt.in, got, tt.text)
		}
		if got := termsafe.Line(tt.in); got != tt.line {
			t.Errorf("Line(%q) = %q, want %q", tt.in, got, tt.line)
		}
	}
}

// check fails when out could drive a terminal or is not what Text (or
// Line) promises of in.
func check(t *testing.T, in, out string, oneLine bool) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("%q: not UTF-8: %q", in, out)
	}
	for i, r := range out {
		switch {
		case (r == '\n' || r == '\t') && !oneLine:
		case r == '\r' && !oneLine && i+1 < len(out) && out[i+1] == '\n':
		case unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r):
			t.Fatalf("%q: %U at %d of %q", in, r, i, out)
		}
	}
	again := termsafe.Text(out)
	if oneLine {
		again = termsafe.Line(out)
	}
	if again != out {
		t.Fatalf("%q: not idempotent: %q, then %q", in, out, again)
	}
	if clean(in, oneLine) && out != in {
		t.Fatalf("%q, which needs no escape, changed to %q", in, out)
	}
}

// clean reports whether in is UTF-8 and holds nothing Text (or Line)
// escapes.
func clean(in string, oneLine bool) bool {
	if !utf8.ValidString(in) {
		return false
	}
	for i, r := range in {
		switch {
		case (r == '\n' || r == '\t') && !oneLine:
		case r == '\r' && !oneLine && i+1 < len(in) && in[i+1] == '\n':
		case unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r):
			return false
		}
	}
	return true
}

func FuzzText(f *testing.F) {
	for _, s := range []string{"", "plain", "é 漢字\n\tx", "\x1b]52;c;Y3VybA==\x07", "sh\r\x1b[2Kok\r\n", "\u009b2J\x9b\xff", "a\u202eb\u2066", "\r\r\n\r"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		check(t, in, termsafe.Text(in), false)
		check(t, in, termsafe.Line(in), true)
	})
}

// A Writer sanitises each write and reports the whole write written.
func TestWriter(t *testing.T) {
	var b bytes.Buffer
	w := termsafe.NewWriter(&b)
	in := "answer: done\x1b]52;c;QUJD\x07\n"
	if n, err := w.Write([]byte(in)); n != len(in) || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if got := b.String(); got != `answer: done\x1b]52;c;QUJD\x07`+"\n" {
		t.Fatalf("wrote %q", got)
	}
	if termsafe.Exact(w) != &b || termsafe.Exact(&b) != &b {
		t.Fatal("Exact does not return the writer under")
	}
}

// Terminals and pipes get the sanitiser; regular files, /dev/null and
// writers that are no file get text as it is.
func TestGuard(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	defer tty.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	file, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	var buf bytes.Buffer
	for _, tt := range []struct {
		name string
		f    interface{ Write([]byte) (int, error) }
		want bool
	}{{"terminal", tty, true}, {"pipe", pw, true}, {"file", file, false}, {"/dev/null", devNull, false}, {"buffer", &buf, false}} {
		if got := termsafe.Needed(tt.f); got != tt.want {
			t.Errorf("%s: Needed = %v, want %v", tt.name, got, tt.want)
		}
		g := termsafe.Guard(tt.f)
		if _, wrapped := g.(*termsafe.Writer); wrapped != tt.want {
			t.Errorf("%s: Guard wrapped = %v, want %v", tt.name, wrapped, tt.want)
		}
		if termsafe.Guard(g) != g || termsafe.Exact(g) != tt.f {
			t.Errorf("%s: Guard twice or Exact is not the writer", tt.name)
		}
	}
}
