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
	// The model's text of the step in flight as it streams (agent.Live),
	// for streams with content: text of step textStep, call textCall (a
	// number that grows with each new model call); dropped at the next
	// event, whose transcript entry holds the text whole.
	text     []byte
	textStep int
	textCall int
}

// streamed appends a piece of the model's text of step step.
func (l *liveEvents) streamed(step int, piece string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return
	}
	if l.text == nil || step != l.textStep {
		l.textCall++
		l.text, l.textStep = []byte{}, step
	}
	l.text = append(l.text, piece...)
	l.wakeUp()
}

func (l *liveEvents) wakeUp() {
	if l.wake != nil {
		close(l.wake)
		l.wake = nil
	}
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
	if l.text != nil { // the event ends the streamed text's call
		l.text = nil
		l.textCall++
	}
	l.wakeUp()
}

// since appends the events after position c.pos (1-based positions) to
// buf as Server-Sent Events and returns the new cursor, whether the run
// has ended, and a channel that is closed at the next change.
func (l *liveEvents) since(buf []byte, c cursor) ([]byte, cursor, bool, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for c.pos < len(l.data) {
		c.pos++
		buf = appendSSE(buf, c, string(l.types[c.pos-1]), l.data[c.pos-1])
	}
	if c.content && l.text != nil {
		if c.textCall != l.textCall {
			c.textCall, c.textSent = l.textCall, 0
		}
		if c.textSent < len(l.text) {
			buf = appendDelta(buf, l.textStep, l.text[c.textSent:])
			c.textSent = len(l.text)
		}
	}
	if l.done {
		return buf, c, true, nil
	}
	if l.wake == nil {
		l.wake = make(chan struct{})
	}
	return buf, c, false, l.wake
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

// emit appends ev, encoded as trace.Writer encodes it.
func (t *traceFile) emit(ev *gen.TraceEvent) error {
	line, err := trace.EncodeLine(ev)
	if err == nil {
		_, err = t.Write(line)
	}
	return err
}

// ended syncs the file after run_finished under SyncAtRunEnd.
func (t *traceFile) ended() error {
	if t.policy == trace.SyncAtRunEnd {
		return t.f.Sync()
	}
	return nil
}

func (t *traceFile) Close() error { return t.f.Close() }

// cursor is where an event stream is: the last trace position and, in a
// stream with content, the last transcript seq it sent.
type cursor struct {
	pos, seq int
	content  bool
	// In a stream with content, the streamed text sent of model call
	// textCall (liveEvents.text).
	textCall, textSent int
}

// DeltaEvent is the event name of a piece of the model's text as it
// streams, in an event stream with content.
const DeltaEvent = "delta"

// appendDelta appends a DeltaEvent: a gen.TextDelta, without an id (a
// delta is not resumed: the transcript's model_action entry holds the
// text whole).
func appendDelta(buf []byte, step int, text []byte) []byte {
	data, _ := json.Marshal(gen.TextDelta{Step: step, Text: string(text)}) // a struct of an int and a string always encodes
	buf = append(buf, "event: "+DeltaEvent+"\ndata: "...)
	buf = append(buf, data...)
	return append(buf, "\n\n"...)
}

// ContentEvent is the event name of a transcript entry in an event stream
// with content (ContentEvents).
const ContentEvent = "transcript"

// ContentEvents is Events with the run's transcript besides: each entry
// whose seq is past afterSeq, as the event ContentEvent, as it is written.
// Every event's id is "P:S", the trace position and the seq sent so far.
// The entries are the transcript file's lines, redacted when they were
// written; a run that keeps no transcript has none.
func (s *Runner) ContentEvents(ctx context.Context, id string, after, afterSeq int) (io.ReadCloser, error) {
	return s.openStream(ctx, id, cursor{pos: after, seq: afterSeq, content: true})
}

func (s *Runner) openStream(ctx context.Context, id string, from cursor) (io.ReadCloser, error) {
	if err := s.known(id); err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	go s.stream(ctx, id, from, pw)
	return pr, nil
}

// stream writes the run's events after from to pw as Server-Sent Events,
// live while the run is in flight, and closes pw after run_finished. It
// stops when ctx is done or the reader goes away.
func (s *Runner) stream(ctx context.Context, id string, from cursor, pw *io.PipeWriter) {
	err := s.streamEvents(ctx, id, from, pw)
	if errors.Is(err, io.ErrClosedPipe) || ctx.Err() != nil {
		err = nil // the client went away
	}
	if err != nil {
		s.log.Error("event stream failed", "run", id, "err", err)
	}
	pw.CloseWithError(err)
}

func (s *Runner) streamEvents(ctx context.Context, id string, c cursor, pw *io.PipeWriter) error {
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
	var tail *Tail
	if c.content {
		path, err := s.transcriptPath(id) // an Engine's runs keep theirs where it does
		if err != nil {
			return err
		}
		tail = &Tail{Path: path}
	}
	if live == nil {
		// A finished run's events come from its trace file. A trace that
		// lacks run_finished (its last write failed) gets one built from
		// the run's record, so every stream ends the same way.
		t, _, _, err := readTrace(s.store.tracePath(id))
		if err != nil {
			return err
		}
		if live = t.live(len(t.evs), t.finished()); !t.finished() {
			ev := finishedEvent(id, deref(final.FinishedAt), final.Result)
			if err := live.publish(&ev, true); err != nil {
				return err
			}
		}
	}
	var buf []byte
	keepAlive := time.NewTicker(keepAliveEvery)
	defer keepAlive.Stop()
	for {
		var done bool
		var wake <-chan struct{}
		buf, c, done, wake = live.since(buf[:0], c)
		if tail != nil {
			// Read after the summaries: the transcript has each event's
			// entry before the event is published.
			var err error
			if buf, c, err = transcriptSince(tail, buf, c); err != nil {
				return err
			}
		}
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

// transcriptSince appends the entries of the transcript t tails whose
// seq is past c.seq as ContentEvent events to buf. A file that does not
// exist yet (a queued run, a run without a transcript) has none; a line
// that does not parse (a write a crash cut short) is skipped.
func transcriptSince(t *Tail, buf []byte, c cursor) ([]byte, cursor, error) {
	err := t.Lines(func(line []byte) error {
		line = bytes.TrimSpace(line)
		var e struct {
			Seq int `json:"seq"`
		}
		if json.Unmarshal(line, &e) == nil && e.Seq > c.seq {
			c.seq = e.Seq
			buf = appendSSE(buf, c, ContentEvent, line)
		}
		return nil
	})
	return buf, c, err
}

// traceLog is a trace file's valid events and each one's line.
type traceLog struct {
	evs   []gen.TraceEvent
	lines [][]byte
}

// finished reports whether the trace ends with run_finished.
func (t traceLog) finished() bool {
	n := len(t.evs)
	return n > 0 && t.evs[n-1].EventType == gen.TraceEventTypeRunFinished
}

// live returns the trace's first n events as a run's live events; done
// marks the last one as the run's end.
func (t traceLog) live(n int, done bool) *liveEvents {
	l := &liveEvents{}
	for i := range n {
		l.publishJSON(t.evs[i].EventType, t.lines[i], done && i == n-1)
	}
	return l
}

// readTrace reads the trace file at path, whose content is data: its
// valid events up to a torn last line or the first invalid one (bad is
// that line, 1-based; 0 when every line is valid). A missing file has
// none.
func readTrace(path string) (t traceLog, data []byte, bad int, err error) {
	data, err = os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return t, nil, 0, nil
	}
	if err != nil {
		return t, nil, 0, err
	}
	torn, err := trace.ReadLines(bytes.NewReader(data), func(line []byte) error {
		ev, err := trace.ParseEvent(line)
		if err == nil {
			t.evs, t.lines = append(t.evs, ev), append(t.lines, bytes.Clone(line))
		}
		return err
	})
	var le *trace.LineError
	switch {
	case errors.As(err, &le):
		bad, err = le.Line, nil
	case torn != nil:
		bad = torn.Line
	}
	return t, data, bad, err
}

// finishedEvent builds the run_finished event at time at from a result.
func finishedEvent(id string, at time.Time, res *gen.RunResult) gen.TraceEvent {
	return gen.TraceEvent{RunId: id, Step: res.StepsUsed, EventType: gen.TraceEventTypeRunFinished, Time: at,
		ExitReason: ptr(res.ExitReason), StepsUsed: ptr(res.StepsUsed), Error: res.Error, Usage: res.Usage}
}

// appendSSE appends one event in the text/event-stream format: the
// cursor after it as the id (its trace position, and in a stream with
// content ":" and the transcript seq), its name and its JSON as data.
func appendSSE(buf []byte, c cursor, name string, data []byte) []byte {
	buf = append(buf, "id: "...)
	buf = strconv.AppendInt(buf, int64(c.pos), 10)
	if c.content {
		buf = append(buf, ':')
		buf = strconv.AppendInt(buf, int64(c.seq), 10)
	}
	buf = append(buf, "\nevent: "...)
	buf = append(buf, name...)
	buf = append(buf, "\ndata: "...)
	buf = append(buf, data...)
	return append(buf, "\n\n"...)
}
