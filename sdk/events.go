package sdk

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strconv"
	"time"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/textclip"
)

// maxEventLine bounds a line of an event stream: an event's data is a
// trace or transcript line, at most 16 MiB of JSON on the server.
const maxEventLine = 32 << 20

// maxReconnects is how many times in a row an event stream is reopened
// without receiving an event before it gives up.
const maxReconnects = 5

// runFinished is the event name of a run's last event.
var runFinished = []byte(gen.TraceEventTypeRunFinished)

// Events iterates over the run's trace events after position after (0 for
// all), live while the run executes; the iteration ends after run_finished.
// Position n is the n-th event of the run's trace, so a caller that saw k
// events can resume with after+k. When the connection drops, Events
// reconnects and resumes after the last event it yielded; it gives up, with
// an error, after a few attempts in a row that bring nothing. An error
// from the server (such as ErrNotFound) ends the iteration.
func (c *Client) Events(ctx context.Context, id string, after int) iter.Seq2[gen.TraceEvent, error] {
	return func(yield func(gen.TraceEvent, error) bool) {
		for ev, err := range c.stream(ctx, id, after, false) {
			if err != nil {
				yield(gen.TraceEvent{}, err)
				return
			}
			if ev.Event != nil && !yield(*ev.Event, nil) {
				return
			}
		}
	}
}

// StreamEvent is one event of a run's stream with content (Stream):
// exactly one of a trace event, the transcript entry that says what the
// event's summary leaves out (the task, the model's text, a call's
// arguments, an observation's output), or a piece of the model's text as
// it streams in.
type StreamEvent struct {
	Event *gen.TraceEvent
	Entry *gen.TranscriptEntry
	Delta *gen.TextDelta
}

// The event names of a stream with content besides the trace's.
const (
	transcriptEvent = "transcript"
	deltaEvent      = "delta"
)

// Stream is Events with the run's content: its trace events, its
// transcript's entries as they are written (none for a run that keeps no
// transcript) and the model's text as it streams, in the order the server
// sends them (an entry may follow the event it gives the content of). It
// needs what the transcript needs: a server with a token is asked with
// it. When the connection drops, Stream resumes after the last event it
// yielded, as Events does; a piece of text that streamed meanwhile is not
// sent again, the step's entry has the whole.
func (c *Client) Stream(ctx context.Context, id string, after int) iter.Seq2[StreamEvent, error] {
	return c.stream(ctx, id, after, true)
}

// stream is Stream, or Events' stream of trace events only without
// content.
func (c *Client) stream(ctx context.Context, id string, after int, content bool) iter.Seq2[StreamEvent, error] {
	return func(yield func(StreamEvent, error) bool) {
		stopped := false
		err := c.follow(ctx, id, after, content, func(name, data []byte) error {
			var ev StreamEvent
			var err error
			switch string(name) {
			case transcriptEvent:
				ev.Entry = new(gen.TranscriptEntry)
				err = json.Unmarshal(data, ev.Entry)
			case deltaEvent:
				ev.Delta = new(gen.TextDelta)
				err = json.Unmarshal(data, ev.Delta)
			default:
				ev.Event = new(gen.TraceEvent)
				err = json.Unmarshal(data, ev.Event)
			}
			if err != nil {
				return fmt.Errorf("sdk: a %s event of run %s does not match the spec: %w", textclip.Clip(string(name), 64), id, err)
			}
			if !yield(ev, nil) {
				stopped = true
				return errStop
			}
			return nil
		})
		if err != nil && !stopped {
			yield(StreamEvent{}, err)
		}
	}
}

// errStop ends follow without an error.
var errStop = errors.New("stop")

// follow reads the run's event stream after position after (with the
// run's content when content is set), calling fn with each event's name
// and data, until run_finished, reconnecting after drops. It returns nil
// at the end of the run, errStop when fn stopped it, and otherwise the
// error that ended it.
func (c *Client) follow(ctx context.Context, id string, after int, content bool, fn func(event, data []byte) error) error {
	cur := cursor{pos: after, content: content}
	failures := 0
	var lastErr error
	for {
		if failures > 0 {
			if failures > maxReconnects {
				return fmt.Errorf("sdk: event stream of run %s: %w", id, lastErr)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(50<<(failures-1)) * time.Millisecond):
			}
		}
		params := gen.GetRunEventsParams{After: &cur.pos}
		if content {
			// A stream with content resumes after its last id, "P:S":
			// the trace's position and the transcript's.
			params.Content = &content
			if cur.last != "" {
				params.After, params.LastEventID = nil, &cur.last
			}
		}
		resp, err := c.raw.GetRunEvents(ctx, id, &params)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			failures++
			lastErr = err
			continue
		}
		if resp.StatusCode != http.StatusOK {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			apiErr := apiError(resp, body)
			if resp.StatusCode >= 500 && resp.StatusCode != http.StatusServiceUnavailable {
				failures++
				lastErr = apiErr
				continue
			}
			return apiErr
		}
		n, end, err := readEvents(resp.Body, &cur, fn)
		resp.Body.Close()
		switch {
		case errors.Is(err, errStop):
			return errStop
		case end:
			return err
		case ctx.Err() != nil:
			return ctx.Err()
		case n > 0:
			failures = 0
		}
		// The stream ended before run_finished: the connection dropped.
		failures++
		lastErr = err
		if lastErr == nil {
			lastErr = io.ErrUnexpectedEOF
		}
	}
}

// cursor is where a stream is: the position of the last trace event read,
// and the last id read ("P:S" on a stream with content).
type cursor struct {
	pos  int
	last string
	// content: the stream has entries after run_finished too (those of
	// the run's last step); it is read to its end. finished: run_finished
	// was read, by this connection or an earlier one.
	content, finished bool
}

// readEvents reads a text/event-stream, calling fn for each event and
// advancing cur to its id (an event without one, but a delta, counts one
// trace event); end reports that run_finished was read (and, on a stream
// with content, the stream's end after it). An error of fn ends the
// reading and is returned.
func readEvents(r io.Reader, cur *cursor, fn func(event, data []byte) error) (n int, end bool, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxEventLine)
	var id, name, data []byte
	hasData := false
	for sc.Scan() {
		line := sc.Bytes() // without its line end
		if len(line) == 0 {
			// A blank line dispatches the event.
			if hasData {
				p, _, _ := bytes.Cut(id, []byte(":"))
				switch k, cerr := strconv.Atoi(string(p)); {
				case cerr == nil:
					cur.pos, cur.last = k, string(id)
				case string(name) != deltaEvent:
					cur.pos++
				}
				n++
				if err := fn(name, data); err != nil {
					return n, false, err
				}
				if bytes.Equal(name, runFinished) {
					if cur.finished = true; !cur.content {
						return n, true, nil
					}
				}
			}
			id, name, data, hasData = id[:0], name[:0], data[:0], false
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "id":
			id = append(id[:0], value...)
		case "event":
			name = append(name[:0], value...)
		case "data":
			if hasData {
				data = append(data, '\n')
			}
			data = append(data, value...)
			hasData = true
		}
	}
	switch err := sc.Err(); {
	case errors.Is(err, bufio.ErrTooLong):
		return n, false, fmt.Errorf("an event stream line is longer than %d bytes", maxEventLine)
	case err != nil:
		return n, false, err
	case cur.finished:
		return n, true, nil
	}
	// Cut short after run_finished, a stream with content is read again
	// for the rest of the run's entries.
	return n, false, io.EOF
}
