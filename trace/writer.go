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

	"github.com/specloop/specloop/gen"
)

// SyncPolicy says when a file-backed Writer calls fsync.
type SyncPolicy int

const (
	// SyncNone leaves flushing to the operating system. Each step is still
	// written (a write system call) before the run moves on, so a crash of
	// the process loses at most the step in flight.
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

// Writer appends events as JSON lines, a step's in one write of complete
// lines (see Emit); nothing is ever rewritten. It is safe for concurrent
// use.
type Writer struct {
	mu     sync.Mutex
	w      io.Writer
	file   *os.File
	policy SyncPolicy // SyncNone when file is not a regular file
	err    error
	// held are the lines of the step in flight not written yet (enc
	// writes to it), and unanswered the step's actions that no
	// observation answered yet.
	held       bytes.Buffer
	enc        *json.Encoder
	unanswered int
}

// NewWriter writes events to w. Sync policies apply only when w is an
// *os.File.
func NewWriter(w io.Writer, policy SyncPolicy) *Writer {
	tw := &Writer{w: w, policy: policy}
	tw.enc = json.NewEncoder(&tw.held)
	tw.enc.SetEscapeHTML(false) // summaries and raw text stay readable
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

// Emit appends one event as a line. A step's actions and the
// observations of its calls are written together, with the last
// observation: one write a step rather than one an event, as the
// transcript does. Any other event (feedback, an approval, the end) is
// written at once with what is held, and under SyncEveryEvent every event
// is; a write holds complete lines only, so a crash loses at most the step
// in flight. After a write error every later Emit returns that error.
func (w *Writer) Emit(ev *gen.TraceEvent) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	// Encode ends the line with a newline, and writes nothing when it fails.
	if err := w.enc.Encode(ev); err != nil {
		return fmt.Errorf("trace: encode %s event: %w", ev.EventType, err)
	}
	if w.policy != SyncEveryEvent {
		switch ev.EventType {
		case gen.TraceEventTypeModelAction:
			w.unanswered++
			return nil
		case gen.TraceEventTypeObservation:
			if w.unanswered--; w.unanswered > 0 {
				return nil
			}
		}
	}
	w.unanswered = 0
	return w.flush(w.policy == SyncEveryEvent || w.policy == SyncAtRunEnd && ev.EventType == gen.TraceEventTypeRunFinished)
}

// flush writes the held lines in one write, and syncs the file when sync
// is set.
func (w *Writer) flush(sync bool) error {
	if w.held.Len() > 0 {
		_, err := w.w.Write(w.held.Bytes())
		w.held.Reset()
		if w.held.Cap() > 64<<10 { // a large event (a raw response) is not kept alive
			w.held = bytes.Buffer{}
		}
		if err != nil {
			w.err = fmt.Errorf("trace: write: %w", err)
			return w.err
		}
	}
	if sync && w.file != nil {
		if err := w.file.Sync(); err != nil {
			w.err = fmt.Errorf("trace: sync: %w", err)
			return w.err
		}
	}
	return nil
}

// Close writes what is held, syncs (unless the policy is SyncNone) and
// closes the underlying file if the Writer opened it or was given one; it
// returns the first failed write, if any.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.flush(false)
	}
	if w.file == nil {
		return w.err
	}
	errs := []error{w.err}
	if w.policy != SyncNone {
		errs = append(errs, w.file.Sync())
	}
	errs = append(errs, w.file.Close())
	w.file = nil
	return errors.Join(errs...)
}
