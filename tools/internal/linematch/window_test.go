package linematch

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestMatchLongText: over a long text of short and long lines, a regular
// expression finds exactly the lines regexp finds, whether a run of bytes is
// looked for first or, with nothing to look for, every line is checked.
func TestMatchLongText(t *testing.T) {
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
	for _, tt := range []struct {
		expr string
		run  bool
	}{
		{`(?:[A-Z]\w*\s+){10}\d`, true},
		{`\b[A-Z]{9,}\s+[A-Z]{9,}\b`, true},
		{`.{200}\d`, true},
		{`(?:\w+\s+){30}`, true},
		{`^(?:\S+\s+){12}$`, true},
		{`.{200}`, false},
		{`^(?:\S+\s*){12}$`, false},
		{`[^a-z ]{9,}`, false},
	} {
		expr := tt.expr
		m, err := Compile(expr, true, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(m.lits) > 0 != tt.run {
			t.Fatalf("%s: prefilter %v, want %v", expr, len(m.lits) > 0, tt.run)
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

// TestMatchStops: a search without a prefilter stops before its next line
// once stop says so.
func TestMatchStops(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a costly expression (slow under -race)")
	}
	m, err := Compile(`[a-zé]{1000}.`, true, false) // é: no run of ASCII bytes to look for
	if err != nil {
		t.Fatal(err)
	}
	text := []byte(strings.Repeat(strings.Repeat("abcdefgh", 64)+"\n", 4096))
	calls := 0
	st := &State{Stop: func() bool { calls++; return calls > 3 }}
	found := 0
	m.Match(st, text, 1<<30, func(Line) { found++ })
	if calls != 4 || found != 0 {
		t.Fatalf("stop asked %d times, want 4 (the search went on after it said stop)", calls)
	}
}
