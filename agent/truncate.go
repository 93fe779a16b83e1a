package agent

import (
	"strconv"
	"strings"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/textclip"
)

// The model-facing cap of a tool's output. The tools cap what they produce
// to bound memory and time (run_command keeps 16 KiB of the head and of the
// tail of each stream, read_file up to 2000 lines or 256 KiB; see
// tools/limits.go); the loop then caps what of it the model sees, in one
// place, for every tool alike: the history holds the capped content, while
// the Observer (and so a server's client) gets the whole Observation.
//
// The defaults are the spec's (CreateRunRequest.max_observation_bytes and
// max_observation_lines): 10 KiB and 256 lines, as Codex caps command
// output; in a small context window the byte cap is lowered to fit it
// (see Compaction).

// DefaultMaxObservationBytes is the byte cap of a tool's output as the
// model sees it when Options.MaxObservationBytes is 0: the spec's default of
// CreateRunRequest.max_observation_bytes.
const DefaultMaxObservationBytes = gen.DefaultCreateRunRequestMaxObservationBytes

// DefaultMaxObservationLines is the line cap of a tool's output as the
// model sees it when Options.MaxObservationLines is 0: the spec's default of
// CreateRunRequest.max_observation_lines.
const DefaultMaxObservationLines = gen.DefaultCreateRunRequestMaxObservationLines

// minObservationBytes is the smallest byte cap TruncateOutput honours: room
// for the marker and a little of the head and the tail.
const minObservationBytes = 512

// Truncation says what TruncateOutput cut from the middle of an output.
type Truncation struct {
	// OmittedBytes and OmittedLines are the size of the part cut out
	// (0 when nothing was); a line cut in part counts as a line.
	OmittedBytes int
	OmittedLines int
}

// TruncateOutput returns s when it has at most maxBytes bytes and maxLines
// lines, else its head and its tail around a marker line that gives the
// numbers of lines and bytes omitted and, when hint returns one, how to see
// the rest. hint, which may be nil, gets the part cut out (to quote where
// it starts and ends, such as the line numbers of a file). The result never
// holds more than maxBytes bytes (at least 512) or maxLines lines (at least
// 4) and never splits a UTF-8 sequence.
func TruncateOutput(s string, maxBytes, maxLines int, hint func(omitted string) string) (string, Truncation) {
	maxBytes = max(maxBytes, minObservationBytes)
	maxLines = max(maxLines, 4)
	if len(s) <= maxBytes && lineCount(s) <= maxLines {
		return s, Truncation{}
	}
	// The marker is sized for the largest counts it can hold (all of s)
	// and the hint gets at most a quarter of the cap, so that the head and
	// the tail can be chosen before the marker is written.
	hintRoom := maxBytes / 4
	room := maxBytes - len(marker(len(s), len(s), "")) - len("; \n") - hintRoom
	lines := maxLines - 1 // the marker's own line
	head := headCut(s, room/2, lines/2)
	tail := tailCut(s[len(head):], room-room/2, lines-lines/2)
	mid := s[len(head) : len(s)-len(tail)]
	t := Truncation{OmittedBytes: len(mid), OmittedLines: lineCount(mid)}
	h := ""
	if hint != nil {
		h = textclip.Head(strings.ReplaceAll(hint(mid), "\n", " "), hintRoom)
	}
	var b strings.Builder
	b.Grow(len(head) + len(tail) + 64 + len(h))
	b.WriteString(head)
	if head != "" && !strings.HasSuffix(head, "\n") {
		b.WriteByte('\n')
	}
	b.WriteString(marker(t.OmittedLines, t.OmittedBytes, h))
	b.WriteString(tail)
	return b.String(), t
}

// marker is the line that stands for what was cut.
func marker(lines, bytes int, hint string) string {
	m := "[… " + strconv.Itoa(lines) + " lines, " + strconv.Itoa(bytes) + " bytes omitted"
	if hint != "" {
		m += "; " + hint
	}
	return m + " …]\n"
}

// lineCount is the number of lines of s: its line breaks, plus one for a
// last line without one.
func lineCount(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

// headCut returns the longest prefix of s of at most maxLines lines and
// maxBytes bytes that ends on a line break or, when a line is longer than
// the room, on a character boundary.
func headCut(s string, maxBytes, maxLines int) string {
	maxBytes = max(maxBytes, 0)
	end := 0
	for n := 0; n < maxLines && end < len(s); n++ {
		i := strings.IndexByte(s[end:], '\n')
		next := len(s)
		if i >= 0 {
			next = end + i + 1
		}
		if next > maxBytes {
			if n == 0 { // a first line longer than the room: cut it
				return textclip.Head(s, maxBytes)
			}
			break
		}
		end = next
	}
	return s[:end]
}

// tailCut returns the longest suffix of s of at most maxLines lines and
// maxBytes bytes that starts a line or, when a line is longer than the
// room, a character.
func tailCut(s string, maxBytes, maxLines int) string {
	maxBytes = max(maxBytes, 0)
	start := len(s)
	for n := 0; n < maxLines && start > 0; n++ {
		// The line that ends at start (its line break included) begins
		// after the line break before its last byte.
		prev := strings.LastIndexByte(s[:start-1], '\n') + 1
		if len(s)-prev > maxBytes {
			if n == 0 { // a last line longer than the room: cut it
				return textclip.Tail(s, maxBytes)
			}
			break
		}
		start = prev
	}
	return s[start:]
}
