package linematch

import (
	"bytes"
	"cmp"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode/utf8"
)

// Matcher finds the lines of a text that match a search. Matching is line
// by line: a match never spans lines, and ^ and $ are the line's ends.
//
// Go's regexp has no DFA and is 10-75x slower than ripgrep's engine on whole
// files, so the engine is only run on lines that can match: a required
// literal (every match contains one of lits) is found with bytes.Index,
// which is SIMD-accelerated, and only the lines holding it are checked.
// Without one, a required run of bytes each matched on its own
// (\b[A-Z]{6,}\b: six of [A-Z]) is found by shift-and, a table look-up a
// byte.
type Matcher struct {
	lits []literal      // every matching line holds one of these; empty: no prefilter
	re   *regexp.Regexp // checks a candidate line; nil when finding a literal is a match
	none bool           // nothing can match (a literal with a newline)
	// lineCap is the most of a line re runs over in one call
	// (regexBudget over the expression's size): longer lines are matched
	// on their first lineCap bytes, so no call runs for long.
	lineCap int
}

// literal is a byte string every match contains; fold ones are lower-case
// ASCII and match the text's bytes lower-cased.
type literal struct {
	s    []byte
	fold bool
	b    byte // the byte looked for first: s[rare], or its upper case
	// before and after, when set, hold the bytes that can come right before
	// and right after the literal in a match (on the same line): occurrences
	// with other neighbors are skipped without running the expression.
	before, after *byteSet
	rare          int // offset of the needle's rarest byte, looked for first
	// run, when set, stands for s: the bytes of every match include a run
	// drawn from its sets one by one, found by shift-and.
	run *byteRun
}

// byteRun is a run of n byte sets: bit i of mask[b] says b is in the i-th.
type byteRun struct {
	mask [256]uint64
	n    int
}

// maxRun bounds a run: bit i of a mask is its i-th set.
const maxRun = 64

// newRun makes a run prefilter of sets (at most maxRun).
func newRun(sets []byteSet) literal {
	r := &byteRun{n: len(sets)}
	for i, set := range sets {
		for b, in := range set {
			if in && b != '\n' {
				r.mask[b] |= 1 << i
			}
		}
	}
	return literal{run: r}
}

// index returns the offset of the first run in hay, or -1: after byte j,
// bit i of d says the i+1 bytes up to j are in the first i+1 sets.
func (r *byteRun) index(hay []byte) int {
	var d uint64
	last := uint64(1) << (r.n - 1)
	for j, b := range hay {
		d = (d<<1 | 1) & r.mask[b]
		if d&last != 0 {
			return j + 1 - r.n
		}
	}
	return -1
}

// newLiteral prepares the needle s.
func newLiteral(s []byte, fold bool) literal {
	l := literal{s: s, fold: fold}
	for i, b := range s {
		if byteRank[b] < byteRank[s[l.rare]] {
			l.rare = i
		}
	}
	l.b = s[l.rare]
	return l
}

// commonBytes lists bytes from the most to the least frequent in source code
// (measured on the Go tree); bytes not listed are rarer still.
const commonBytes = " et\trn\niasoclud,f0p/().Amgh=STx\"_E1by{}IRPC2:OkwvDLMN4F6B3-8*VHG5[]\\U97;+Y!WzX&<'q%$K|Q>j`J#Z^?@~"

// byteRank ranks bytes by frequency: higher is more frequent.
var byteRank = func() (r [256]uint8) {
	for i := range len(commonBytes) {
		r[commonBytes[i]] = uint8(255 - i)
	}
	return r
}()

// index returns the offset of the first occurrence of the needle in hay, or
// -1. It looks for the needle's rarest byte with the SIMD IndexByte and
// compares around each hit, which beats scanning for a frequent first byte.
func (l *literal) index(hay []byte) int {
	if l.run != nil {
		return l.run.index(hay)
	}
	n := len(l.s)
	if n == 1 {
		return bytes.IndexByte(hay, l.b)
	}
	b, r := l.b, l.rare
	for i := 0; i+n <= len(hay); {
		j := bytes.IndexByte(hay[i+r:len(hay)-n+r+1], b)
		if j < 0 {
			return -1
		}
		c := i + j
		if l.at(hay[c : c+n]) {
			return c
		}
		i = c + 1
	}
	return -1
}

// at reports whether w, as long as the needle, is it.
func (l *literal) at(w []byte) bool {
	if !l.fold {
		return w[0] == l.s[0] && bytes.Equal(w, l.s)
	}
	for i, c := range w {
		if lowerASCII[c] != l.s[i] {
			return false
		}
	}
	return true
}

// byteSet is a set of bytes.
type byteSet [256]bool

// maxLiterals bounds a prefilter's alternatives: beyond that, scanning for
// each costs more than it saves.
const maxLiterals = 8

// Compile compiles a search pattern: a literal string, or a Go
// regular expression when isRegex. Its errors say what is wrong with the
// pattern (the search tool reports them as invalid_regex).
func Compile(pattern string, isRegex, ignoreCase bool) (*Matcher, error) {
	if !isRegex && !ignoreCase {
		return &Matcher{lits: []literal{newLiteral([]byte(pattern), false)}, none: strings.Contains(pattern, "\n"), lineCap: MaxLine}, nil
	}
	expr := pattern
	if !isRegex {
		expr = regexp.QuoteMeta(pattern)
	}
	if ignoreCase {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, err
	}
	tree, err := syntax.Parse(expr, syntax.Perl)
	if err != nil { // unreachable: regexp.Compile parsed it
		return nil, err
	}
	tree = tree.Simplify()
	prog, err := syntax.Compile(tree)
	if err != nil { // unreachable: regexp.Compile compiled it
		return nil, err
	}
	if n := len(prog.Inst); n > maxRegexInsts {
		return nil, fmt.Errorf("the expression compiles to %d instructions, over the %d allowed (each costs a step per byte searched); use smaller repetition counts", n, maxRegexInsts)
	}
	m := &Matcher{re: re, lineCap: min(MaxLine, max(minRegexLine, regexBudget/len(prog.Inst)))}
	if lits, ok := required(tree); ok {
		// A case-folded needle is looked for by both cases of its byte:
		// two scans of the text with IndexByte cost less than a lower-cased copy.
		for _, l := range lits {
			m.lits = append(m.lits, l)
			if up := l.b &^ 0x20; l.fold && 'A' <= up && up <= 'Z' {
				l.b = up
				m.lits = append(m.lits, l)
			}
		}
		return m, nil
	}
	if run, _, _ := runs(tree); len(run) > 0 {
		m.lits = []literal{newRun(run[:min(len(run), maxRun)])}
		return m, nil
	}
	// Nothing to look for: every line is checked, which beats running the
	// expression over whole buffers (Go's NFA, not its backtracker, for
	// more than a few KB).
	return m, nil
}

// required returns literals one of which occurs in every match of re. Like
// runs and addEdge, it walks simplified expressions: no counted repetitions.
func required(re *syntax.Regexp) ([]literal, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase == 0 {
			return []literal{newLiteral([]byte(string(re.Rune)), false)}, true
		}
		s := foldablePiece(re.Rune)
		if s == "" {
			return nil, false
		}
		return []literal{newLiteral([]byte(s), true)}, true
	case syntax.OpCapture, syntax.OpPlus:
		return required(re.Sub[0])
	case syntax.OpConcat:
		var best []literal
		at := -1
		for i, sub := range re.Sub {
			if lits, ok := required(sub); ok && better(lits, best) {
				best, at = lits, i
			}
		}
		if best != nil && re.Sub[at].Op == syntax.OpLiteral && len(best[0].s) == len(string(re.Sub[at].Rune)) {
			// A whole literal of the concatenation: its neighbors in the
			// expression say which bytes can surround it.
			l := best[0]
			l.before = edgeBytes(re.Sub[:at], true)
			l.after = edgeBytes(re.Sub[at+1:], false)
			best = []literal{l}
		}
		return best, best != nil
	case syntax.OpAlternate:
		var all []literal
		for _, sub := range re.Sub {
			lits, ok := required(sub)
			if !ok {
				return nil, false
			}
			all = append(all, lits...)
		}
		if len(all) > maxLiterals {
			return nil, false
		}
		return all, true
	}
	return nil, false
}

// runs returns the longest run of byte sets that every match of re holds
// (best), the one every match starts with (prefix), and whether every match
// is exactly prefix (whole). A run is of bytes that are matched one by one:
// ASCII classes and literals, and literals' UTF-8 bytes.
func runs(re *syntax.Regexp) (best, prefix []byteSet, whole bool) {
	switch re.Op {
	case syntax.OpLiteral:
		fold := re.Flags&syntax.FoldCase != 0
		for _, r := range re.Rune {
			if len(prefix) >= maxRun || fold && (r >= utf8.RuneSelf || r|0x20 == 'k' || r|0x20 == 's') {
				return prefix, prefix, false // long enough, or case variants of other lengths
			}
			for _, b := range []byte(string(r)) {
				var set byteSet
				set[b] = true
				if r < utf8.RuneSelf {
					addRune(&set, r, fold)
				}
				prefix = append(prefix, set)
			}
		}
		return prefix, prefix, true
	case syntax.OpCharClass:
		var set byteSet
		if len(re.Rune) > 0 && re.Rune[len(re.Rune)-1] >= utf8.RuneSelf {
			return nil, nil, false // its runes differ in length
		}
		addEdge(&set, re, false)
		return []byteSet{set}, []byteSet{set}, true
	case syntax.OpCapture:
		return runs(re.Sub[0])
	case syntax.OpPlus:
		best, prefix, _ = runs(re.Sub[0])
		return best, prefix, false
	case syntax.OpConcat:
		whole = true
		var cur []byteSet // the run ending with sub
		for _, sub := range re.Sub {
			if len(best) >= maxRun {
				return best, prefix, false
			}
			b, p, w := runs(sub)
			cur = append(cur[:len(cur):len(cur)], p...)
			if len(cur) > len(best) {
				best = cur
			}
			if len(b) > len(best) {
				best = b
			}
			if whole {
				prefix = cur
			}
			whole = whole && w
			if !w {
				cur = nil
			}
		}
		return best, prefix, whole
	case syntax.OpEmptyMatch, syntax.OpWordBoundary, syntax.OpNoWordBoundary,
		syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText:
		return nil, nil, true // zero width
	}
	return nil, nil, false
}

// edgeBytes returns the bytes that the last (last) or first byte of any
// match of the concatenation subs is drawn from, or nil when subs can
// match the empty string or the set is not known.
func edgeBytes(subs []*syntax.Regexp, last bool) *byteSet {
	var set byteSet
	for k := range subs {
		sub := subs[k]
		if last {
			sub = subs[len(subs)-1-k]
		}
		nonEmpty, ok := addEdge(&set, sub, last)
		if !ok {
			return nil
		}
		if nonEmpty {
			return &set
		}
	}
	return nil // all of subs can match the empty string
}

// addEdge adds to set the bytes a non-empty match of re can start (or end,
// when last) with. nonEmpty reports that re never matches the empty string;
// ok is false when the bytes are not known.
func addEdge(set *byteSet, re *syntax.Regexp, last bool) (nonEmpty, ok bool) {
	switch re.Op {
	case syntax.OpLiteral:
		if len(re.Rune) == 0 {
			return false, true
		}
		r := re.Rune[0]
		if last {
			r = re.Rune[len(re.Rune)-1]
		}
		addRune(set, r, re.Flags&syntax.FoldCase != 0)
		return true, true
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1] && r < utf8.RuneSelf; r++ {
				set[r] = true
			}
			if re.Rune[i+1] >= utf8.RuneSelf {
				addNonASCII(set)
			}
		}
		return true, true
	case syntax.OpCapture, syntax.OpPlus:
		return addEdge(set, re.Sub[0], last)
	case syntax.OpStar, syntax.OpQuest:
		_, ok := addEdge(set, re.Sub[0], last)
		return false, ok
	case syntax.OpConcat:
		e := edgeBytes(re.Sub, last)
		if e == nil {
			return false, false
		}
		for b, in := range e {
			set[b] = set[b] || in
		}
		return true, true
	case syntax.OpAlternate:
		nonEmpty = true
		for _, sub := range re.Sub {
			ne, ok := addEdge(set, sub, last)
			if !ok {
				return false, false
			}
			nonEmpty = nonEmpty && ne
		}
		return nonEmpty, true
	case syntax.OpEmptyMatch, syntax.OpWordBoundary, syntax.OpNoWordBoundary,
		syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText:
		return false, true // zero width
	}
	return false, false
}

// addRune adds the first byte of r's UTF-8 form, and of its case variants
// when fold is set.
func addRune(set *byteSet, r rune, fold bool) {
	if r >= utf8.RuneSelf {
		addNonASCII(set)
		return
	}
	set[r] = true
	if fold && ('a' <= r|0x20 && r|0x20 <= 'z') {
		set[r|0x20], set[r&^0x20] = true, true
		if r|0x20 == 'k' || r|0x20 == 's' {
			addNonASCII(set) // the Kelvin sign, the long s
		}
	}
}

// addNonASCII adds every byte of multi-byte UTF-8 sequences (and invalid
// bytes, which match as U+FFFD).
func addNonASCII(set *byteSet) {
	for b := utf8.RuneSelf; b < 256; b++ {
		set[b] = true
	}
}

// better reports whether the literal set a makes a better prefilter than b:
// its shortest literal is longer (rarer), or as long with fewer literals.
func better(a, b []literal) bool {
	if b == nil {
		return true
	}
	ma, mb := shortest(a), shortest(b)
	return ma > mb || ma == mb && len(a) < len(b)
}

// shortest is the length of the shortest of lits (never empty).
func shortest(lits []literal) int {
	return len(slices.MinFunc(lits, func(a, b literal) int { return cmp.Compare(len(a.s), len(b.s)) }).s)
}

// foldablePiece returns the longest run of a case-insensitive literal that
// ASCII lower-casing finds exactly: ASCII only, and without k and s, which
// also match the Kelvin sign and the long s under Unicode case folding.
func foldablePiece(runes []rune) string {
	best, cur := "", strings.Builder{}
	flush := func() {
		if cur.Len() > len(best) {
			best = cur.String()
		}
		cur.Reset()
	}
	for _, r := range runes {
		lr := r | 0x20
		if r >= utf8.RuneSelf || lr == 'k' || lr == 's' {
			flush()
			continue
		}
		cur.WriteByte(lowerASCII[byte(r)])
	}
	flush()
	return best
}

// find returns the offset of the first occurrence of l at or after from in
// data whose neighbors can surround it in a match; len(data)+1 when there
// is none.
func (l *literal) find(data []byte, from int) int {
	for from <= len(data) {
		j := l.index(data[from:])
		if j < 0 {
			break
		}
		c := from + j
		e := c + len(l.s)
		if (l.before == nil || c > 0 && data[c-1] != '\n' && l.before[data[c-1]]) &&
			(l.after == nil || e < len(data) && data[e] != '\n' && l.after[data[e]]) {
			return c
		}
		from = c + 1
	}
	return len(data) + 1
}

// lowerASCII maps ASCII upper-case letters to lower case and every other
// byte to itself.
var lowerASCII = func() (t [256]byte) {
	for i := range t {
		t[i] = byte(i)
		if 'A' <= i && i <= 'Z' {
			t[i] = byte(i) + 'a' - 'A'
		}
	}
	return t
}()

// Line is one matching line: its 1-based number, its text (without the
// line end) and where in it the match starts.
type Line struct {
	N    int
	Text []byte
	Col  int
}

// State holds the per-worker buffers of a scan, and what the scans
// report besides matches.
type State struct {
	next []int
	// Stop, when set, reports that the scan must end (the search was
	// cancelled); it is asked before each run of the expression.
	Stop func() bool
	// Cut counts the lines matched on their first LineCap bytes only.
	Cut int
}

func (st *State) stopped() bool { return st.Stop != nil && st.Stop() }

// Match finds up to max matching lines of data, calling emit for each. emit's
// text is only valid during the call.
func (m *Matcher) Match(st *State, data []byte, max int, emit func(Line)) {
	if max <= 0 || m.none {
		return
	}
	var (
		pos, line, counted = 0, 1, 0
		found              = 0
	)
	// at reports the match candidate at offset c: the line around it.
	check := func(c int) (next int) {
		ls := pos + bytes.LastIndexByte(data[pos:c], '\n') + 1
		le := len(data)
		if i := bytes.IndexByte(data[c:], '\n'); i >= 0 {
			le = c + i
		}
		line += bytes.Count(data[counted:ls], []byte{'\n'})
		counted = ls
		text := data[ls:le]
		col := c - ls
		ok := true
		if m.re != nil {
			if len(text) > m.lineCap {
				text = text[:m.lineCap]
				st.Cut++
			}
			loc := m.re.FindIndex(text)
			ok = loc != nil
			if ok {
				col = loc[0]
			}
		}
		if ok {
			emit(Line{N: line, Text: bytes.TrimSuffix(text, []byte{'\r'}), Col: col})
			found++
		}
		return le + 1
	}
	if cap(st.next) < len(m.lits) {
		st.next = make([]int, len(m.lits))
	}
	next := st.next[:len(m.lits)]
	for i := range next {
		next[i] = -1 // not looked for yet
	}
	for pos <= len(data) && found < max {
		c := pos // without a prefilter every line is a candidate
		if len(m.lits) > 0 {
			c = -1
			for i, l := range m.lits {
				if next[i] < pos && next[i] != len(data)+1 {
					next[i] = l.find(data, pos)
				}
				if next[i] <= len(data) && (c < 0 || next[i] < c) {
					c = next[i]
				}
			}
		} else if pos == len(data) && (pos == 0 || data[pos-1] == '\n') {
			return // no last line after the final newline
		}
		if c < 0 || m.re != nil && st.stopped() {
			return
		}
		pos = check(c)
	}
}

// LineCap is the most of a line the matcher runs its expression over in one
// call: longer lines are matched on their first LineCap bytes (and counted
// in State.Cut).
func (m *Matcher) LineCap() int { return m.lineCap }
