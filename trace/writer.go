package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/specloop/specloop/gen"
)

// SyncPolicy says when a file-backed Writer calls fsync.
type SyncPolicy int

const (
	// SyncNone leaves flushing to the operating system. Each event is still
	// written (a write system call) before the run moves on, so a crash of
	// the process loses at most the event being written.
	SyncNone SyncPolicy = iota
	// SyncAtRunEnd syncs once after run_finished.
	SyncAtRunEnd
	// SyncEveryEvent syncs after every event, surviving power loss too.
	SyncEveryEvent
)

// ParseSyncPolicy parses "none", "end" or "every".
func ParseSyncPolicy(s string) (SyncPolicy, error) {
	switch s {
	case "none", "":
		return SyncNone, nil
	case "end":
		return SyncAtRunEnd, nil
	case "every":
		return SyncEveryEvent, nil
	}
	return 0, fmt.Errorf("unknown sync policy %q (want none, end or every)", s)
}

// Writer appends events as JSON lines. Each Emit is one write of one
// complete line; nothing is ever rewritten. It is safe for concurrent use.
type Writer struct {
	mu     sync.Mutex
	w      io.Writer
	file   *os.File
	policy SyncPolicy // SyncNone when file is not a regular file
	err    error
	enc    LineEncoder
}

// NewWriter writes events to w. Sync policies apply only when w is an
// *os.File.
func NewWriter(w io.Writer, policy SyncPolicy) *Writer {
	tw := &Writer{w: w, policy: policy}
	if f, ok := w.(*os.File); ok {
		tw.file = f
		// fsync means nothing for a device or a pipe (/dev/null fails it
		// with EINVAL): only a regular file is synced.
		if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
			tw.policy = SyncNone
		}
	}
	return tw
}

// Create opens path for appending (creating it with mode 0600) and returns
// a Writer on it; Close closes the file. It refuses a regular file that
// already holds something other than a specloop trace, so a mistyped trace
// path never appends JSON lines to someone's source file: the first line
// of a non-empty file must be a trace event. Devices and pipes
// (/dev/stderr) are written as they are.
func Create(path string, policy SyncPolicy) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && st.Mode().IsRegular() && st.Size() > 0 {
		err = checkTraceFile(path)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return NewWriter(f, policy), nil
}

// checkTraceFile reports whether the first line of the file at path is a
// trace event.
func checkTraceFile(path string) error {
	r, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%s is not empty and cannot be read to check that it is a specloop trace: %w", path, err)
	}
	defer r.Close()
	line, err := bufio.NewReaderSize(r, 64<<10).ReadSlice('\n')
	if err != nil && err != io.EOF {
		line = nil // a read error, or a first line longer than any trace event
	}
	if len(line) == 0 {
		return fmt.Errorf("%s is not empty and is not a specloop trace: choose another file", path)
	}
	if _, err := ParseEvent(bytes.TrimRight(line, "\r\n")); err != nil {
		return fmt.Errorf("%s is not empty and is not a specloop trace (its first line is not a trace event): choose another file", path)
	}
	return nil
}

// LineEncoder encodes values as JSON lines, ended by a newline, with <,
// > and & as they are (summaries and raw text stay readable), into a
// buffer it reuses. The line is the one encoding/json writes (an Encoder
// with SetEscapeHTML(false)), byte for byte: it is encoded by
// go-json-experiment with encoding/json's semantics (its v1 options),
// which does without the reflection of every map entry and the time's
// allocation, and by encoding/json itself for a value go-json-experiment
// refuses, such as a string of invalid UTF-8, which encoding/json writes
// as \ufffd where go-json-experiment would write the character itself.
type LineEncoder struct {
	buf bytes.Buffer
	enc *json.Encoder // encoding/json, for what lineOptions refuse
}

// lineOptions are encoding/json's semantics, with <, > and & as they
// are and strings of invalid UTF-8 refused (see LineEncoder).
var lineOptions = jsonv2.JoinOptions(jsonv1.DefaultOptionsV1(), jsontext.EscapeForHTML(false), jsontext.AllowInvalidUTF8(false))

// Encode returns v as one line, valid until the next Encode.
func (e *LineEncoder) Encode(v any) ([]byte, error) {
	e.buf.Reset()
	if err := jsonv2.MarshalWrite(&e.buf, v, lineOptions); err == nil {
		e.buf.WriteByte('\n')
		return e.buf.Bytes(), nil
	}
	if e.enc == nil {
		e.enc = json.NewEncoder(&e.buf)
		e.enc.SetEscapeHTML(false)
	}
	e.buf.Reset()
	err := e.enc.Encode(v)
	return e.buf.Bytes(), err
}

// EncodeLine is v as one JSON line, as a LineEncoder writes it.
func EncodeLine(v any) ([]byte, error) {
	var e LineEncoder
	return e.Encode(v)
}

// Emit appends one event as a line. After a write error every later Emit
// returns that error.
func (w *Writer) Emit(ev *gen.TraceEvent) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	line, err := w.enc.Encode(ev)
	if err != nil {
		return fmt.Errorf("trace: encode %s event: %w", ev.EventType, err)
	}
	if err := w.writeLines(line, ev.EventType == gen.TraceEventTypeRunFinished); err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	return nil
}

// WriteLines appends complete lines in one write (a crash loses at most
// them) and syncs as the policy says: after every write, or after the
// one that ends the run (runEnd). After a failed write or sync every
// later call returns its error.
func (w *Writer) WriteLines(lines []byte, runEnd bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writeLines(lines, runEnd)
}

func (w *Writer) writeLines(lines []byte, runEnd bool) error {
	if w.err != nil {
		return w.err
	}
	if _, err := w.w.Write(lines); err != nil {
		w.err = fmt.Errorf("write: %w", err)
		return w.err
	}
	if w.file != nil && (w.policy == SyncEveryEvent || w.policy == SyncAtRunEnd && runEnd) {
		if err := w.file.Sync(); err != nil {
			w.err = fmt.Errorf("sync: %w", err)
			return w.err
		}
	}
	return nil
}

// Close syncs (unless the policy is SyncNone) and closes the underlying file
// if the Writer opened it or was given one.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.file == nil {
		return nil
	}
	var errs []error
	if w.policy != SyncNone {
		errs = append(errs, w.file.Sync())
	}
	errs = append(errs, w.file.Close())
	w.file = nil
	return errors.Join(errs...)
}
