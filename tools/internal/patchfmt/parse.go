// Package patchfmt reads the apply_patch envelope format (the one OpenAI's
// codex apply-patch crate defines and current OpenAI models are trained
// on) and applies its update hunks to text. It knows nothing of files:
// package tools resolves the paths, enforces the workspace's rules and
// writes.
//
// The grammar, with markers recognised after trimming surrounding white
// space:
//
//	*** Begin Patch
//	*** Add File: PATH        followed by lines starting with "+"
//	*** Delete File: PATH
//	*** Update File: PATH     then optionally "*** Move to: PATH",
//	                          then hunks: "@@" or "@@ CONTEXT-LINE", then
//	                          lines starting with " ", "-" or "+" (an empty
//	                          line is an empty context line), and
//	                          "*** End of File" after a hunk that must
//	                          match at the end of the file
//	*** End Patch
//
// The first hunk of an Update File may leave out its "@@" line.
package patchfmt

import (
	"fmt"
	"strings"

	"github.com/specloop/specloop/internal/textclip"
)

// The markers of the format.
const (
	beginMarker  = "*** Begin Patch"
	endMarker    = "*** End Patch"
	addMarker    = "*** Add File:"
	deleteMarker = "*** Delete File:"
	updateMarker = "*** Update File:"
	moveMarker   = "*** Move to:"
	eofMarker    = "*** End of File"
	hunkMarker   = "@@"
)

// Kind is what an operation does to its file.
type Kind int

// The operations of a patch.
const (
	Add Kind = iota + 1
	Delete
	Update
)

// Op is one file operation of a patch.
type Op struct {
	Kind Kind
	// Path is the file as the patch names it (not cleaned).
	Path string
	// MoveTo is where an Update moves the file; "" when it stays.
	MoveTo string
	// Content is an Add's file content: each "+" line with a newline.
	Content string
	// Hunks are an Update's changes, in file order.
	Hunks []Hunk
	// Line is the 1-based line of the operation's header in the patch.
	Line int
}

// Hunk is one change of an Update.
type Hunk struct {
	// Context, when HasContext, is the text after "@@ ": a line the
	// change comes after (a function's or class's header, usually).
	Context    string
	HasContext bool
	// Old are the lines the hunk replaces (context and "-" lines), New the
	// lines it puts in their place (context and "+" lines).
	Old, New []string
	// Kept has one entry per line of New: the index in Old of the context
	// line it repeats, or -1 for an added line. Apply keeps the file's own
	// text of context lines, which may differ in white space.
	Kept []int
	// EOF is set when the hunk ended with "*** End of File": Old must
	// match at the end of the file.
	EOF bool
	// Line is the 1-based line of the hunk's first line in the patch.
	Line int
}

// SyntaxError is a patch that does not follow the format.
type SyntaxError struct {
	// Line is the 1-based line of the problem in the patch; 0 for the
	// patch as a whole.
	Line int
	Msg  string
}

func (e *SyntaxError) Error() string {
	if e.Line == 0 {
		return e.Msg
	}
	return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
}

func syntaxErr(line int, format string, args ...any) error {
	return &SyntaxError{Line: line, Msg: fmt.Sprintf(format, args...)}
}

// Parse reads a patch. It returns a *SyntaxError when the text is not in
// the format or holds no operation.
func Parse(text string) ([]Op, error) {
	// Leading blank lines are dropped before counting lines, so numbers
	// count from the first line that is not blank.
	text = strings.Trim(text, " \t\r\n")
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	if strings.TrimSpace(lines[0]) != beginMarker {
		return nil, syntaxErr(1, "the first line of the patch must be %q", beginMarker)
	}
	if len(lines) < 2 || strings.TrimSpace(lines[len(lines)-1]) != endMarker {
		return nil, syntaxErr(len(lines), "the last line of the patch must be %q", endMarker)
	}
	p := parser{lines: lines[:len(lines)-1], at: 1}
	var ops []Op
	for p.at < len(p.lines) {
		if strings.TrimSpace(p.lines[p.at]) == "" {
			p.at++
			continue
		}
		op, err := p.op()
		if err != nil {
			return nil, err
		}
		ops = append(ops, op)
	}
	if len(ops) == 0 {
		return nil, syntaxErr(0, "the patch has no file operation (*** Add File, *** Delete File or *** Update File)")
	}
	return ops, nil
}

// parser walks the lines between the Begin and End markers; at is the
// 0-based index of the next line, which is line at+1 of the patch.
type parser struct {
	lines []string
	at    int
}

func (p *parser) op() (Op, error) {
	header := strings.TrimSpace(p.lines[p.at])
	line := p.at + 1
	p.at++
	if path, ok := strings.CutPrefix(header, addMarker); ok {
		op := Op{Kind: Add, Path: strings.TrimSpace(path), Line: line}
		var b strings.Builder
		for ; p.at < len(p.lines); p.at++ {
			rest, ok := strings.CutPrefix(p.lines[p.at], "+")
			if !ok {
				break
			}
			b.WriteString(rest)
			b.WriteByte('\n')
		}
		op.Content = b.String()
		return op, checkPath(op.Path, line)
	}
	if path, ok := strings.CutPrefix(header, deleteMarker); ok {
		op := Op{Kind: Delete, Path: strings.TrimSpace(path), Line: line}
		return op, checkPath(op.Path, line)
	}
	path, ok := strings.CutPrefix(header, updateMarker)
	if !ok {
		return Op{}, syntaxErr(line, "%q is not a file operation: expected *** Add File: PATH, *** Delete File: PATH or *** Update File: PATH", textclip.Clip(header, 80))
	}
	op := Op{Kind: Update, Path: strings.TrimSpace(path), Line: line}
	if err := checkPath(op.Path, line); err != nil {
		return Op{}, err
	}
	if p.at < len(p.lines) {
		if to, ok := strings.CutPrefix(strings.TrimSpace(p.lines[p.at]), moveMarker); ok {
			op.MoveTo = strings.TrimSpace(to)
			if err := checkPath(op.MoveTo, p.at+1); err != nil {
				return Op{}, err
			}
			p.at++
		}
	}
	for p.at < len(p.lines) {
		l := p.lines[p.at]
		if strings.TrimSpace(l) == "" {
			p.at++ // blank lines between hunks
			continue
		}
		if isOpHeader(l) {
			break // the next operation
		}
		h, err := p.hunk(len(op.Hunks) == 0)
		if err != nil {
			return Op{}, err
		}
		op.Hunks = append(op.Hunks, h)
	}
	if len(op.Hunks) == 0 {
		return Op{}, syntaxErr(line, "*** Update File: %s has no hunk", textclip.Clip(op.Path, 200))
	}
	return op, nil
}

// isOpHeader reports whether l, white space around it ignored, starts an
// operation. Only the three headers count, so that a context line such as
// " ***" (a Markdown rule) stays a context line.
func isOpHeader(l string) bool {
	l = strings.TrimSpace(l)
	return strings.HasPrefix(l, addMarker) || strings.HasPrefix(l, deleteMarker) || strings.HasPrefix(l, updateMarker)
}

// hunk reads one hunk from p.at; first says it is an Update's first hunk,
// which may leave out its @@ line.
func (p *parser) hunk(first bool) (Hunk, error) {
	h := Hunk{Line: p.at + 1}
	head := strings.TrimSpace(p.lines[p.at])
	switch {
	case head == hunkMarker:
		p.at++
	case strings.HasPrefix(head, hunkMarker+" "):
		h.Context = strings.TrimSpace(strings.TrimPrefix(head, hunkMarker+" "))
		h.HasContext = true
		p.at++
	case !first:
		return Hunk{}, syntaxErr(p.at+1, "expected a hunk starting with @@, got %q", textclip.Clip(p.lines[p.at], 80))
	}
	n := 0
	for ; p.at < len(p.lines); p.at++ {
		l := p.lines[p.at]
		if isOpHeader(l) {
			break // the next operation, even when padded with spaces
		}
		if strings.TrimSpace(l) == eofMarker {
			if n == 0 {
				break
			}
			h.EOF = true
			p.at++
			break
		}
		if l == "" {
			l = " " // an empty line is an empty context line
		}
		switch l[0] {
		case ' ':
			h.Old = append(h.Old, l[1:])
			h.New = append(h.New, l[1:])
			h.Kept = append(h.Kept, len(h.Old)-1)
		case '-':
			h.Old = append(h.Old, l[1:])
		case '+':
			h.New = append(h.New, l[1:])
			h.Kept = append(h.Kept, -1)
		default:
			if n == 0 {
				return Hunk{}, syntaxErr(p.at+1, "unexpected line %q in a hunk: every line of a hunk starts with ' ' (context), '-' (removed) or '+' (added)", textclip.Clip(l, 80))
			}
			return h, nil // the next hunk or operation
		}
		n++
	}
	if n == 0 {
		return Hunk{}, syntaxErr(h.Line, "the hunk has no lines")
	}
	return h, nil
}

// checkPath refuses a path the format cannot carry; confinement is the
// caller's.
func checkPath(path string, line int) error {
	if path == "" {
		return syntaxErr(line, "the file operation names no path")
	}
	return nil
}
