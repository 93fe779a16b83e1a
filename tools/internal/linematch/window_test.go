package linematch

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestMatchWindows: a regular expression without a literal to look for runs
// over windows of whole lines of at most lineCap bytes; over a text of many
// windows it finds exactly the lines regexp finds line by line.
func TestMatchWindows(t *testing.T) {
	if testing.Short() {
		t.Skip("runs costly expressions over 700 KB (slow under -race)")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"", "a", "Hello", "ABCDEFG", "2024-01-02", "x_y", "QWERTYUIOP", " ", "\t", "é", "ends"}
	var b strings.Builder
	for range 6000 {
		n := rng.IntN(40)
		if rng.IntN(50) == 0 {
			n = 600 // long lines: windows end inside their runs
		}
		for range n {
			b.WriteString(words[rng.IntN(len(words))])
			b.WriteByte(' ')
		}
		b.WriteByte('\n')
	}
	text := []byte(b.String())
	for _, expr := range []string{`(?:[A-Z]\w*\s+){10}\d`, `\b[A-Zé]{9,}\s+[A-Zé]{9,}\b`, `.{200}\d`, `(?:\w+\s+){30}`, `^(?:\S+\s+){12}$`} {
		m, err := Compile(expr, true, false)
		if err != nil {
			t.Fatal(err)
		}
		if m.scan == nil || len(m.lits) > 0 {
			t.Fatalf("%s: not a scan without a prefilter", expr)
		}
		if m.lineCap >= len(text)/2 {
			t.Fatalf("%s: line cap %d: the text is not several windows", expr, m.lineCap)
		}
		want := oracle(expr, text)
		if len(want) == 0 {
			t.Fatalf("%s matches nothing: the test proves nothing", expr)
		}
		got := matchLines(t, expr, true, false, text)
		if !slices.Equal(got, want) {
			t.Errorf("%s: %d lines, regexp finds %d (first difference near %v)", expr, len(got), len(want), firstDiff(got, want))
		}
	}
}

func firstDiff(a, b []int) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return min(a[i], b[i])
		}
	}
	return -1
}

// TestScanStops: a scan stops at its next window once stop says so.
func TestScanStops(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a costly expression (slow under -race)")
	}
	m, err := Compile(`[a-zé]{1000}[0-9]`, true, false) // é: no run of ASCII bytes to look for
	if err != nil {
		t.Fatal(err)
	}
	text := []byte(strings.Repeat(strings.Repeat("abcdefgh", 64)+"\n", 4096))
	calls := 0
	st := &State{Stop: func() bool { calls++; return calls > 3 }}
	found := 0
	m.Match(st, text, 1<<30, func(Line) { found++ })
	if calls != 4 || found != 0 {
		t.Fatalf("stop asked %d times, want 4 (the scan went on after it said stop)", calls)
	}
}
