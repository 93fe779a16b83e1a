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
	"sync"
	"time"

	"github.com/specloop/specloop/gen"
)

// maxReconnects is how many times in a row Events reconnects without
// receiving an event before it gives up.
const maxReconnects = 5

// Events iterates over the run's trace events after position after (0 for
// all), live while the run executes; the iteration ends after run_finished.
// Position n is the n-th event of the run's trace, so a caller that saw k
// events can resume with after+k. When the connection drops, Events
// reconnects and resumes after the last event it yielded; it gives up, with
// an error, after a few attempts in a row that bring nothing. An error
// from the server (such as ErrNotFound) ends the iteration.
func (c *Client) Events(ctx context.Context, id string, after int) iter.Seq2[gen.TraceEvent, error] {
	return func(yield func(gen.TraceEvent, error) bool) {
		pos := after
		failures := 0
		var lastErr error
		for {
			if failures > 0 {
				if failures > maxReconnects {
					yield(gen.TraceEvent{}, fmt.Errorf("sdk: event stream of run %s: %w", id, lastErr))
					return
				}
				delay := time.Duration(50<<(failures-1)) * time.Millisecond
				select {
				case <-ctx.Done():
					yield(gen.TraceEvent{}, ctx.Err())
					return
				case <-time.After(delay):
				}
			}
			p := pos
			resp, err := c.raw.GetRunEvents(ctx, id, &gen.GetRunEventsParams{After: &p})
			if err != nil {
				if ctx.Err() != nil {
					yield(gen.TraceEvent{}, ctx.Err())
					return
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
				yield(gen.TraceEvent{}, apiErr)
				return
			}
			n, end, stopped, err := readEvents(resp.Body, &pos, yield)
			resp.Body.Close()
			switch {
			case stopped, end:
				return
			case ctx.Err() != nil:
				yield(gen.TraceEvent{}, ctx.Err())
				return
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
}

// readers are the buffered readers of event streams; a line longer than
// the buffer is collected in pieces.
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 16<<10) }}

// readEvents reads a text/event-stream, yielding each event and advancing
// pos to its id. end reports that run_finished was read; stopped that the
// consumer stopped the iteration.
func readEvents(r io.Reader, pos *int, yield func(gen.TraceEvent, error) bool) (n int, end, stopped bool, err error) {
	br := readers.Get().(*bufio.Reader)
	br.Reset(r)
	defer func() {
		br.Reset(nil)
		readers.Put(br)
	}()
	var id, data []byte
	hasData := false
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A long line: collect it whole.
			buf := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				buf = append(buf, line...)
			}
			line = buf
		}
		if err != nil {
			return n, false, false, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			// A blank line dispatches the event.
			if hasData {
				var ev gen.TraceEvent
				if jerr := json.Unmarshal(data, &ev); jerr != nil {
					return n, false, false, fmt.Errorf("sdk: an event is not a TraceEvent: %w", jerr)
				}
				if k, cerr := strconv.Atoi(string(id)); cerr == nil {
					*pos = k
				} else {
					*pos++
				}
				n++
				if !yield(ev, nil) {
					return n, false, true, nil
				}
				if ev.EventType == gen.TraceEventTypeRunFinished {
					return n, true, false, nil
				}
			}
			id, data, hasData = id[:0], data[:0], false
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "id":
			id = append(id[:0], value...)
		case "data":
			if hasData {
				data = append(data, '\n')
			}
			data = append(data, value...)
			hasData = true
		}
	}
}
