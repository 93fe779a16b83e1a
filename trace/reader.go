package trace

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

// MaxLineBytes is the longest trace line Read accepts.
const MaxLineBytes = 16 << 20

// Log is a trace as read from a file.
type Log struct {
	// Events are the complete, valid events in file order.
	Events []gen.TraceEvent
	// Torn is set when the last line was cut short (a crash mid-write); the
	// events before it are intact.
	Torn *TornLine
}

// TornLine describes an incomplete last line.
type TornLine struct {
	Line  int // 1-based line number
	Bytes int // bytes in the partial line
}

// LineError is a complete line that is not a valid record (a TraceEvent,
// for Read).
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// LineSchema checks lines against one of the spec's schemas, compiled on
// first use.
type LineSchema struct {
	validator func() (*schema.Validator, error)
}

// NewLineSchema checks lines against the spec's schema name.
func NewLineSchema(name string) *LineSchema {
	return &LineSchema{validator: sync.OnceValues(func() (*schema.Validator, error) {
		doc, err := gen.SpecDoc()
		if err != nil {
			return nil, err
		}
		return schema.Compile(doc.Schemas[name], schema.Neither)
	})}
}

// Parse decodes one line into v after validating it against the schema.
// Errors name the field, never its value.
func (s *LineSchema) Parse(line []byte, v any) error {
	val, err := s.validator()
	if err != nil {
		return err
	}
	value, err := schema.Decode(line)
	if err != nil {
		return err
	}
	if err := val.Validate(value); err != nil {
		return err
	}
	return schema.Unmarshal(line, v)
}

var eventSchema = NewLineSchema("TraceEvent")

// ParseEvent decodes one trace line and validates it against the spec's
// TraceEvent schema. Errors name the field, never its value.
func ParseEvent(line []byte) (gen.TraceEvent, error) {
	var ev gen.TraceEvent
	err := eventSchema.Parse(line, &ev)
	return ev, err
}

// Read reads a JSONL trace. A last line that is not newline-terminated and
// does not parse is reported in Log.Torn, not as an error; any other invalid
// line is a *LineError (with the events before it in the returned Log).
func Read(r io.Reader) (*Log, error) {
	log := &Log{}
	torn, err := ReadLines(r, func(line []byte) error {
		ev, err := ParseEvent(line)
		if err == nil {
			log.Events = append(log.Events, ev)
		}
		return err
	})
	log.Torn = torn
	return log, err
}

// ReadLines reads JSON lines, as Read does for a trace and package
// transcript for a transcript: parse gets each line that is not blank, up
// to MaxLineBytes, without its line end. A last line that is not
// newline-terminated and that parse refuses is torn (a crash mid-write):
// it is returned, not an error; any other line parse refuses stops the
// reading with a *LineError.
func ReadLines(r io.Reader, parse func(line []byte) error) (*TornLine, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxLineBytes)
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			return i + 1, data[:i+1], nil // the line end stays: it says the line is complete
		}
		if atEOF && len(data) > 0 {
			return len(data), data, nil
		}
		return 0, nil, nil
	})
	n := 1
	for ; sc.Scan(); n++ {
		line := sc.Bytes()
		if body := bytes.TrimSpace(line); len(body) > 0 {
			if err := parse(body); err != nil {
				if line[len(line)-1] != '\n' {
					return &TornLine{Line: n, Bytes: len(line)}, nil
				}
				return nil, &LineError{Line: n, Err: err}
			}
		}
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return nil, &LineError{Line: n, Err: fmt.Errorf("longer than %d bytes", MaxLineBytes)}
	} else if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	return nil, nil
}
