package agent

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/textclip"
)

// How a model gets back what the loop cut from a tool's output (the
// truncation marker's hint) or elided from the history (the stub of an
// old observation): the tool says, in its spec's hints (gen.ToolHints,
// from the x-specloop-hints of its operation). A tool whose output is
// numbered lines names the arguments of its line range, and the hint
// names the lines to ask for; any other gives its texts, or gets a
// generic hint.

// restHint returns the truncation hint for obs, the answer to call of a
// tool with hints h (nil: none). When the tool itself already left bytes
// out (its structured result counts them in properties named
// *_omitted_bytes, as run_command's stdout_omitted_bytes), the hint says
// so: the cut the model sees is then not all that is missing.
func restHint(h *gen.ToolHints, call *gen.ToolCall, obs *gen.Observation) func(string) string {
	return func(omitted string) string {
		how := "call the tool with narrower arguments to see less at a time"
		switch {
		case h != nil && h.LineRange != nil:
			r := h.LineRange
			how = lineRangeCall(r, call, omitted, fmt.Sprintf(" with a narrower %s and %s to see the rest", r.Start, r.End), "to see them")
		case h != nil && h.Rest != nil:
			how = *h.Rest
		}
		if n := omittedByTool(obs); n > 0 {
			return fmt.Sprintf("the tool itself did not keep %d more bytes; %s", n, how)
		}
		return how
	}
}

// omittedByTool sums the integer properties of obs's structured result
// whose names end in _omitted_bytes.
func omittedByTool(obs *gen.Observation) int64 {
	if obs.Data == nil {
		return 0
	}
	var n int64
	for k, v := range *obs.Data {
		if !strings.HasSuffix(k, "_omitted_bytes") {
			continue
		}
		switch v := v.(type) {
		case float64:
			n += int64(v)
		case int:
			n += int64(v)
		case int64:
			n += v
		}
	}
	return n
}

// elisionStub is the content that stands for obs (the answer to call,
// which may be nil, of a tool with hints h) once compaction elided it.
func elisionStub(h *gen.ToolHints, call *gen.ToolCall, obs *gen.Observation) string {
	how := "repeat the call to see it again"
	switch {
	case call == nil || h == nil:
	case h.LineRange != nil:
		how = lineRangeCall(h.LineRange, call, obs.Content, " again to see it", "to see it again")
	case h.Again != nil:
		how = *h.Again
	}
	what := "output"
	if obs.IsError {
		what = "error message"
	}
	return fmt.Sprintf("[%s elided to save context: %d lines, %d bytes; %s]", what, lineCount(obs.Content), len(obs.Content), how)
}

// lineRangeCall says how to see the numbered lines of text (the output of
// call, or a part of it) with the tool's line range r: which lines to ask
// for and then seeing, or, when text has no numbered line, unnumbered.
func lineRangeCall(r *gen.LineRangeArguments, call *gen.ToolCall, text, unnumbered, seeing string) string {
	on := fmt.Sprintf("call %s on %s", call.ToolName, quoteArg(call.Arguments, r.Path))
	first, last := numberedRange(text)
	if first == 0 {
		return on + unnumbered
	}
	return fmt.Sprintf("%s with %s %d and %s %d %s", on, r.Start, first, r.End, last, seeing)
}

// quoteArg returns the string argument name of args quoted and clipped for
// a hint, or "the same path" when there is none.
func quoteArg(args map[string]any, name string) string {
	s, ok := args[name].(string)
	if !ok || !utf8.ValidString(s) {
		return "the same path"
	}
	return strconv.Quote(textclip.Head(s, 200))
}

// numberedRange returns the first and the last line number of text whose
// lines read `N<TAB>text` (the content of a tool with a line range), or 0, 0. A partial first
// or last line is skipped.
func numberedRange(text string) (first, last int) {
	for line := range strings.Lines(text) {
		if n := lineNumber(line); n > 0 {
			if first == 0 {
				first = n
			}
			last = n
		}
	}
	return first, last
}

// lineNumber returns N of a line `N<TAB>...`, or 0.
func lineNumber(line string) int {
	tab := strings.IndexByte(line, '\t')
	if tab <= 0 || tab > 10 {
		return 0
	}
	n, err := strconv.Atoi(line[:tab])
	if err != nil || n <= 0 {
		return 0
	}
	return n
}
