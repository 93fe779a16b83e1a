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
	line, err := encodeEntry(&enc, red, e, seq)
	return bytes.Clone(line), err
}

// encodeEntry is EncodeEntry with enc's buffer: the line is valid until
// enc's next use.
func encodeEntry(enc *trace.LineEncoder, red *Redactor, e gen.TranscriptEntry, seq int) ([]byte, error) {
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
	raw, err := enc.Encode(&e)
	if err != nil {
		return nil, fmt.Errorf("transcript: encode entry: %w", err)
	}
	line, n := red.Line(raw[:len(raw)-1]) // without its newline
	if n > 0 {
		line = append(append(line[:len(line)-1], `,"redacted":`...), strconv.Itoa(n)+"}"...)
	}
	return line, nil
}
