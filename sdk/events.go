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
)

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
		stopped := false
		err := c.follow(ctx, id, after, func(_ []byte, data []byte) error {
			var ev gen.TraceEvent
			if err := json.Unmarshal(data, &ev); err != nil {
				return fmt.Errorf("sdk: an event of run %s is not a TraceEvent: %w", id, err)
			}
			if !yield(ev, nil) {
				stopped = true
				return errStop
			}
			return nil
		})
		if err != nil && !stopped {
			yield(gen.TraceEvent{}, err)
		}
	}
}

// errStop ends follow without an error.
var errStop = errors.New("stop")

// follow reads the run's event stream after position after, calling fn with
// each event's name and data, until run_finished, reconnecting after drops.
// It returns nil at the end of the run, errStop when fn stopped it, and
// otherwise the error that ended it.
func (c *Client) follow(ctx context.Context, id string, after int, fn func(event, data []byte) error) error {
	pos := after
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
		p := pos
		resp, err := c.raw.GetRunEvents(ctx, id, &gen.GetRunEventsParams{After: &p})
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
		n, end, err := readEvents(resp.Body, &pos, fn)
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

// readEvents reads a text/event-stream, calling fn for each event and
// advancing pos to its id; end reports that run_finished was read. An
// error of fn ends the reading and is returned.
func readEvents(r io.Reader, pos *int, fn func(event, data []byte) error) (n int, end bool, err error) {
	br := bufio.NewReader(r)
	var id, name, data []byte
	hasData := false
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			return n, false, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			// A blank line dispatches the event.
			if hasData {
				if k, cerr := strconv.Atoi(string(id)); cerr == nil {
					*pos = k
				} else {
					*pos++
				}
				n++
				if err := fn(name, data); err != nil {
					return n, false, err
				}
				if bytes.Equal(name, runFinished) {
					return n, true, nil
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
}
