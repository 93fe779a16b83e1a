package transcript

import (
	"fmt"
	"io"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/trace"
)

// Log is a transcript as read: its entries, and the torn last line a crash
// left, if any.
type Log struct {
	Entries []gen.TranscriptEntry
	// Torn is the line number of a last line that was not newline
	// terminated and did not parse (a write cut short); 0 for none.
	Torn int
}

var entrySchema = trace.NewLineSchema("TranscriptEntry")

// ParseEntry decodes one line and validates it against the spec's
// TranscriptEntry schema. Errors name the field, never its value.
func ParseEntry(line []byte) (gen.TranscriptEntry, error) {
	var e gen.TranscriptEntry
	err := entrySchema.Parse(line, &e)
	return e, err
}

// Read reads a transcript. A last line that is not newline terminated and
// does not parse is reported in Log.Torn; any other invalid line, or
// entries out of sequence, is a *trace.LineError, with the entries before
// it in the Log.
func Read(r io.Reader) (*Log, error) {
	log := &Log{}
	torn, err := trace.ReadLines(r, func(line []byte) error {
		e, err := ParseEntry(line)
		switch {
		case err != nil:
			return err
		case e.Seq != len(log.Entries)+1:
			return fmt.Errorf("seq is %d, want %d", e.Seq, len(log.Entries)+1)
		}
		log.Entries = append(log.Entries, e)
		return nil
	})
	if torn != nil {
		log.Torn = torn.Line
	}
	if err != nil {
		return log, fmt.Errorf("transcript: %w", err)
	}
	return log, nil
}
