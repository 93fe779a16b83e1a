package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/trace"
)

// liveEvents holds an in-flight run's events, in trace order and already
// encoded, for the streams that follow it. Once done it never changes, so a
// stream that holds it can finish from it after the run dropped it.
type liveEvents struct {
	mu    sync.Mutex
	data  [][]byte // each event's JSON
	types []gen.TraceEventType
	done  bool
	wake  chan struct{} // closed at the next change; nil when nobody waits
}

// publish appends ev, encoding it; last marks the end of the run.
func (l *liveEvents) publish(ev *gen.TraceEvent, last bool) error {
	data, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	l.publishJSON(ev.EventType, data, last)
	return nil
}

// publishJSON appends an event already encoded; the data must not change.
func (l *liveEvents) publishJSON(typ gen.TraceEventType, data []byte, last bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return
	}
	l.data = append(l.data, data)
	l.types = append(l.types, typ)
	l.done = last
	if l.wake != nil {
		close(l.wake)
		l.wake = nil
	}
}

// size is the number of bytes of the events' JSON.
func (l *liveEvents) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, d := range l.data {
		n += len(d)
	}
	return n
}

// since appends the events after position pos (1-based positions) to buf
// as Server-Sent Events and returns the new position, whether the run has
// ended, and a channel that is closed at the next change.
func (l *liveEvents) since(buf []byte, pos int) ([]byte, int, bool, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for ; pos < len(l.data); pos++ {
		buf = appendSSE(buf, pos+1, l.types[pos], l.data[pos])
	}
	if l.done {
		return buf, pos, true, nil
	}
	if l.wake == nil {
		l.wake = make(chan struct{})
	}
	return buf, pos, false, l.wake
}

// recentRuns keeps the events of the last runs that finished, so that the
// streams that follow a run's end (a client waiting for its result) are
// served from memory; older runs are read from their trace files.
type recentRuns struct {
	mu   sync.Mutex
	byID map[string]*liveEvents
	ring []string
	next int
}

func newRecentRuns(n int) *recentRuns {
	return &recentRuns{byID: make(map[string]*liveEvents, n), ring: make([]string, n)}
}

// recentRunMaxBytes bounds the events of a run kept in memory after it
// finished; longer runs are streamed from their trace files.
const recentRunMaxBytes = 16 << 10

func (c *recentRuns) add(id string, l *liveEvents) {
	if len(c.ring) == 0 || l.size() > recentRunMaxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.ring[c.next]; old != "" {
		delete(c.byID, old)
	}
	c.ring[c.next] = id
	c.byID[id] = l
	c.next = (c.next + 1) % len(c.ring)
}

func (c *recentRuns) get(id string) *liveEvents {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byID[id]
}

// traceFile is a run's trace file as the destination of its trace.Writer.
// It keeps a copy of the line last written, so that the run's observer
// hands the event to live streams without encoding it a second time, and
// it applies the sync policy itself (trace.Writer syncs only when it
// writes to an *os.File directly).
type traceFile struct {
	f      *os.File
	policy trace.SyncPolicy
	last   []byte // the last line, without its newline
}

func (t *traceFile) Write(p []byte) (int, error) {
	n, err := t.f.Write(p)
	if err != nil {
		return n, err
	}
	t.last = bytes.Clone(bytes.TrimSuffix(p, []byte("\n")))
	if t.policy == trace.SyncEveryEvent {
		err = t.f.Sync()
	}
	return n, err
}

// ended syncs the file after run_finished under SyncAtRunEnd.
func (t *traceFile) ended() error {
	if t.policy == trace.SyncAtRunEnd {
		return t.f.Sync()
	}
	return nil
}

func (t *traceFile) Close() error { return t.f.Close() }

// stream writes the run's events after position after to pw as
// Server-Sent Events, live while the run is in flight, and closes pw after
// run_finished. It stops when ctx is done or the reader goes away.
func (s *Runner) stream(ctx context.Context, id string, after int, pw *io.PipeWriter) {
	err := s.streamEvents(ctx, id, after, pw)
	if errors.Is(err, io.ErrClosedPipe) || ctx.Err() != nil {
		err = nil // the client went away
	}
	if err != nil {
		s.log.Error("event stream failed", "run", id, "err", err)
	}
	pw.CloseWithError(err)
}

func (s *Runner) streamEvents(ctx context.Context, id string, after int, pw *io.PipeWriter) error {
	s.runs.mu.RLock()
	r := s.runs.byID[id]
	if r == nil {
		s.runs.mu.RUnlock()
		return nil
	}
	var live *liveEvents
	var final gen.Run
	if r.job != nil {
		live = r.job.events
	} else {
		final = r.view()
	}
	s.runs.mu.RUnlock()
	if live == nil {
		if live = s.recent.get(id); live == nil {
			return s.streamFile(id, final, after, pw)
		}
	}
	var buf []byte
	pos := after
	keepAlive := time.NewTicker(keepAliveEvery)
	defer keepAlive.Stop()
	for {
		var done bool
		var wake <-chan struct{}
		buf, pos, done, wake = live.since(buf[:0], pos)
		if len(buf) > 0 {
			if _, err := pw.Write(buf); err != nil {
				return err
			}
		}
		if done {
			return nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return nil
		case <-keepAlive.C:
			// A comment line keeps proxies from closing an idle stream
			// (a queued run may wait long); clients ignore it.
			if _, err := pw.Write([]byte(":\n\n")); err != nil {
				return err
			}
		}
	}
}

// keepAliveEvery is how often an idle event stream gets a comment line.
const keepAliveEvery = 15 * time.Second

// streamFile sends a finished run's events from its trace file. A trace
// that lacks run_finished (its last write failed) gets one built from the
// run's record, so every stream ends the same way.
func (s *Runner) streamFile(id string, final gen.Run, after int, pw *io.PipeWriter) error {
	evs, err := readTrace(s.store.tracePath(id))
	if err != nil {
		return err
	}
	if n := len(evs); n == 0 || evs[n-1].EventType != gen.TraceEventTypeRunFinished {
		if final.Result != nil {
			evs = append(evs, finishedEvent(id, deref(final.FinishedAt), final.Result))
		}
	}
	// Encoded as trace.Writer encodes, so the data is the trace's line.
	var line bytes.Buffer
	enc := json.NewEncoder(&line)
	enc.SetEscapeHTML(false)
	var buf []byte
	for i := after; i < len(evs); i++ {
		line.Reset()
		if err := enc.Encode(&evs[i]); err != nil {
			return err
		}
		buf = appendSSE(buf, i+1, evs[i].EventType, bytes.TrimSuffix(line.Bytes(), []byte("\n")))
	}
	_, err = pw.Write(buf)
	return err
}

// readTrace reads a trace file's valid events; a missing file has none. A
// torn last line is left out (trace.Read's contract), as are the lines from
// the first invalid one on.
func readTrace(path string) ([]gen.TraceEvent, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	log, err := trace.Read(f)
	var le *trace.LineError
	if err != nil && !errors.As(err, &le) {
		return nil, err
	}
	return log.Events, nil
}

// finishedEvent builds the run_finished event at time at from a result.
func finishedEvent(id string, at time.Time, res *gen.RunResult) gen.TraceEvent {
	ev := gen.TraceEvent{RunId: id, Step: res.StepsUsed, EventType: gen.TraceEventTypeRunFinished, Time: at}
	reason := res.ExitReason
	steps := res.StepsUsed
	ev.ExitReason = &reason
	ev.StepsUsed = &steps
	ev.Error = res.Error
	ev.Usage = res.Usage
	return ev
}

// appendSSE appends one event in the text/event-stream format: its position
// as the id, its type as the event name and the TraceEvent's JSON as data.
func appendSSE(buf []byte, pos int, typ gen.TraceEventType, data []byte) []byte {
	buf = append(buf, "id: "...)
	buf = strconv.AppendInt(buf, int64(pos), 10)
	buf = append(buf, "\nevent: "...)
	buf = append(buf, typ...)
	buf = append(buf, "\ndata: "...)
	buf = append(buf, data...)
	return append(buf, "\n\n"...)
}
