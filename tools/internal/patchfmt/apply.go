package patchfmt

import (
	"fmt"
	"slices"
	"strings"

	"github.com/specloop/specloop/internal/textclip"
)

// MaxSeekWork bounds the line comparisons one Budget allows (one Apply,
// or every Apply of a patch that shares a Budget) while looking for the
// hunks' lines: a hunk of many equal lines over a file of equal lines
// would otherwise cost the product of their lengths.
const MaxSeekWork = 20_000_000

// Budget is the line comparisons left to the Apply calls that share it:
// share one across the operations of a patch, so that repeating an
// expensive operation does not buy a new MaxSeekWork each time. It is not
// safe for concurrent use.
type Budget struct{ left int }

// NewBudget returns a Budget of MaxSeekWork comparisons.
func NewBudget() *Budget { return &Budget{left: MaxSeekWork} }

// ConflictError is a hunk that does not apply to the file.
type ConflictError struct {
	// Hunk is the 1-based number of the hunk within its operation.
	Hunk int
	// Line is the hunk's line in the patch.
	Line int
	Msg  string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("hunk %d (line %d of the patch): %s", e.Hunk, e.Line, e.Msg)
}

// Apply returns content changed by hunks, or a *ConflictError naming the
// first hunk that does not apply, spending b's comparisons; once they are
// spent every hunk that still has to be looked for is a conflict.
//
// Each hunk is looked for after the previous one: its @@ context line
// first (the hunk's lines must then come after it), then its old lines,
// compared exactly, then ignoring trailing white space, then ignoring
// leading and trailing white space; the first position that matches in
// the strictest pass wins. A hunk marked End of File must match at the end
// of the file. Old lines that end with an empty line also match without
// it (a model's blank line before the next hunk). A hunk with no old
// lines (pure addition) is inserted after its @@ context line, or at the
// end of the file when it has none or is marked End of File.
//
// Content with CRLF line ends (its first line ends with "\r\n") is
// matched without the "\r" and written back with CRLF on every line. The
// result always ends with a newline unless it is empty, like the codex
// tool's.
func (b *Budget) Apply(content string, hunks []Hunk) (string, error) {
	i := strings.IndexByte(content, '\n')
	crlf := i > 0 && content[i-1] == '\r'
	lines := strings.Split(content, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if crlf {
		for i, l := range lines {
			lines[i] = strings.TrimSuffix(l, "\r")
		}
	}
	type replacement struct {
		at, n int
		with  []string
	}
	var reps []replacement
	s := seeker{lines: lines, budget: b.left}
	defer func() { b.left = max(s.budget, 0) }()
	next := 0
	for i, h := range hunks {
		conflict := func(format string, args ...any) error {
			return &ConflictError{Hunk: i + 1, Line: h.Line, Msg: fmt.Sprintf(format, args...)}
		}
		if h.HasContext {
			at, ok := s.seek([]string{h.Context}, next, false)
			if !ok {
				return "", conflict("its @@ line %q does not occur%s", textclip.Clip(h.Context, 120), s.after(next))
			}
			next = at + 1
		}
		if len(h.Old) == 0 {
			at := len(lines)
			if h.HasContext && !h.EOF {
				at = next
			}
			reps = append(reps, replacement{at: at, with: h.New})
			continue
		}
		old, with, kept := h.Old, h.New, h.Kept
		at, ok := s.seek(old, next, h.EOF)
		if !ok && old[len(old)-1] == "" {
			old = old[:len(old)-1]
			if len(with) > 0 && with[len(with)-1] == "" {
				with, kept = with[:len(with)-1], kept[:len(kept)-1]
			}
			if len(old) > 0 {
				at, ok = s.seek(old, next, h.EOF)
			}
		}
		if !ok {
			return "", conflict("%s", s.missMessage(h, next))
		}
		// Context lines keep the file's text: a looser pass may have
		// matched them with different white space.
		own := make([]string, len(with))
		for k, l := range with {
			if j := kept[k]; j >= 0 && j < len(old) {
				l = lines[at+j]
			}
			own[k] = l
		}
		reps = append(reps, replacement{at: at, n: len(old), with: own})
		next = at + len(old)
	}
	slices.SortStableFunc(reps, func(a, b replacement) int { return a.at - b.at })
	out := make([]string, 0, len(lines))
	cursor := 0
	for _, r := range reps {
		if r.at < cursor { // cannot happen: hunks are found in order
			return "", &ConflictError{Hunk: len(hunks), Msg: "hunks overlap"}
		}
		out = append(out, lines[cursor:r.at]...)
		out = append(out, r.with...)
		cursor = r.at + r.n
	}
	out = append(out, lines[cursor:]...)
	if len(out) == 0 {
		return "", nil
	}
	eol := "\n"
	if crlf {
		eol = "\r\n"
	}
	return strings.Join(out, eol) + eol, nil
}

// seeker finds sequences of lines, counting its comparisons.
type seeker struct {
	lines  []string
	budget int
	spent  bool
}

// The passes of seek, strictest first.
var passes = []func(string) string{
	func(s string) string { return s },
	func(s string) string { return strings.TrimRight(s, " \t\r\f\v") },
	strings.TrimSpace,
}

// seek returns the first index at or after from where pattern occurs; with
// eof, only the index where it would end the file.
func (s *seeker) seek(pattern []string, from int, eof bool) (int, bool) {
	last := len(s.lines) - len(pattern)
	if last < 0 || from > last && !eof {
		return 0, false
	}
	if eof {
		from = last
	}
	for _, norm := range passes {
		for i := from; i <= last; i++ {
			match := true
			for j, p := range pattern {
				if s.budget--; s.budget < 0 {
					s.spent = true
					return 0, false
				}
				if norm(s.lines[i+j]) != norm(p) {
					match = false
					break
				}
			}
			if match {
				return i, true
			}
		}
	}
	return 0, false
}

func (s *seeker) after(from int) string {
	if s.spent {
		return " (the search gave up: the hunk is too ambiguous, or the patch's hunks together needed too many comparisons; give more distinctive context or split the patch)"
	}
	if from > 0 {
		return fmt.Sprintf(" after line %d (where the previous hunk or @@ line matched)", from)
	}
	return ""
}

// missMessage explains why a hunk's old lines were not found.
func (s *seeker) missMessage(h Hunk, from int) string {
	where := "the file"
	if h.EOF {
		where = "the end of the file (the hunk is marked *** End of File)"
	}
	msg := fmt.Sprintf("its %d context and removed lines do not occur in %s%s", len(h.Old), where, s.after(from))
	first := ""
	for _, l := range h.Old {
		if strings.TrimSpace(l) != "" {
			first = strings.TrimSpace(l)
			break
		}
	}
	if first == "" || s.spent {
		return msg + "; read the file and copy the lines exactly"
	}
	var at []string
	for i, l := range s.lines {
		if strings.TrimSpace(l) == first {
			at = append(at, fmt.Sprint(i+1))
			if len(at) == 5 {
				at = append(at, "…")
				break
			}
		}
	}
	if len(at) == 0 {
		return msg + fmt.Sprintf("; no line of the file is %q (its first non-blank line); read the file and copy the lines exactly", textclip.Clip(first, 120))
	}
	return msg + fmt.Sprintf("; its first non-blank line occurs at line %s, followed by different lines; read the file and copy the lines exactly", strings.Join(at, ", "))
}
