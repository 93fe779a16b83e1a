package adapt

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// errCut is the error of a stream that ended before its last event: a
// network failure, retried as one.
var errCut = errors.New("the stream ended before its last event")

// readEvents reads a server-sent event stream (the WHATWG format both
// providers use) from r, handing each event to dec until dec says it was
// the last. A stream that ends before is cut (errCut), unless dec finds
// what came complete; an event dec cannot read is an errDecode; an error
// of dec's that is an *APIError (an error event) is returned as it is.
func readEvents(r io.Reader, dec Decoder) error {
	br := bufio.NewReader(r)
	var name string
	var data []byte
	pending, lines := false, 0 // a field of an event not dispatched yet was read; its data lines
	for {
		line, err := br.ReadBytes('\n')
		if err != nil && (err != io.EOF || len(line) == 0) {
			if err == io.EOF && dec.Complete() {
				return nil
			}
			if err == io.EOF {
				return errCut
			}
			return err
		}
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		if len(line) == 0 { // the end of an event
			if pending {
				end, err := dec.Event(name, data)
				var apiErr *APIError
				switch {
				case errors.As(err, &apiErr):
					return err
				case err != nil:
					return fmt.Errorf("%w: %w", errDecode, err)
				case end:
					return nil
				}
			}
			name, data, pending, lines = "", nil, false, 0
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			name, pending = string(value), true
		case "data":
			if lines > 0 {
				data = append(data, '\n')
			}
			data, pending, lines = append(data, value...), true, lines+1
		}
	}
}
