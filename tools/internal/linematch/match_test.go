package linematch

import (
	"bytes"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// oracle is the plain definition of a search: the lines (1-based) that the
// expression matches, each line on its own.
func oracle(expr string, data []byte) []int {
	re := regexp.MustCompile(expr)
	var out []int
	ls := bytes.Split(data, []byte{'\n'})
	if len(data) > 0 && data[len(data)-1] == '\n' {
		ls = ls[:len(ls)-1]
	}
	if len(data) == 0 {
		ls = nil
	}
	for i, l := range ls {
		if re.Match(l) {
			out = append(out, i+1)
		}
	}
	return out
}

func matchLines(t testing.TB, pattern string, isRegex, fold bool, data []byte) []int {
	t.Helper()
	m, err := Compile(pattern, isRegex, fold)
	if err != nil {
		t.Fatalf("compile %q: %v", pattern, err)
	}
	var out []int
	m.Match(&State{}, data, 1<<30, func(lm Line) { out = append(out, lm.N) })
	return out
}

func expression(pattern string, isRegex, fold bool) string {
	if !isRegex {
		pattern = regexp.QuoteMeta(pattern)
	}
	if fold {
		pattern = "(?i)" + pattern
	}
	return pattern
}

const corpus = `package main

import "fmt"

func main() {
	fmt.Println("Hello, World")
	err := run()
	if err != nil {
		return
	}
}
func run() error { return nil } // TODO: fix
	FIXME later
Kelvin: 273.15K and ſtrange long s
ERROR: NotFoundError happened
date: 2024-01-31, not 1-2 nor -3
files: main.go, Kelvin.GO
a
b
last line without newline`

// The prefilters and the whole-buffer scan never change what matches: each
// pattern finds exactly the lines a per-line regexp.Match finds.
func TestMatcherAgreesWithRegexp(t *testing.T) {
	tests := []struct {
		pattern string
		regex   bool
		fold    bool
	}{
		{"err", false, false},
		{"fmt.Println(", false, false},
		{"return", false, true},
		{"KELVIN", false, true},
		{"kelvin", false, true}, // matches the Kelvin sign under Unicode folding
		{"STRANGE", false, true},
		{"func \\w+\\(", true, false},
		{"^func", true, false},
		{"\\)$", true, false},
		{"\\A\\s*}", true, false},
		{"}\\z", true, false},
		{"todo|fixme", true, true},
		{"[A-Z]\\w+Error\\b", true, false},
		{"(?i)error", true, false},
		{"(?s)a.b", true, false},
		{"a\\sb", true, false},
		{"a\\nb", true, false},
		{"[^x]*", true, false},
		{"^$", true, false},
		{"\\d+\\.\\d+", true, false},
		{"(Hello|Bye), (World|You)", true, false},
		{"x{0}", true, false},
		{"(?m)^\\s+return", true, false},
		{"without newline$", true, false},
		{"\\d{4}-\\d{2}-\\d{2}", true, false},
		{"\\d*-\\d", true, false},
		{"[a-z]+\\.go\\b", true, false},
		{"(?i)\\w+\\.GO", true, false},
		{"(?i)[a-z]elvin", true, false},
		{"n(?i:ot) 1-", true, false},
		{"^-3|nor -", true, false},
		{"\\b[A-Z]{4,}\\b", true, false},
		{"[A-Z][a-z]+", true, false},
		{"\\d\\d", true, false},
		{"\\d\\d\\.\\d", true, false},
		{"(?i:a)[a-z]", true, false},
		{"[\\n ]F", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			want := oracle(expression(tt.pattern, tt.regex, tt.fold), []byte(corpus))
			got := matchLines(t, tt.pattern, tt.regex, tt.fold, []byte(corpus))
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("lines (-regexp +search):\n%s", diff)
			}
		})
	}
}

func TestRequiredLiterals(t *testing.T) {
	tests := []struct {
		expr string
		want []string // "" marks a case-folded literal with a "~" prefix
	}{
		{"func \\w+\\(", []string{"func "}},
		{"[A-Z]\\w+Error\\b", []string{"Error"}},
		{"foo|bar", []string{"foo", "bar"}},
		{"(?i)todo|fixme", []string{"~todo", "~fixme"}},
		{"(?i)kelvin", []string{"~elvin"}},
		{"(?i)ask", []string{"~a"}},
		{"x*", nil},
		{"(ab)+c?", []string{"ab"}},
		{"\\d+", nil},
	}
	for _, tt := range tests {
		m, err := Compile(tt.expr, true, false)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, l := range m.lits {
			if l.run != nil {
				continue // not a literal (TestRuns)
			}
			s := string(l.s)
			if l.fold {
				s = "~" + s
			}
			if len(got) == 0 || got[len(got)-1] != s { // not the other case of its byte
				got = append(got, s)
			}
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: literals %q, want %q", tt.expr, got, tt.want)
		}
	}
}

// TestRuns: an expression with no literal to look for but a run of bytes
// each matched on its own looks for the longest such run.
func TestRuns(t *testing.T) {
	tests := []struct {
		expr string
		want int // the run's length; 0: none
	}{
		{`\b[A-Z]{6,}\b`, 6},
		{`[0-9a-f]{40}`, 40},
		{`x?[0-9a-f]{100}`, maxRun},
		{`[a-c]+\d\d\s*`, 2},
		{`(\d\d):\d\d`, 0}, // the literal ":"
		{`é?\d\d`, 2},
		{`\d+`, 1},
		{`[A-Zé]{9}`, 0},
		{`(?i)[a-z]{3}`, 0},    // the Kelvin sign
		{`(?i)\d(?:a|b)\d`, 3}, // a|b is the class [ABab]
		{`\d(?:ab|c)\d`, 0},    // the literals ab and c
		{`.(?:ab|c)`, 0},
	}
	for _, tt := range tests {
		m, err := Compile(tt.expr, true, false)
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		if len(m.lits) == 1 && m.lits[0].run != nil {
			got = m.lits[0].run.n
		}
		if got != tt.want {
			t.Errorf("%s: run of %d, want %d", tt.expr, got, tt.want)
		}
	}
}

// FuzzRuns: expressions made of ASCII classes, the kind looked for by a
// run, find exactly the lines regexp finds.
func FuzzRuns(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 9}, "ERROR: NOTFOUND, ok\nNOT\n")
	f.Add([]byte{1, 1, 3, 2}, "2024-01-31 12x4\n 1a2 \n")
	f.Add([]byte{5, 6, 4, 7, 8}, "kelvin Y b\tY\nK Y\n")
	pieces := []string{`[A-Z]`, `\d`, `[a-c]`, `x`, `(?i:y)`, `\s`, `\w`, `[^a-z]`, `+`, `\b`, `.`, `é`, `(?i)k`}
	f.Fuzz(func(t *testing.T, shape []byte, text string) {
		var expr strings.Builder
		for _, p := range shape[:min(len(shape), 12)] {
			expr.WriteString(pieces[int(p)%len(pieces)])
		}
		if _, err := regexp.Compile(expr.String()); err != nil {
			return // a + with nothing before it
		}
		want := oracle(expr.String(), []byte(text))
		if got := matchLines(t, expr.String(), true, false, []byte(text)); !slices.Equal(want, got) {
			t.Fatalf("%q on %q: search %v, regexp %v", expr.String(), text, got, want)
		}
	})
}

// FuzzMatcher: for any pattern and text the search finds exactly the lines
// regexp finds.
func FuzzMatcher(f *testing.F) {
	f.Add("func \\w+\\(", corpus, true, false)
	f.Add("todo|fixme", corpus, true, true)
	f.Add("kelvin", corpus, false, true)
	f.Add("^$", "\n\na\n", true, false)
	f.Add("a\\sb", "a\nb\na b", true, false)
	f.Add("\\b[A-Z]{4,}\\b", corpus, true, false)
	f.Fuzz(func(t *testing.T, pattern, text string, isRegex, fold bool) {
		if pattern == "" || len(pattern) > 64 || strings.Contains(pattern, "{1000") || !utf8.ValidString(pattern) {
			return // patterns arrive as JSON strings: valid UTF-8
		}
		expr := expression(pattern, isRegex, fold)
		if _, err := regexp.Compile(expr); err != nil {
			if _, err := Compile(pattern, isRegex, fold); err == nil {
				t.Fatalf("%q: regexp refuses it, the Matcher accepts it", expr)
			}
			return
		}
		m, err := Compile(pattern, isRegex, fold)
		if err != nil {
			if !strings.Contains(err.Error(), "instructions") {
				t.Fatalf("%q: regexp accepts it, the Matcher refuses it: %v", expr, err)
			}
			return // over maxRegexInsts
		}
		for l := range strings.SplitSeq(text, "\n") {
			if len(l) > m.lineCap {
				return // matched on its first lineCap bytes only
			}
		}
		want := oracle(expr, []byte(text))
		got := matchLines(t, pattern, isRegex, fold, []byte(text))
		if !slices.Equal(want, got) {
			t.Fatalf("%q on %q: search %v, regexp %v", expr, text, got, want)
		}
	})
}

func FuzzLiteralIndex(f *testing.F) {
	f.Add("todo", "a todo and TODO")
	f.Add("xx", "x")
	f.Add("ab", "aab")
	f.Fuzz(func(t *testing.T, needle, hay string) {
		if needle == "" {
			return
		}
		l := newLiteral([]byte(needle), false)
		if got, want := l.index([]byte(hay)), strings.Index(hay, needle); got != want {
			t.Fatalf("index(%q, %q) = %d, want %d", hay, needle, got, want)
		}
		// Case-folded, the needle is looked for by both cases of its byte:
		// the first of them is its first occurrence in the lower-cased text.
		m, err := Compile(needle, false, true)
		if err != nil || len(m.lits) == 0 || len(m.lits[0].s) != len(needle) {
			return // not a whole literal under ASCII folding
		}
		got := -1
		for _, l := range m.lits {
			if i := l.index([]byte(hay)); i >= 0 && (got < 0 || i < got) {
				got = i
			}
		}
		lower := func(s string) string {
			b := []byte(s)
			for i, c := range b {
				b[i] = lowerASCII[c]
			}
			return string(b)
		}
		if want := strings.Index(lower(hay), lower(needle)); got != want {
			t.Fatalf("folded index(%q, %q) = %d, want %d", hay, needle, got, want)
		}
	})
}
