package transcript

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/schema"
)

// MaxLineBytes bounds one line of a transcript that Read accepts: an
// entry's output is cut at the Writer's MaxOutputBytes, far below it.
const MaxLineBytes = 16 << 20

// Log is a transcript as read: its entries, and the torn last line a crash
// left, if any.
type Log struct {
	Entries []gen.TranscriptEntry
	// Torn is the line number of a last line that was not newline
	// terminated and did not parse (a write cut short); 0 for none.
	Torn int
}

// LineError is a line of a transcript that is not a valid entry.
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("transcript line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

var entryValidator = sync.OnceValues(func() (*schema.Validator, error) {
	doc, err := gen.SpecDoc()
	if err != nil {
		return nil, err
	}
	return schema.Compile(doc.Schemas["TranscriptEntry"], schema.Neither)
})

// ParseEntry decodes one line and validates it against the spec's
// TranscriptEntry schema. Errors name the field, never its value.
func ParseEntry(line []byte) (gen.TranscriptEntry, error) {
	var e gen.TranscriptEntry
	v, err := entryValidator()
	if err != nil {
		return e, err
	}
	value, err := schema.Decode(line)
	if err != nil {
		return e, err
	}
	if err := v.Validate(value); err != nil {
		return e, err
	}
	return e, schema.Unmarshal(line, &e)
}

// Read reads a transcript. A last line that is not newline terminated and
// does not parse is reported in Log.Torn; any other invalid line, or
// entries out of sequence, is a *LineError, with the entries before it in
// the Log.
func Read(r io.Reader) (*Log, error) {
	log := &Log{}
	br := bufio.NewReaderSize(r, 64<<10)
	for n := 1; ; n++ {
		line, err := readLine(br)
		if err != nil && !errors.Is(err, io.EOF) {
			return log, &LineError{Line: n, Err: err}
		}
		complete := bytes.HasSuffix(line, []byte("\n"))
		if body := bytes.TrimSpace(line); len(body) > 0 {
			e, perr := ParseEntry(body)
			switch {
			case perr == nil && e.Seq != len(log.Entries)+1:
				return log, &LineError{Line: n, Err: fmt.Errorf("seq is %d, want %d", e.Seq, len(log.Entries)+1)}
			case perr == nil:
				log.Entries = append(log.Entries, e)
			case !complete:
				log.Torn = n
			default:
				return log, &LineError{Line: n, Err: perr}
			}
		}
		if err != nil { // io.EOF
			return log, nil
		}
	}
}

// readLine reads one line with its newline (none at the end of the input),
// at most MaxLineBytes of it.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > MaxLineBytes {
			return nil, fmt.Errorf("longer than %d bytes", MaxLineBytes)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}
