package agent

import (
	"slices"
	"strconv"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/ident"
	"github.com/specloop/specloop/internal/secretshape"
	"github.com/specloop/specloop/internal/textclip"
	"github.com/specloop/specloop/trace"
)

// What a model chooses freely — the name of a tool it calls, the keys of
// the arguments — may hold anything, a secret it read included. The trace
// (and so the server's event stream) records a tool name verbatim only
// when it is the name of a tool offered to the model, and an argument key
// only when it is a property of that tool's input schema; any other name
// or key is recorded as its trace.Summary, `chars=N;sha256=HEX`, which
// still tells which without saying what.
//
// A call id, which the model writes too, is recorded verbatim only when it
// is plain (letters, digits, _ and -, at most 64 bytes, as providers make
// them) and has no credential's shape (internal/secretshape: sk-…, ghp_…,
// AKIA…, a JWT, a long high-entropy token); any other id is recorded as its
// Summary, the same in every event of the call, so that its model_action,
// observation and approval events still pair.

// vocabulary holds the names a trace may record verbatim: the offered
// tools and the properties of their input schemas. A nil vocabulary (no
// tools) knows no name.
type vocabulary map[string]map[string]bool

func newVocabulary(specs []gen.ToolSpec) vocabulary {
	v := make(vocabulary, len(specs))
	for _, s := range specs {
		props := map[string]bool{}
		if p, ok := s.InputSchema["properties"].(map[string]any); ok {
			for name := range p {
				props[name] = true
			}
		}
		v[s.Name] = props
	}
	return v
}

// toolName returns name when the tool is known, else its summary.
func (v vocabulary) toolName(name *string) *string {
	if _, ok := v[*name]; ok {
		return name
	}
	return ptr(trace.Summary(*name))
}

// argumentKeys returns the keys of the arguments of a call of tool, sorted,
// each verbatim when the tool's input schema names it and else as its
// summary.
func (v vocabulary) argumentKeys(tool string, args map[string]any) []string {
	props := v[tool]
	keys := make([]string, 0, len(args))
	for k := range args {
		if !props[k] {
			k = trace.Summary(k)
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// traceCallID returns a call id as the trace records it: nil for none, the
// id itself when it is a plain id (letters, digits, _ and -, as providers
// make them) without a credential's shape, else its summary. A model may
// write anything in a call id.
func traceCallID(id *string) *string {
	if id == nil || verbatimID(*id) {
		return id
	}
	return ptr(trace.Summary(*id))
}

// verbatimID reports whether the trace records call id verbatim.
func verbatimID(id string) bool {
	return ident.Plain(id) && !secretshape.Looks(id)
}

// MaxMessageBytes is the most bytes of a feedback or error message the
// loop passes on: invalid-output feedback, the content of an error
// Observation, and a run's error. A longer message (one naming a 20 KB
// argument key, say) is cut, on a character boundary, and says so.
const MaxMessageBytes = 1 << 10

// MaxCheckOutputBytes is the most bytes of a failing completion check's
// output that the finish_rejected feedback quotes: its end, since that is
// where test failures are summarized.
const MaxCheckOutputBytes = 4 << 10

// ClipMessage returns msg when it is at most MaxMessageBytes long, else
// its beginning followed by a note saying how long it was, MaxMessageBytes
// in all.
func ClipMessage(msg string) string {
	if len(msg) <= MaxMessageBytes {
		return msg
	}
	note := " … [message clipped: " + strconv.Itoa(len(msg)) + " bytes in all]"
	return textclip.Head(msg, MaxMessageBytes-len(note)) + note
}

// clipTail returns the last MaxCheckOutputBytes of out, saying so when
// it cut.
func clipTail(out string) string {
	if len(out) <= MaxCheckOutputBytes {
		return out
	}
	note := "[output clipped: the last " + strconv.Itoa(MaxCheckOutputBytes) + " of " + strconv.Itoa(len(out)) + " bytes follow]\n"
	return note + textclip.Tail(out, MaxCheckOutputBytes-len(note))
}
