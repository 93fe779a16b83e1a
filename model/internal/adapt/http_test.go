package adapt

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/specloop/specloop/agent"
)

func TestRetryDelay(t *testing.T) {
	now := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	date := func(d time.Duration) string { return now.Add(d).Format(http.TimeFormat) }
	tests := []struct {
		name   string
		header map[string]string
		want   time.Duration // 0 with backoff set: the backoff's range
	}{
		{"Retry-After in seconds", map[string]string{"Retry-After": "7"}, 7 * time.Second},
		{"Retry-After in fractional seconds", map[string]string{"Retry-After": "1.5"}, 1500 * time.Millisecond},
		{"Retry-After zero", map[string]string{"Retry-After": "0"}, 0},
		{"Retry-After as an HTTP date", map[string]string{"Retry-After": date(20 * time.Second)}, 20 * time.Second},
		{"Retry-After as a date past", map[string]string{"Retry-After": date(-time.Hour)}, 0},
		{"retry-after-ms", map[string]string{"Retry-After-Ms": "250"}, 250 * time.Millisecond},
		{"retry-after-ms before Retry-After", map[string]string{"Retry-After-Ms": "250", "Retry-After": "9"}, 250 * time.Millisecond},
		{"at the cap", map[string]string{"Retry-After": "60"}, MaxRetryAfter},
		{"over the cap: no retry", map[string]string{"Retry-After": "61"}, -1},
		{"a date over the cap: no retry", map[string]string{"Retry-After": date(time.Hour)}, -1},
		{"retry-after-ms over the cap: no retry", map[string]string{"Retry-After-Ms": "3600000"}, -1},
		{"too large for a duration: no retry", map[string]string{"Retry-After": "1e300"}, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.header {
				h.Set(k, v)
			}
			if got := retryDelay(h, 0, now); got != tt.want {
				t.Fatalf("delay = %v, want %v", got, tt.want)
			}
		})
	}
	// Nothing asked (or nothing that reads as a wait): the backoff.
	for _, v := range []string{"", "soon", "-3"} {
		h := http.Header{}
		if v != "" {
			h.Set("Retry-After", v)
		}
		if got := retryDelay(h, 2, now); got <= 1500*time.Millisecond || got > 2*time.Second {
			t.Fatalf("Retry-After %q: delay %v, want the third backoff, in (1.5s, 2s]", v, got)
		}
	}
}

// The backoff doubles from 0.5 s, is capped at 8 s and loses at most a
// quarter to jitter.
func TestBackoff(t *testing.T) {
	for n, want := range []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second, 8 * time.Second, 8 * time.Second} {
		for range 50 {
			if got := backoff(n); got > want || got <= want*3/4 {
				t.Fatalf("backoff(%d) = %v, want it in (%v, %v]", n, got, want*3/4, want)
			}
		}
	}
	if got := backoff(1000); got > backoffMax {
		t.Fatalf("backoff(1000) = %v, over the cap", got)
	}
}

// server answers the requests of a test with the handlers in order,
// recording the bodies and headers it got.
type server struct {
	t        *testing.T
	mu       sync.Mutex
	handlers []http.HandlerFunc
	bodies   []string
	headers  []http.Header
}

func newEndpoint(t *testing.T, handlers ...http.HandlerFunc) (*Endpoint, *server, *[]time.Duration) {
	s := &server{t: t, handlers: handlers}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		n := len(s.bodies)
		s.bodies = append(s.bodies, string(body))
		s.headers = append(s.headers, r.Header.Clone())
		s.mu.Unlock()
		if n >= len(s.handlers) {
			t.Errorf("unexpected request %d", n+1)
			w.WriteHeader(http.StatusTeapot)
			return
		}
		s.handlers[n](w, r)
	}))
	t.Cleanup(srv.Close)
	var waits []time.Duration
	e := &Endpoint{
		Provider:   "prov",
		URL:        srv.URL + "/v1/x",
		Header:     http.Header{"Authorization": {"Bearer " + secretKey}},
		Client:     srv.Client(),
		MaxRetries: 3,
		Timeout:    10 * time.Second,
		Classify:   func(e *APIError) (string, bool) { return e.Type, e.Code == "over" },
		// The waits are recorded, not slept.
		wait: func(ctx context.Context, d time.Duration) error { waits = append(waits, d); return ctx.Err() },
	}
	return e, s, &waits
}

const secretKey = "sk-secret-0123456789"

func (s *server) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bodies)
}

// requests returns the bodies and the headers so far.
func (s *server) requests() ([]string, []http.Header) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bodies, s.headers
}

func status(code int, header map[string]string, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for k, v := range header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}
}

var okReply = status(http.StatusOK, nil, `{"ok":true}`)

// hangUp closes the connection without a response: a network failure.
func hangUp(w http.ResponseWriter, r *http.Request) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		conn.Close()
	}
}

// cutOff sends a 200 that promises more body than it sends.
func cutOff(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Length", "100")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, `{"ok":`)
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		conn.Close()
	}
}

// decoder reads a JSON body or a stream of events, to its text: the body,
// or each event as name:data, joined by |; an event "end" ends the
// stream, "error" is an error event.
type decoder struct {
	body   string
	events []string
}

func (d *decoder) Body(data []byte) error {
	if !json.Valid(data) {
		return errors.New("not JSON")
	}
	d.body = string(data)
	return nil
}

func (d *decoder) Event(name string, data []byte) (bool, error) {
	if name == "error" {
		return false, &APIError{StatusCode: 529, Type: "overloaded_error"}
	}
	if name == "bad" {
		return false, errors.New("not an event")
	}
	d.events = append(d.events, name+":"+string(data))
	return name == "end", nil
}

func (d *decoder) Complete() bool { return false }

func (d *decoder) Reply() Reply { return Reply{Text: d.body + strings.Join(d.events, "|")} }

func newDecoder() Decoder { return &decoder{} }

func post(e *Endpoint) (string, error) {
	r, err := e.Post(context.Background(), []byte(`{"q":1}`), newDecoder)
	return r.Text, err
}

func TestPostRetries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		handlers []http.HandlerFunc
		waits    []string // each wait: a duration, "backoff" or "about" one
	}{
		{"network failure", []http.HandlerFunc{hangUp, okReply}, []string{"backoff"}},
		{"response cut off", []http.HandlerFunc{cutOff, okReply}, []string{"backoff"}},
		{"Retry-After", []http.HandlerFunc{status(429, map[string]string{"Retry-After": "7"}, `{}`), okReply}, []string{"7s"}},
		{"Retry-After date", []http.HandlerFunc{status(503, map[string]string{"Retry-After": time.Now().Add(30 * time.Second).Format(http.TimeFormat)}, `{}`), okReply}, []string{"about 30s"}},
		{"retry-after-ms", []http.HandlerFunc{status(529, map[string]string{"Retry-After-Ms": "1500"}, `{}`), okReply}, []string{"1.5s"}},
		{"408, 409, 500 with backoffs", []http.HandlerFunc{status(408, nil, ``), status(409, nil, ``), status(500, nil, ``), okReply}, []string{"backoff", "backoff", "backoff"}},
		{"x-should-retry true on a 400", []http.HandlerFunc{status(400, map[string]string{"X-Should-Retry": "true", "Retry-After": "0"}, ``), okReply}, []string{"0s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, s, waits := newEndpoint(t, tt.handlers...)
			got, err := post(e)
			if err != nil || got != `{"ok":true}` {
				t.Fatalf("Post = %q, %v", got, err)
			}
			if s.count() != len(tt.handlers) {
				t.Fatalf("%d requests, want %d", s.count(), len(tt.handlers))
			}
			bodies, _ := s.requests()
			for i, body := range bodies {
				if body != `{"q":1}` {
					t.Fatalf("attempt %d sent %q, want the body again", i+1, body)
				}
			}
			if len(*waits) != len(tt.waits) {
				t.Fatalf("waits %v, want %d", *waits, len(tt.waits))
			}
			for i, w := range tt.waits {
				got := (*waits)[i]
				about, isAbout := strings.CutPrefix(w, "about ")
				switch want, _ := time.ParseDuration(about); {
				case w == "backoff":
					if want := 500 * time.Millisecond << i; got > want || got <= want*3/4 {
						t.Fatalf("wait %d = %v, want backoff %d, in (%v, %v]", i, got, i, want*3/4, want)
					}
				case isAbout: // a date, with its second's resolution, counted from when it was made
					if got > want || got < want-5*time.Second {
						t.Fatalf("wait %d = %v, want about %v", i, got, want)
					}
				case got != want:
					t.Fatalf("wait %d = %v, want %v", i, got, want)
				}
			}
		})
	}
}

func TestPostFails(t *testing.T) {
	t.Parallel()
	fail := status(500, map[string]string{"Retry-After": "0"}, `{"error":{"message":"boom","type":"server_error"}}`)
	tests := []struct {
		name       string
		maxRetries int
		handlers   []http.HandlerFunc
		want       ProviderError // without Err
		text       string
	}{
		{"retries exhausted", 2, []http.HandlerFunc{fail, fail, fail}, ProviderError{Provider: "prov", Retries: 2, StatusCode: 500, Code: "server_error"}, "prov: request failed after 2 retries: 500 Internal Server Error (server_error)"},
		{"never retried", 0, []http.HandlerFunc{fail}, ProviderError{Provider: "prov", StatusCode: 500, Code: "server_error"}, "prov: request failed: 500 Internal Server Error (server_error)"},
		{"not retryable", 3, []http.HandlerFunc{status(401, nil, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`)}, ProviderError{Provider: "prov", StatusCode: 401, Code: "authentication_error"}, "prov: request failed: 401 Unauthorized (authentication_error)"},
		{"x-should-retry false", 3, []http.HandlerFunc{status(503, map[string]string{"X-Should-Retry": "false"}, ``)}, ProviderError{Provider: "prov", StatusCode: 503}, "prov: request failed: 503 Service Unavailable"},
		{"Retry-After over the cap", 3, []http.HandlerFunc{status(429, map[string]string{"Retry-After": "3600"}, `{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`)}, ProviderError{Provider: "prov", StatusCode: 429, Code: "requests"}, "prov: request failed: 429 Too Many Requests (requests)"},
		{"network failures", 1, []http.HandlerFunc{hangUp, hangUp}, ProviderError{Provider: "prov", Retries: 1}, "prov: request failed after 1 retry: Post "},
		{"undecodable reply", 3, []http.HandlerFunc{status(200, nil, `{"ok":`)}, ProviderError{Provider: "prov"}, "prov: request failed: decode the response: not JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, s, _ := newEndpoint(t, tt.handlers...)
			e.MaxRetries = tt.maxRetries
			_, err := post(e)
			var pe *ProviderError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a *ProviderError", err)
			}
			got := *pe
			got.Err = nil
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("provider error (-want +got):\n%s", diff)
			}
			if !strings.HasPrefix(err.Error(), tt.text) {
				t.Fatalf("error = %q, want it to start with %q", err, tt.text)
			}
			if s.count() != len(tt.handlers) {
				t.Fatalf("%d requests, want %d", s.count(), len(tt.handlers))
			}
		})
	}
}

// The error bodies of both providers' formats (and of others) are read
// into an APIError; the over-window refusal wraps agent.ErrContextLength.
func TestAPIErrorBodies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		want APIError
	}{
		{"openai", `{"error":{"message":"This model's maximum context length is 128000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
			APIError{StatusCode: 400, Type: "invalid_request_error", Code: "context_length_exceeded", Message: "This model's maximum context length is 128000 tokens.", Window: 128000}},
		{"openai-compatible, numeric code", `{"error":{"message":"bad","type":"BadRequestError","param":null,"code":400}}`,
			APIError{StatusCode: 400, Type: "BadRequestError", Message: "bad"}},
		{"anthropic", `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"},"request_id":"req_1"}`,
			APIError{StatusCode: 400, Type: "invalid_request_error", Message: "prompt is too long: 210000 tokens > 200000 maximum", Window: 200000}},
		{"vllm", `{"error":{"message":"This model's maximum context length is 8192 tokens. However, you requested 9000 tokens (9000 in the messages, 0 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}}`,
			APIError{StatusCode: 400, Type: "BadRequestError", Message: "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens (9000 in the messages, 0 in the completion). Please reduce the length of the messages or completion.", Window: 8192}},
		{"vllm v1", `{"error":{"message":"The decoder prompt (length 9000) is longer than the maximum model length of 8192. Make sure that max_model_len is no smaller than the number of text tokens.","type":"BadRequestError","code":400}}`,
			APIError{StatusCode: 400, Type: "BadRequestError", Message: "The decoder prompt (length 9000) is longer than the maximum model length of 8192. Make sure that max_model_len is no smaller than the number of text tokens.", Window: 8192}},
		{"llama.cpp", `{"error":{"code":400,"message":"request (9000 tokens) exceeds the available context size (8192 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":8192}}`,
			APIError{StatusCode: 400, Type: "exceed_context_size_error", Message: "request (9000 tokens) exceeds the available context size (8192 tokens), try increasing it", Window: 8192}},
		{"llama.cpp, the number only in the message", `{"error":{"code":400,"message":"request (9000 tokens) exceeds the available context size (16384 tokens), try increasing it","type":"exceed_context_size_error"}}`,
			APIError{StatusCode: 400, Type: "exceed_context_size_error", Message: "request (9000 tokens) exceeds the available context size (16384 tokens), try increasing it", Window: 16384}},
		{"a string error (Ollama)", `{"error":"model not found"}`, APIError{StatusCode: 400}},
		{"a proxy's page", `<html><body>Bad Request</body></html>`, APIError{StatusCode: 400}},
		{"empty", ``, APIError{StatusCode: 400}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(&tt.want, ParseAPIError(400, []byte(tt.body))); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
	e, _, _ := newEndpoint(t, status(400, nil, `{"error":{"message":"too long","type":"invalid_request_error","code":"over"}}`))
	_, err := post(e)
	var pe *ProviderError
	if !errors.Is(err, agent.ErrContextLength) || !errors.As(err, &pe) || pe.StatusCode != 400 {
		t.Fatalf("err = %v, want a 400 ProviderError wrapping agent.ErrContextLength", err)
	}
}

// No error text holds the key, nor the provider's message (which may quote
// what was sent), however deep it is unwrapped.
func TestErrorsNeverHoldTheKey(t *testing.T) {
	t.Parallel()
	echo := `{"error":{"message":"Incorrect API key provided: ` + secretKey + `","type":"invalid_request_error","code":"invalid_api_key"}}`
	for _, h := range []http.HandlerFunc{status(401, nil, echo), hangUp, cutOff} {
		e, s, _ := newEndpoint(t, h)
		e.MaxRetries = 0
		_, err := post(e)
		if err == nil {
			t.Fatal("Post succeeded")
		}
		if _, headers := s.requests(); headers[0].Get("Authorization") != "Bearer "+secretKey {
			t.Fatal("the key was not sent")
		}
		for e := err; e != nil; e = errors.Unwrap(e) {
			if text := e.Error(); strings.Contains(text, secretKey) || strings.Contains(text, "Incorrect API key") {
				t.Fatalf("an error text repeats the key or the message: %q", text)
			}
		}
	}
}

// Every attempt carries the provider's headers and the JSON ones.
func TestPostHeaders(t *testing.T) {
	t.Parallel()
	e, s, _ := newEndpoint(t, status(500, nil, ``), okReply)
	if _, err := post(e); err != nil {
		t.Fatal(err)
	}
	_, headers := s.requests()
	for i, h := range headers {
		if h.Get("Content-Type") != "application/json" || h.Get("Accept") != "text/event-stream, application/json" ||
			!strings.HasPrefix(h.Get("User-Agent"), "specloop/") || h.Get("Authorization") != "Bearer "+secretKey {
			t.Fatalf("attempt %d headers: %v", i+1, h)
		}
	}
}

// An attempt that runs out of time is a timeout, not retried.
func TestPostTimeout(t *testing.T) {
	t.Parallel()
	block := func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }
	e, s, _ := newEndpoint(t, block)
	e.Timeout = 50 * time.Millisecond
	_, err := post(e)
	var pe *ProviderError
	if !errors.As(err, &pe) || pe.Timeout != 50*time.Millisecond || pe.Retries != 0 || s.count() != 1 {
		t.Fatalf("err = %v after %d requests, want one timed-out attempt", err, s.count())
	}
	if got, want := err.Error(), "prov: request timed out after 50ms"; got != want {
		t.Fatalf("error = %q, want %q", got, want)
	}
}

// Cancelling the context stops a call at once, during a wait too: its
// error is the context's, no ProviderError.
func TestPostCancelledWhileWaiting(t *testing.T) {
	t.Parallel()
	e, s, _ := newEndpoint(t, status(429, map[string]string{"Retry-After": "59"}, `{}`))
	waiting := make(chan struct{})
	e.wait = func(ctx context.Context, d time.Duration) error { // the real wait, of 59 s
		close(waiting)
		return sleep(ctx, d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := e.Post(ctx, []byte(`{}`), newDecoder)
		done <- err
	}()
	<-waiting
	cancel()
	select {
	case err := <-done:
		var pe *ProviderError
		if !errors.Is(err, context.Canceled) || errors.As(err, &pe) || !strings.HasPrefix(err.Error(), "prov: ") {
			t.Fatalf("err = %v, want the provider's context.Canceled", err)
		}
	case <-time.After(20 * time.Second): // a hang guard, far below the 59 s wait
		t.Fatal("the cancelled call still waits")
	}
	if n := s.count(); n != 1 {
		t.Fatalf("%d requests, want 1", n)
	}
}

func sse(body string) http.HandlerFunc {
	return status(http.StatusOK, map[string]string{"Content-Type": "text/event-stream; charset=utf-8"}, body)
}

// The event stream format: named and unnamed events, data of several
// lines, comments, CRLF line ends; the decoder's last event ends it and
// nothing after is read.
func TestReadEvents(t *testing.T) {
	t.Parallel()
	e, _, _ := newEndpoint(t, sse(": a comment\r\nevent: a\r\ndata: 1\r\n\r\ndata:2\ndata: 3\nid: 7\n\nevent: ping\n\nevent: end\ndata: {}\n\nevent: after\ndata: x\n\n"))
	got, err := post(e)
	if want := "a:1|:2\n3|ping:|end:{}"; err != nil || got != want {
		t.Fatalf("events = %q, %v; want %q", got, err, want)
	}
}

// A stream is retried from its start when it is cut off before its last
// event or fails with an error event; an event the decoder cannot read is
// not retried.
func TestStreamRetries(t *testing.T) {
	t.Parallel()
	whole := "event: a\ndata: 1\n\nevent: end\ndata: 2\n\n"
	e, s, waits := newEndpoint(t, sse("event: a\ndata: 1\n\nevent: en"), sse("event: a\ndata: 1\n\nevent: error\ndata: {}\n\n"), sse(whole))
	got, err := post(e)
	if err != nil || got != "a:1|end:2" || s.count() != 3 || len(*waits) != 2 {
		t.Fatalf("Post = %q, %v after %d requests and waits %v; want the whole stream's events only, after 3", got, err, s.count(), *waits)
	}
	e, s, _ = newEndpoint(t, sse("event: bad\ndata: 1\n\n"))
	_, err = post(e)
	var pe *ProviderError
	if !errors.As(err, &pe) || s.count() != 1 || err.Error() != "prov: request failed: decode the response: not an event" {
		t.Fatalf("err = %v after %d requests, want one undecodable stream", err, s.count())
	}
	e, _, _ = newEndpoint(t, sse("event: error\ndata: {}\n\n"))
	e.MaxRetries = 0
	_, err = post(e)
	if !errors.As(err, &pe) || pe.StatusCode != 529 || pe.Code != "overloaded_error" {
		t.Fatalf("err = %v, want the error event's 529", err)
	}
}
