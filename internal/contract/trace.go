package contract

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/textclip"
)

// maxReported is how many bad lines or events one error lists.
const maxReported = 10

// traceEventSchema is the embedded spec's TraceEvent schema (read-only).
func traceEventSchema() (*openapi3.Schema, error) {
	doc, err := Spec()
	if err != nil {
		return nil, err
	}
	return component(doc, componentName[gen.TraceEvent]())
}

// traceOrder checks the order the runtime writes a run's events in: one
// run id, steps that never go back, run_started first (or only
// run_finished, for a run cancelled before it started) and nothing after
// run_finished.
type traceOrder struct {
	runID    string
	step     int
	n        int
	finished bool
}

func (o *traceOrder) next(ev gen.TraceEvent) error {
	o.n++
	switch {
	case o.finished:
		return errors.New("an event follows run_finished")
	case o.n == 1 && ev.EventType != gen.TraceEventTypeRunStarted && ev.EventType != gen.TraceEventTypeRunFinished:
		// Only a run that ended before it started (cancelled while queued)
		// has no run_started.
		return fmt.Errorf("the first event is %s, not %s", ev.EventType, gen.TraceEventTypeRunStarted)
	case o.n > 1 && ev.RunId != o.runID:
		return errors.New("run_id differs from the first event's")
	case ev.Step < o.step:
		return fmt.Errorf("step %d follows step %d", ev.Step, o.step)
	}
	o.runID, o.step = ev.RunId, ev.Step
	o.finished = ev.EventType == gen.TraceEventTypeRunFinished
	return nil
}

// checkEvent validates one event's JSON against TraceEvent with
// kin-openapi and decodes it.
func checkEvent(s *openapi3.Schema, data []byte) (gen.TraceEvent, error) {
	var ev gen.TraceEvent
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return ev, errors.New("not JSON")
	}
	if fe := kinCheck(s, v, openapi3.VisitAsResponse()); fe != nil {
		return ev, fmt.Errorf("does not validate against TraceEvent: %w", fe)
	}
	if err := json.Unmarshal(data, &ev); err != nil {
		return ev, fmt.Errorf("does not decode as a TraceEvent: %w", err)
	}
	return ev, nil
}

// ValidateTraceFile checks a run's JSONL trace: every line is complete and
// validates against the spec's TraceEvent (with kin-openapi, independently
// of the trace package's reader), and the events come in the order the
// runtime writes them (see traceOrder). The error lists the bad lines by
// number, never their content.
func ValidateTraceFile(path string) error {
	s, err := traceEventSchema()
	if err != nil {
		return err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		return fmt.Errorf("%s: the last line is not newline-terminated (a torn write)", path)
	}
	var errs []error
	var order traceOrder
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for n := 1; sc.Scan(); n++ {
		ev, err := checkEvent(s, sc.Bytes())
		if err == nil {
			err = order.next(ev)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("line %d: %w", n, err))
			if len(errs) == maxReported {
				break
			}
		}
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s: %w", path, errors.Join(errs...))
	}
	return nil
}

// StreamEvent is one Server-Sent Event of a run's event stream.
type StreamEvent struct {
	// ID is the event's position in the run's trace.
	ID int
	// Event is the SSE event name: the TraceEvent's event_type.
	Event string
	// Data is the TraceEvent.
	Data gen.TraceEvent
}

// ValidateEventStream parses a text/event-stream body as the spec's
// getRunEvents describes it and checks it: each event has an id that is
// its 1-based position (consecutive), an event name equal to its
// event_type and data that validates against TraceEvent; the stream holds
// one run's events in trace order, starting anywhere (a stream may resume).
// In a stream with content (ids "P:S") the events named transcript are
// TranscriptEntry lines in seq order, S their seq, and the events named
// delta TextDelta pieces without an id; neither is returned.
func ValidateEventStream(body []byte) ([]StreamEvent, error) {
	s, err := traceEventSchema()
	if err != nil {
		return nil, err
	}
	doc, err := Spec()
	if err != nil {
		return nil, err
	}
	entrySchema, err := component(doc, componentName[gen.TranscriptEntry]())
	if err != nil {
		return nil, err
	}
	deltaSchema, err := component(doc, componentName[gen.TextDelta]())
	if err != nil {
		return nil, err
	}
	seq := -1 // the last transcript seq, in a stream with content
	var out []StreamEvent
	var errs []error
	order := traceOrder{}
	fail := func(i int, format string, args ...any) {
		errs = append(errs, fmt.Errorf("event %d: %s", i, fmt.Sprintf(format, args...)))
	}
	for i, block := range strings.Split(strings.ReplaceAll(string(body), "\r\n", "\n"), "\n\n") {
		if strings.TrimSpace(block) == "" {
			continue
		}
		var id, name string
		var data []string
		for _, line := range strings.Split(block, "\n") {
			if line == "" || strings.HasPrefix(line, ":") {
				continue
			}
			k, v, _ := strings.Cut(line, ":")
			v = strings.TrimPrefix(v, " ")
			switch k {
			case "id":
				id = v
			case "event":
				name = v
			case "data":
				data = append(data, v)
			case "retry":
			default:
				fail(i+1, "unknown field %q", textclip.Clip(k, 32))
			}
		}
		if data == nil {
			fail(i+1, "has no data")
			continue
		}
		if name == "delta" { // the model's text as it streams: no id, not returned
			var v any
			switch {
			case id != "":
				fail(i+1, "a delta has an id")
			case json.Unmarshal([]byte(strings.Join(data, "\n")), &v) != nil:
				fail(i+1, "not JSON")
			default:
				if fe := kinCheck(deltaSchema, v, openapi3.VisitAsResponse()); fe != nil {
					fail(i+1, "does not validate against TextDelta: %v", fe)
				}
			}
			continue
		}
		id, sid, content := strings.Cut(id, ":")
		if content {
			n, err := strconv.Atoi(sid)
			switch {
			case err != nil || n < 0 || seq >= 0 && n < seq:
				fail(i+1, "id's transcript seq is not a non-negative integer that never goes back")
			case name == "transcript":
				var e struct {
					Seq int `json:"seq"`
				}
				var v any
				if json.Unmarshal([]byte(strings.Join(data, "\n")), &v) != nil || json.Unmarshal([]byte(strings.Join(data, "\n")), &e) != nil {
					fail(i+1, "not JSON")
				} else if fe := kinCheck(entrySchema, v, openapi3.VisitAsResponse()); fe != nil {
					fail(i+1, "does not validate against TranscriptEntry: %v", fe)
				} else if e.Seq != n || seq >= 0 && n != seq+1 {
					fail(i+1, "entry seq %d with id seq %d after %d", e.Seq, n, seq)
				}
				seq = n
				continue
			case seq >= 0 && n != seq:
				fail(i+1, "a summary event moves the transcript seq")
			}
			seq = n
		}
		ev, err := checkEvent(s, []byte(strings.Join(data, "\n")))
		if err != nil {
			fail(i+1, "%v", err)
			continue
		}
		pos, err := strconv.Atoi(id)
		switch {
		case err != nil || pos < 1:
			fail(i+1, "id is not a positive integer")
		case len(out) > 0 && pos != out[len(out)-1].ID+1:
			fail(i+1, "id %d does not follow id %d", pos, out[len(out)-1].ID)
		}
		if name != string(ev.EventType) {
			fail(i+1, "the event name differs from its event_type %s", ev.EventType)
		}
		if len(out) == 0 && pos > 1 {
			order.n = 1 // resumed: run_started was before
			order.runID = ev.RunId
		}
		if err := order.next(ev); err != nil {
			fail(i+1, "%v", err)
		}
		out = append(out, StreamEvent{ID: pos, Event: name, Data: ev})
		if len(errs) >= maxReported {
			break
		}
	}
	return out, errors.Join(errs...)
}
