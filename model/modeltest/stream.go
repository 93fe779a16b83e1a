package modeltest

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/model"
)

// Stream is a provider's recorded event stream, for RunStream.
type Stream struct {
	// Body is the stream of one reply, as the provider sends it.
	Body []byte
	// Deltas are the pieces of text the reply's stream carries, in order.
	Deltas []string
	// Check checks the turn Next assembles from Body.
	Check func(t *testing.T, turn agent.Turn)
	// ErrorEvent is a stream that fails mid-way with the provider's error
	// event of an overloaded server, retried like a failed call.
	ErrorEvent []byte
}

// SSE is a 200 of an event stream.
func SSE(body []byte) Response {
	return Response{Status: 200, Header: map[string]string{"Content-Type": "text/event-stream"}, Body: body}
}

// RunStream checks an adapter's side of streaming: it asks for a stream,
// assembles the turn from the provider's events (handing the text to
// Request.OnText as it comes, the summary's never), and retries a stream
// cut mid-way or failing with an error event as a failed call, from the
// start.
func RunStream(t *testing.T, p Provider, st Stream) {
	next := func(t *testing.T, s *Server, cfg Config, summarize bool) (agent.Turn, []string, error) {
		var deltas []string
		req := Request(t, agent.NewHistory())
		req.Summarize = summarize
		req.OnText = func(d string) { deltas = append(deltas, d) }
		turn, err := p.New(t, s, cfg).Next(context.Background(), req)
		return turn, deltas, err
	}
	// Cut within its last quarter, inside an event, so the stream's end
	// is what is missing.
	cut := SSE(st.Body[:len(st.Body)*3/4])
	t.Run("Whole", func(t *testing.T) {
		t.Parallel()
		s := NewServer(t, p.Codec, SSE(st.Body))
		turn, deltas, err := next(t, s, Config{}, false)
		if err != nil {
			t.Fatal(err)
		}
		st.Check(t, turn)
		if !slices.Equal(deltas, st.Deltas) {
			t.Fatalf("OnText got %q, want %q", deltas, st.Deltas)
		}
		if !bytes.Contains(s.Bodies()[0], []byte(`"stream":true`)) {
			t.Fatal("the request does not ask for a stream")
		}
	})
	t.Run("CutAndRetried", func(t *testing.T) {
		t.Parallel()
		s := NewServer(t, p.Codec, cut, SSE(st.Body))
		turn, deltas, err := next(t, s, Config{}, false)
		if err != nil || s.Count() != 2 {
			t.Fatalf("err = %v after %d requests, want the turn after 2", err, s.Count())
		}
		st.Check(t, turn)
		// The text starts again with the retry.
		if text := strings.Join(st.Deltas, ""); !strings.HasSuffix(strings.Join(deltas, ""), text) {
			t.Fatalf("OnText got %q, want it to end with the whole reply's %q", deltas, text)
		}
	})
	t.Run("CutNoRetries", func(t *testing.T) {
		t.Parallel()
		s := NewServer(t, p.Codec, cut)
		_, _, err := next(t, s, Config{MaxRetries: -1}, false)
		var pe *model.ProviderError
		if !errors.As(err, &pe) || err.Error() != p.Name+": request failed: the stream ended before its last event" {
			t.Fatalf("err = %v, want a provider error for the cut stream", err)
		}
	})
	t.Run("ErrorEvent", func(t *testing.T) {
		t.Parallel()
		s := NewServer(t, p.Codec, SSE(st.ErrorEvent), SSE(st.Body))
		turn, _, err := next(t, s, Config{}, false)
		if err != nil || s.Count() != 2 {
			t.Fatalf("err = %v after %d requests, want the turn after 2", err, s.Count())
		}
		st.Check(t, turn)
		s = NewServer(t, p.Codec, SSE(st.ErrorEvent))
		_, _, err = next(t, s, Config{MaxRetries: -1}, false)
		var pe *model.ProviderError
		if !errors.As(err, &pe) || pe.StatusCode < 500 {
			t.Fatalf("err = %v, want a provider error of the server's", err)
		}
	})
	t.Run("SummaryNotText", func(t *testing.T) {
		t.Parallel()
		s := NewServer(t, p.Codec, SSE(st.Body))
		_, deltas, _ := next(t, s, Config{}, true)
		if len(deltas) != 0 {
			t.Fatalf("OnText got the summary's text %q", deltas)
		}
	})
}
