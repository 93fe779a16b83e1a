package agent

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/specloop/specloop/gen"
)

// How a model gets back what the loop cut from a tool's output (the
// truncation marker's hint) or elided from the history (the stub of an
// old observation). The hints know the built-in tools by name; a test
// checks that each name is a tool of the spec. Any other tool gets a
// generic hint.
type toolHint struct {
	// rest says how to see the part cut out of an output; omitted is that
	// part.
	rest func(args map[string]any, omitted string) string
	// again says how to see an elided output again; content is it.
	again func(args map[string]any, content string) string
}

var toolHints = map[string]toolHint{
	"read_file": {
		rest: func(args map[string]any, omitted string) string {
			first, last := numberedRange(omitted)
			if first == 0 {
				return "call read_file on " + quoteArg(args, "path") + " with a narrower start_line and end_line to see the rest"
			}
			return fmt.Sprintf("call read_file on %s with start_line %d and end_line %d to see them", quoteArg(args, "path"), first, last)
		},
		again: func(args map[string]any, content string) string {
			first, last := numberedRange(content)
			if first == 0 {
				return "call read_file on " + quoteArg(args, "path") + " again to see it"
			}
			return fmt.Sprintf("call read_file on %s with start_line %d and end_line %d to see it again", quoteArg(args, "path"), first, last)
		},
	},
	"run_command": {
		rest: func(map[string]any, string) string {
			return "re-run the command narrowed (grep, head, tail, sed -n 'A,Bp'), or redirect its output to a file and read that with read_file and a line range, or search it"
		},
		again: func(map[string]any, string) string {
			return "re-run the command (narrowed with grep, head or tail if its output was long) to see it again"
		},
	},
	"search": {
		rest: func(map[string]any, string) string {
			return "refine the pattern, narrow the path or glob, or lower limit to see fewer matches"
		},
		again: func(map[string]any, string) string { return "run the search again to see it" },
	},
	"list_files": {
		rest: func(map[string]any, string) string {
			return "list a subdirectory or pass a glob to see fewer paths"
		},
		again: func(map[string]any, string) string { return "list the files again to see it" },
	},
}

// restHint returns the truncation hint for obs, the answer to call. When
// the tool itself already left bytes out (its structured result counts
// them in properties named *_omitted_bytes, as run_command's
// stdout_omitted_bytes), the hint says so: the cut the model sees is then
// not all that is missing.
func restHint(call *gen.ToolCall, obs *gen.Observation) func(string) string {
	return func(omitted string) string {
		how := "call the tool with narrower arguments to see less at a time"
		if h, ok := toolHints[call.ToolName]; ok {
			how = h.rest(call.Arguments, omitted)
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
// which may be nil) once compaction elided it.
func elisionStub(call *gen.ToolCall, obs *gen.Observation) string {
	how := "repeat the call to see it again"
	if call != nil {
		if h, ok := toolHints[call.ToolName]; ok {
			how = h.again(call.Arguments, obs.Content)
		}
	}
	what := "output"
	if obs.IsError {
		what = "error message"
	}
	return fmt.Sprintf("[%s elided to save context: %d lines, %d bytes; %s]", what, lineCount(obs.Content), len(obs.Content), how)
}

// quoteArg returns the string argument name of args quoted and clipped for
// a hint, or "the same path" when there is none.
func quoteArg(args map[string]any, name string) string {
	s, ok := args[name].(string)
	if !ok || !utf8.ValidString(s) {
		return "the same path"
	}
	return strconv.Quote(clipTo(s, 200))
}

// numberedRange returns the first and the last line number of text whose
// lines read `N<TAB>text` (read_file's content), or 0, 0. A partial first
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
