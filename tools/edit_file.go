package tools

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/specloop/specloop/gen"
)

// maxReportedLines bounds the line numbers an edit_file error lists.
const maxReportedLines = 10

var editFileHandler = Func(NeedsWorkspace, editFile, renderEditFile)

func editFile(ctx context.Context, env *Env, in *gen.EditFileInput) (*gen.EditFileResult, error) {
	ws := env.Workspace
	rel, err := clean(in.Path)
	if err != nil {
		return nil, err
	}
	exists, mode, err := ws.writeTarget(rel, gen.ErrorCodeNotFound)
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, Errorf(gen.ErrorCodeNotFound, "%s does not exist; create it with write_file", quote(rel))
	}
	data, err := ws.readCapped(rel, maxEditFileSize, "edit_file", "change it with run_command (sed -i, patch) instead")
	if err != nil {
		return nil, err
	}
	if isBinary(data) {
		return nil, Errorf(gen.ErrorCodeBinaryFile, "%s is a binary file; it cannot be edited as text", quote(rel))
	}
	old := []byte(in.OldText)
	at, n := occurrences(data, old, maxReportedLines+1)
	switch {
	case n == 0:
		return nil, Errorf(gen.ErrorCodeNoMatch, "%s", noMatchMessage(data, in.OldText, rel))
	case n > 1:
		return nil, Errorf(gen.ErrorCodeMultipleMatches, "old_text occurs %d times in %s (at lines %s); nothing was changed. Include more surrounding lines in old_text so that it occurs exactly once.",
			n, rel, lineList(data, at))
	}
	if size := int64(len(data) - len(old) + len(in.NewText)); size > maxEditFileSize {
		return nil, tooLarge(rel, size, maxEditFileSize, "edit_file", "that would be its size after this edit; nothing was changed")
	}
	if err := ws.changing(ctx); err != nil {
		return nil, err
	}
	start, end := at[0], at[0]+len(old)
	diff, err := editDiff(rel, data, start, end, []byte(in.NewText))
	if err != nil {
		return nil, fmt.Errorf("diff %s: %w", rel, err)
	}
	updated := make([]byte, 0, len(data)-len(old)+len(in.NewText))
	updated = append(updated, data[:start]...)
	updated = append(updated, in.NewText...)
	updated = append(updated, data[end:]...)
	if err := ws.writeAtomic(rel, updated, mode); err != nil {
		return nil, err
	}
	ws.remember(rel, true, data)
	return &gen.EditFileResult{Path: rel, Diff: diff}, nil
}

// occurrences counts the occurrences of sub in data, overlapping ones
// included (each is a different edit), and returns the offsets of the
// first max.
func occurrences(data, sub []byte, max int) (at []int, n int) {
	for from := 0; ; n++ {
		i := bytes.Index(data[from:], sub)
		if i < 0 {
			return at, n
		}
		if len(at) < max {
			at = append(at, from+i)
		}
		from += i + 1
	}
}

// lineList renders the line numbers of the offsets.
func lineList(data []byte, offsets []int) string {
	lines := make([]int, len(offsets))
	line, counted := 1, 0
	for i, off := range offsets {
		line += bytes.Count(data[counted:off], []byte{'\n'})
		counted = off
		lines[i] = line
	}
	return joinInts(lines)
}

// noMatchMessage explains a missing old_text and, when cheap, points at the
// lines that look like its first line.
func noMatchMessage(data []byte, oldText, rel string) string {
	msg := fmt.Sprintf("old_text does not occur in %s; nothing was changed.", rel)
	if bytes.Contains(data, []byte("\r\n")) && strings.Contains(oldText, "\n") && !strings.Contains(oldText, "\r\n") {
		msg += " The file has CRLF line ends (\\r\\n)."
	}
	var first string
	for _, l := range strings.Split(oldText, "\n") {
		if t := squeeze(l); t != "" {
			first = t
			break
		}
	}
	if first == "" {
		return msg + " Read the file and copy the text to replace exactly."
	}
	var same, containing []int
	n := 0
	for line := range bytes.SplitSeq(data, []byte{'\n'}) {
		n++
		if !bytes.Contains(line, []byte(first[:1])) {
			continue // cheap: cannot resemble
		}
		t := squeeze(string(line))
		switch {
		case t == first:
			same = append(same, n)
		case len(containing) < maxReportedLines && strings.Contains(t, first):
			containing = append(containing, n)
		}
	}
	switch {
	case len(same) > 0:
		msg += fmt.Sprintf(" The first line of old_text occurs, with different white space or different lines after it, at %s %s.", pick(len(same), "line", "lines"), joinInts(same))
	case len(containing) > 0:
		msg += fmt.Sprintf(" Lines containing the first line of old_text: %s.", joinInts(containing))
	default:
		msg += " No line resembles its first line."
	}
	return msg + " Read the file and copy the text to replace exactly."
}

// squeeze trims s and turns each run of white space in it into one space.
func squeeze(s string) string { return strings.Join(strings.Fields(s), " ") }

func joinInts(ns []int) string {
	parts := make([]string, 0, len(ns))
	for i, n := range ns {
		if i == maxReportedLines {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, strconv.Itoa(n))
	}
	return strings.Join(parts, ", ")
}

func renderEditFile(_ *gen.EditFileInput, out *gen.EditFileResult) string {
	if out.Diff == "" {
		return fmt.Sprintf("edited %s: old_text and new_text are equal, the file is unchanged\n", out.Path)
	}
	added, removed := diffStat(out.Diff)
	return fmt.Sprintf("edited %s (+%d -%d lines):\n%s", out.Path, added, removed, out.Diff)
}

// diffStat counts the added and removed lines of a unified diff.
func diffStat(diff string) (added, removed int) {
	inHunk := false
	for line := range strings.SplitSeq(diff, "\n") {
		switch {
		case strings.HasPrefix(line, "@@"):
			inHunk = true
		case !inHunk:
		case strings.HasPrefix(line, "+"):
			added++
		case strings.HasPrefix(line, "-"):
			removed++
		}
	}
	return added, removed
}
