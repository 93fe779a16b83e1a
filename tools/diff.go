package tools

import (
	"bytes"
	"fmt"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"
)

// diffContext is the number of unchanged lines around each hunk.
const diffContext = udiff.DefaultContextLines

// fileDiff is the unified diff turning old into new for the file rel, with
// git's a/ and b/ labels (so `git apply` and `patch -p1` take it); a file
// that did not exist (or no longer exists) is /dev/null on that side.
func fileDiff(rel string, old []byte, oldExists bool, new []byte, newExists bool) string {
	from, to := diffName("a/", rel), diffName("b/", rel)
	if !oldExists {
		from = "/dev/null"
	}
	if !newExists {
		to = "/dev/null"
	}
	if oldExists == newExists && bytes.Equal(old, new) {
		return ""
	}
	if isBinary(old) || isBinary(new) {
		return "Binary files " + from + " and " + to + " differ\n"
	}
	return labeled(from, to, rel, udiff.Unified("a", "b", string(old), string(new)))
}

// labeled gives a diff body that udiff labeled a and b the ---/+++ header
// of the file rel, as git writes it: a name with a space is followed by a
// tab, so that patch(1) reads the whole name. An empty body stays empty.
func labeled(from, to, rel, body string) string {
	if body == "" {
		return ""
	}
	tab := ""
	if strings.IndexByte(rel, ' ') >= 0 {
		tab = "\t"
	}
	return "--- " + from + tab + "\n+++ " + to + tab + "\n" + strings.TrimPrefix(body, "--- a\n+++ b\n")
}

// diffName is prefix+rel as a diff header names it, quoted as git quotes it
// (core.quotePath=false): a name with a control character, a double quote
// or a backslash is written C-style between double quotes, so a newline in
// a name can never start a header line of its own (`"a/x\n+++ b/y"`).
// git apply and GNU patch both read the quoted form.
func diffName(prefix, rel string) string {
	name := prefix + rel
	if !strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '"' || r == '\\' }) {
		return name
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch k := strings.IndexByte("\a\b\t\n\v\f\r\"\\", c); {
		case k >= 0:
			b.WriteByte('\\')
			b.WriteByte("abtnvfr\"\\"[k])
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, "\\%03o", c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// editDiff is the unified diff of replacing content[start:end] with
// replacement in the file rel. Only the changed lines and their context are
// diffed, so the cost does not grow with the file.
func editDiff(rel string, content []byte, start, end int, replacement []byte) (string, error) {
	// The window: the changed lines plus diffContext lines on each side.
	ws := bytes.LastIndexByte(content[:start], '\n') + 1
	for i := 0; i < diffContext && ws > 0; i++ {
		ws = bytes.LastIndexByte(content[:ws-1], '\n') + 1
	}
	we := end // past the line end at or after end, then diffContext more
	for i := 0; i <= diffContext && we < len(content); i++ {
		if j := bytes.IndexByte(content[we:], '\n'); j >= 0 {
			we += j + 1
		} else {
			we = len(content)
		}
	}
	oldWin := string(content[ws:we])
	var nw bytes.Buffer
	nw.Grow(we - ws - (end - start) + len(replacement))
	nw.Write(content[ws:start])
	nw.Write(replacement)
	nw.Write(content[end:we])
	newWin := nw.String()
	u, err := udiff.ToUnifiedDiff("a", "b", oldWin, udiff.Lines(oldWin, newWin), diffContext)
	if err != nil {
		return "", err
	}
	offset := bytes.Count(content[:ws], []byte{'\n'})
	for _, h := range u.Hunks {
		h.FromLine += offset
		h.ToLine += offset
	}
	return labeled(diffName("a/", rel), diffName("b/", rel), rel, u.String()), nil
}
