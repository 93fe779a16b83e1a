package transcript

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/trace"
)

// DefaultMaxOutputBytes is how much of a tool's output an entry keeps
// (TranscriptEntry.output).
const DefaultMaxOutputBytes = 1 << 20

// FileName is a transcript's file in a run's directory.
const FileName = "transcript.jsonl"

// Writer appends the entries of one run's transcript to its file, each
// redacted and written as one complete line. It is safe for concurrent
// use.
type Writer struct {
	mu  sync.Mutex
	tw  *trace.Writer // the file's lines, written and synced as its policy says
	enc trace.LineEncoder
	red *Redactor
	seq int
	// entry is the entry being encoded.
	entry gen.TranscriptEntry
	err   error
	// held are the lines of the step in flight not written yet, and
	// unanswered the step's actions that no observation answered yet.
	held       []byte
	unanswered int
}

// Open opens the transcript file path to append to it, creating it (0600)
// and its directory (0700) when they do not exist. An existing transcript
// goes on with the next seq (a continued or resumed run), after its torn
// last line is cut (the next entry would join it). Entries are redacted with
// red; policy says when the file is fsynced (trace.SyncAtRunEnd: after
// run_finished).
func Open(path string, red *Redactor, policy trace.SyncPolicy) (*Writer, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("transcript: %w", err)
	}
	seq := 0
	newline := false // the last entry lacks its newline
	if data, err := os.ReadFile(path); err == nil {
		log, rerr := Read(bytes.NewReader(data))
		if rerr != nil {
			return nil, fmt.Errorf("transcript: %s: %w", path, rerr)
		}
		seq = len(log.Entries)
		if log.Torn > 0 {
			if err := CutLines(path, data, seq); err != nil {
				return nil, fmt.Errorf("transcript: %w", err)
			}
		} else {
			newline = len(data) > 0 && data[len(data)-1] != '\n'
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("transcript: %w", err)
	}
	w, err := OpenAfter(path, red, policy, seq)
	if err == nil && newline {
		if err = w.tw.WriteLines([]byte("\n"), false); err != nil {
			w.tw.Close()
			return nil, fmt.Errorf("transcript: %w", err)
		}
	}
	return w, err
}

// OpenAfter is Open for a transcript the caller knows holds seq whole
// entries and nothing after them (package temporal, which has just cut and
// counted its lines): it does not read the file. Its directory must exist.
func OpenAfter(path string, red *Redactor, policy trace.SyncPolicy, seq int) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("transcript: %w", err)
	}
	if err := f.Chmod(0o600); err != nil { // a file made by someone else's umask
		f.Close()
		return nil, fmt.Errorf("transcript: %w", err)
	}
	return &Writer{tw: trace.NewWriter(f, policy), red: red, seq: seq}, nil
}

// Write numbers e (seq), stamps its time when it has none, cuts its output
// at DefaultMaxOutputBytes, redacts it and appends it. After the first failed
// write every Write returns that error.
func (w *Writer) Write(e gen.TranscriptEntry) error { return w.write(e, nil) }

// writeCall is Write of e with the tool call as its action (a
// callWriter's).
func (w *Writer) writeCall(e gen.TranscriptEntry, call *gen.ToolCall) error {
	return w.write(e, call)
}

func (w *Writer) write(e gen.TranscriptEntry, call *gen.ToolCall) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	w.entry = e // encoded from the writer's own copy, which is not allocated each time
	line, err := encodeEntry(&w.enc, w.red, &w.entry, call, w.seq+1)
	w.entry = gen.TranscriptEntry{} // holding nothing of e's
	if err != nil {
		return err
	}
	w.held = append(append(w.held, line...), '\n')
	w.seq++
	// A step's actions and the observations of its calls are written
	// together, with the last observation: one write a step rather than
	// one an entry. Any other entry (feedback, an approval, the check's
	// verdict, the end) is written at once with what is held, so a
	// finished step is on disk before the next model call, and a crash
	// loses at most the step in flight.
	switch e.EventType {
	case gen.TraceEventTypeModelAction:
		w.unanswered++
		return nil
	case gen.TraceEventTypeObservation:
		if w.unanswered--; w.unanswered > 0 {
			return nil
		}
	}
	w.unanswered = 0
	return w.flush(e.EventType == gen.TraceEventTypeRunFinished)
}

// flush writes the held lines; runEnd says they end the run, for the
// sync policy.
func (w *Writer) flush(runEnd bool) error {
	err := w.tw.WriteLines(w.held, runEnd)
	w.held = w.held[:0]
	if err != nil {
		w.err = fmt.Errorf("transcript: %w", err)
	}
	return w.err
}

// Close writes what is held, syncs as the policy says and closes the
// file; it returns the first failed write, if any.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.flush(false)
	}
	return errors.Join(w.err, w.tw.Close())
}
