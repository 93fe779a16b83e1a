package transcript

import (
	"bytes"
	"fmt"
	"strconv"
	"time"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/textclip"
	"github.com/specloop/specloop/trace"
)

// EncodeEntry is the line (without its newline) a Writer writes for e as
// entry seq: numbered, stamped with the time when it has none, its output
// cut at DefaultMaxOutputBytes, redacted by red with the count of what was
// redacted as its last field. Package temporal appends such lines to its
// run store.
func EncodeEntry(red *Redactor, e gen.TranscriptEntry, seq int) ([]byte, error) {
	var enc trace.LineEncoder
	line, err := encodeEntry(&enc, red, &e, nil, seq)
	return bytes.Clone(line), err
}

// callEntry is an entry whose action is the tool call Action: encoded as
// the entry with its action, the call (the union's wire form is the
// call's own, its type set), without the union's copy of the call's
// encoding, which encoding/json would check and copy once more. Action
// comes first, where the entry's own action is (encoding/json writes an
// embedded struct's fields in the place of the struct).
type callEntry struct {
	Action *gen.ToolCall `json:"action"`
	*gen.TranscriptEntry
}

// encodeEntry is EncodeEntry, of e changed in place, with enc's buffer:
// the line is valid until enc's next use. A call, if not nil, is e's
// action; when it does not encode (a Go caller's arguments), the action is
// null.
func encodeEntry(enc *trace.LineEncoder, red *Redactor, e *gen.TranscriptEntry, call *gen.ToolCall, seq int) ([]byte, error) {
	e.Seq = seq
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	e.Redacted = nil // counted here
	if e.Output != nil && len(*e.Output) > DefaultMaxOutputBytes {
		cut := textclip.Head(*e.Output, DefaultMaxOutputBytes)
		rest := len(*e.Output) - len(cut)
		e.Output, e.OutputTruncatedBytes = &cut, &rest
	}
	var raw []byte
	var err error
	if call != nil {
		e.Action = nil // the call is the action
		if raw, err = enc.Encode(&callEntry{Action: call, TranscriptEntry: e}); err != nil {
			e.Action = &gen.Action{} // null
		}
	}
	if call == nil || err != nil {
		raw, err = enc.Encode(e)
	}
	if err != nil {
		return nil, fmt.Errorf("transcript: encode entry: %w", err)
	}
	line, n := red.Line(raw[:len(raw)-1]) // without its newline
	if n > 0 {
		line = append(append(line[:len(line)-1], `,"redacted":`...), strconv.Itoa(n)+"}"...)
	}
	return line, nil
}
