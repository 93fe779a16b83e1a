package tools

import (
	"bytes"

	udiff "github.com/aymanbagabas/go-udiff"
)

// diffContext is the number of unchanged lines around each hunk.
const diffContext = udiff.DefaultContextLines

// fileDiff is the unified diff turning old into new for the file rel, with
// git's a/ and b/ labels (so `git apply` and `patch -p1` take it); a file
// that did not exist (or no longer exists) is /dev/null on that side.
func fileDiff(rel string, old []byte, oldExists bool, new []byte, newExists bool) string {
	from, to := "a/"+rel, "b/"+rel
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
	return udiff.Unified(from, to, string(old), string(new))
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
	we := len(content)
	if i := bytes.IndexByte(content[end:], '\n'); i >= 0 {
		we = end + i + 1
	}
	for i := 0; i < diffContext && we < len(content); i++ {
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
	u, err := udiff.ToUnifiedDiff("a/"+rel, "b/"+rel, oldWin, udiff.Lines(oldWin, newWin), diffContext)
	if err != nil {
		return "", err
	}
	offset := bytes.Count(content[:ws], []byte{'\n'})
	for _, h := range u.Hunks {
		h.FromLine += offset
		h.ToLine += offset
	}
	return u.String(), nil
}
