package runner

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/trace"
)

// The data directory:
//
//	DATA/runs.jsonl          the run log: one "created" line per accepted run
//	                         (fsynced before the 202) and one "finished" line
//	                         per ended run (fsynced when it ends)
//	DATA/traces/ID.jsonl     each run's trace, exactly as a local run writes it
//	DATA/transcripts/ID.jsonl  each run's transcript (unless its request said
//	                         transcript false), and ID.request.json beside it:
//	                         the run as accepted (its Spec, but for a
//	                         follow-up's history and conversation), for a
//	                         resume or a follow-up
//
// A "created" line is fsynced before the run is acknowledged; fsyncs are
// shared by every line written meanwhile (group commit), so durability costs
// one fsync per batch, not one per run. A "finished" line is written at once
// (it survives a crash of the process) and fsynced within lazySync, or by
// the next create, or at shutdown; should a power loss take it, the run's
// trace still ends with run_finished and New recovers the result from it.
const (
	logName   = "runs.jsonl"
	tracesDir = "traces"
	// transcriptsDir holds each run's transcript (package transcript).
	transcriptsDir = "transcripts"
)

// entry is one line of the run log. The task appears only as its trace
// summary, but a finished run's result is kept whole (its answer, patch,
// error and check output tail), because GET /v1/runs/{id} returns it after
// a restart: the run log is NOT as privacy-safe as a trace, which is why
// the data directory and its files are private to the server's user.
type entry struct {
	Op        string     `json:"op"` // opCreated or opFinished
	ID        string     `json:"id"`
	Time      time.Time  `json:"time"` // created_at or finished_at
	Workspace string     `json:"workspace,omitempty"`
	Task      string     `json:"task,omitempty"`      // the prompt's summary
	TaskLine  string     `json:"task_line,omitempty"` // Run.task_line, when the run keeps a transcript
	MaxSteps  int        `json:"max_steps,omitempty"`
	Started   *time.Time `json:"started_at,omitempty"`
	// Continues and Conversation: the run a created run continues and
	// its conversation's first run.
	Continues    string         `json:"continues,omitempty"`
	Conversation string         `json:"conversation,omitempty"`
	Result       *gen.RunResult `json:"result,omitempty"`
}

const (
	opCreated  = "created"
	opFinished = "finished"
)

// store appends entries to the run log. Writers write under a mutex; a
// writer that needs its line durable then fsyncs, one at a time: one
// fsync covers every line written before it started, so the writers that
// waited for it find their lines synced (group commit). A line written
// without waiting is fsynced by a timer within lazySync.
type store struct {
	dir      string
	file     *os.File
	createMu sync.Mutex // serializes trace file creation

	mu      sync.Mutex  // guards the fields below and writes to file
	written int64       // lines written
	err     error       // the first write or sync error; the log is then read-only
	closed  bool        // no more lines
	lazy    *time.Timer // the pending sync of lines written without waiting

	syncMu sync.Mutex // held while fsyncing; guards synced
	synced int64      // lines known to be on disk
	done   bool       // the file is closed
}

// errStoreClosed is returned by append after close.
var errStoreClosed = errors.New("the run log is closed")

// lazySync bounds how long a line written without waiting stays unsynced.
const lazySync = 200 * time.Millisecond

// openStore opens (creating) the data directory and its run log, and
// returns the entries already in it. A torn last line (a crash mid-write)
// is cut off; it belonged to a request that was never acknowledged.
func openStore(dir string) (*store, []entry, []error, error) {
	if err := os.MkdirAll(filepath.Join(dir, tracesDir), 0o700); err != nil {
		return nil, nil, nil, fmt.Errorf("data directory: %w", err)
	}
	// The data directory holds run results verbatim: it is the server's
	// user's alone, even when it existed with wider permissions.
	for _, d := range []string{dir, filepath.Join(dir, tracesDir)} {
		if err := os.Chmod(d, 0o700); err != nil {
			return nil, nil, nil, fmt.Errorf("data directory: %w", err)
		}
	}
	path := filepath.Join(dir, logName)
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("run log: %w", err)
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return nil, nil, nil, fmt.Errorf("run log: %w", err)
	}
	if errors.Is(statErr, os.ErrNotExist) {
		// A new file is durable only once its directory entry is.
		if err := errors.Join(syncDir(dir), syncDir(filepath.Join(dir, tracesDir))); err != nil {
			f.Close()
			return nil, nil, nil, err
		}
	}
	entries, good, bad, err := readLog(f)
	if err == nil {
		err = f.Truncate(good)
	}
	if err == nil {
		_, err = f.Seek(good, io.SeekStart)
	}
	if err != nil {
		f.Close()
		return nil, nil, nil, fmt.Errorf("run log: %w", err)
	}
	st := &store{dir: dir, file: f}
	return st, entries, bad, nil
}

// readLog reads every complete line; good is the offset after the last
// complete line. Lines that do not parse are reported and skipped.
func readLog(r io.Reader) (entries []entry, good int64, bad []error, err error) {
	br := bufio.NewReaderSize(r, 256<<10)
	var off int64
	for n := 1; ; n++ {
		line, rerr := br.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			off += int64(len(line))
			good = off
			var e entry
			if body := bytes.TrimSpace(line); len(body) > 0 {
				if jerr := json.Unmarshal(body, &e); jerr != nil || e.ID == "" || (e.Op != opCreated && e.Op != opFinished) {
					bad = append(bad, fmt.Errorf("run log line %d is not a run entry", n))
				} else {
					entries = append(entries, e)
				}
			}
		}
		if rerr == io.EOF {
			return entries, good, bad, nil
		}
		if rerr != nil {
			return nil, 0, nil, rerr
		}
	}
}

// jsonLine encodes e as one line of the run log.
func jsonLine(e *entry) ([]byte, error) {
	b, err := json.Marshal(e)
	return append(b, '\n'), err
}

// append writes lines to the run log; with durable set it returns only
// once they are on disk. Without it they are written at once (so they
// survive a crash of the process) and fsynced within lazySync.
func (st *store) append(lines []byte, durable bool) error {
	st.mu.Lock()
	err := st.err
	if st.closed {
		err = errStoreClosed
	}
	if err == nil {
		if _, werr := st.file.Write(lines); werr != nil {
			st.err = fmt.Errorf("run log: %w", werr)
			err = st.err
		}
	}
	if err != nil {
		st.mu.Unlock()
		return err
	}
	st.written++
	seq := st.written
	if !durable && st.lazy == nil {
		st.lazy = time.AfterFunc(lazySync, func() {
			st.mu.Lock()
			st.lazy = nil
			st.mu.Unlock()
			_ = st.sync(seq) // a durable write reports the error
		})
	}
	st.mu.Unlock()
	if !durable {
		return nil
	}
	return st.sync(seq)
}

// sync returns once line seq is on disk, fsyncing every line written so
// far unless an fsync since seq was written did.
func (st *store) sync(seq int64) error {
	st.syncMu.Lock()
	defer st.syncMu.Unlock()
	st.mu.Lock()
	target := st.written
	st.mu.Unlock()
	if st.synced < seq && !st.done {
		err := st.file.Sync()
		st.mu.Lock()
		if err != nil && st.err == nil {
			st.err = fmt.Errorf("run log: sync: %w", err)
		}
		st.mu.Unlock()
		st.synced = target
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.err
}

// close syncs every written line and closes the log.
func (st *store) close() error {
	st.mu.Lock()
	if st.closed {
		st.mu.Unlock()
		return nil
	}
	st.closed = true
	seq := st.written
	st.mu.Unlock()
	err := st.sync(seq)
	st.syncMu.Lock()
	defer st.syncMu.Unlock()
	st.done = true
	return errors.Join(err, st.file.Close())
}

// transcriptPath is where run id's transcript is (made 0600 in a 0700
// directory when the run starts).
func (st *store) transcriptPath(id string) string {
	return filepath.Join(st.dir, transcriptsDir, id+".jsonl")
}

// tracePath is where run id's trace is.
func (st *store) tracePath(id string) string {
	return filepath.Join(st.dir, tracesDir, id+".jsonl")
}

// createTrace creates run id's trace file (mode 0600, appending, like
// trace.Create), and its directory when it is missing.
func (st *store) createTrace(id string, policy trace.SyncPolicy) (*traceFile, error) {
	path := st.tracePath(id)
	open := func() (*os.File, error) {
		// Creating files in one directory serializes in the kernel on the
		// directory's lock; waiting here parks the goroutines instead.
		st.createMu.Lock()
		defer st.createMu.Unlock()
		return os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	}
	f, err := open()
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("trace: %w", err)
		}
		f, err = open()
	}
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	return &traceFile{f: f, policy: policy}, nil
}

// syncDir fsyncs a directory, making the entries created in it durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", filepath.Base(dir), err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", filepath.Base(dir), err)
	}
	return nil
}
