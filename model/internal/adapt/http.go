package adapt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/specloop/specloop/internal/buildinfo"
)

// The retry policy, the one the providers' SDKs follow: a failed attempt
// that may succeed later (a network failure, 408, 409, 429 or 5xx, or what
// the server's x-should-retry header says) is tried again after the wait
// the server asks for (retry-after-ms, else Retry-After in seconds or as an
// HTTP date), else after an exponential backoff: 0.5 s doubling per retry,
// capped at 8 s, less a random jitter of up to a quarter.
const (
	backoffBase = 500 * time.Millisecond
	backoffMax  = 8 * time.Second
	// MaxRetryAfter is the longest wait a server may ask for: a call asked
	// to wait longer fails at once with the server's error, rather than
	// leave a run silent for minutes.
	MaxRetryAfter = time.Minute
)

// Endpoint is one provider API endpoint: a POST of a JSON body with the
// provider's headers, each attempt bounded by Timeout, retried by the
// policy above. It keeps no state between calls.
type Endpoint struct {
	// Provider names the provider in errors, e.g. "openai".
	Provider string
	// URL is the endpoint's URL.
	URL string
	// Header holds the provider's headers, its key among them; Post adds
	// Content-Type, Accept and User-Agent.
	Header http.Header
	// Client makes the requests.
	Client *http.Client
	// MaxRetries is how often a failed attempt is retried; 0 means never.
	MaxRetries int
	// Timeout bounds one attempt, from sending the request to reading the
	// last byte of the response. An attempt that runs out of time is not
	// retried (it may have taken minutes already).
	Timeout time.Duration
	// Classify reads the provider's error response: the code a
	// ProviderError reports, and whether it refused the request as over
	// the model's context window.
	Classify func(*APIError) (code string, overWindow bool)

	// wait replaces the wait before a retry when set (tests).
	wait func(ctx context.Context, d time.Duration) error
}

// A Decoder reads the 2xx response of one attempt: a whole JSON body
// (Body), or a server-sent event stream, one event at a time (Event),
// whichever the response's Content-Type says, so a server that ignores a
// request to stream still works. Reply is what it read.
type Decoder interface {
	Body(data []byte) error
	// Event takes one event of the stream, its name ("" for none) and
	// its data; end reports the stream's last event.
	Event(name string, data []byte) (end bool, err error)
	// Complete reports, when the stream ends without its last event,
	// whether what came is the whole reply all the same.
	Complete() bool
	Reply() Reply
}

// errDecode marks the error of a response that came whole but that the
// Decoder could not read: retrying would not help.
var errDecode = errors.New("decode the response")

// Post sends body and reads the 2xx response with a Decoder from
// newDecoder (a fresh one per attempt: a stream cut off mid-way is tried
// again from its start) and returns its Reply. It returns ctx's error when
// ctx ends (at once, also during a wait), else a *ProviderError for a call
// that failed, retries and all: an error status (or an error event in the
// stream), a timeout, a network failure or a stream cut off, or a
// response the Decoder could not read (which is not retried). The
// ProviderError wraps agent.ErrContextLength when the provider refused the
// request as over the context window.
func (e *Endpoint) Post(ctx context.Context, body []byte, newDecoder func() Decoder) (Reply, error) {
	for retries := 0; ; retries++ {
		dec := newDecoder()
		delay, err := e.attempt(ctx, body, retries, dec)
		if err == nil {
			return dec.Reply(), nil
		}
		if ctx.Err() != nil {
			return Reply{}, fmt.Errorf("%s: %w", e.Provider, context.Cause(ctx))
		}
		if delay < 0 || retries >= e.MaxRetries {
			return Reply{}, e.fail(err, retries)
		}
		wait := e.wait
		if wait == nil {
			wait = sleep
		}
		if err := wait(ctx, delay); err != nil {
			return Reply{}, fmt.Errorf("%s: %w", e.Provider, context.Cause(ctx))
		}
	}
}

// attempt makes the nth attempt (from 0) and reads a 2xx response with
// dec, else returns the error and how long to wait before the next
// attempt (negative: no retry).
func (e *Endpoint) attempt(ctx context.Context, body []byte, n int, dec Decoder) (time.Duration, error) {
	actx, cancel := context.WithTimeout(ctx, e.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, e.URL, bytes.NewReader(body))
	if err != nil {
		return -1, err
	}
	req.Header = e.Header.Clone()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream, application/json")
	req.Header.Set("User-Agent", "specloop/"+buildinfo.Version())
	resp, err := e.Client.Do(req)
	if err == nil {
		err = read(resp, dec)
		resp.Body.Close()
		var apiErr *APIError
		switch {
		case err == nil:
			return 0, nil
		case errors.As(err, &apiErr):
			if !retryable(apiErr.StatusCode, resp.Header) {
				return -1, err
			}
			return retryDelay(resp.Header, n, time.Now()), err
		case errors.Is(err, errDecode):
			return -1, err
		}
	}
	// A network failure, or the response cut off.
	if errors.Is(actx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
		if !errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
		}
		return -1, err
	}
	return backoff(n), err
}

// Get reads the JSON document at url into v with the endpoint's client
// and headers (its key among them), reporting whether it could: a 200
// whose body, of at most 1 MiB, decodes. Nothing is retried.
func (e *Endpoint) Get(ctx context.Context, url string, v any) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	req.Header = e.Header.Clone()
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "specloop/"+buildinfo.Version())
	resp, err := e.Client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == http.StatusOK && json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(v) == nil
}

// read reads resp: an *APIError for an error status, else its body or
// its event stream with dec.
func read(resp *http.Response, dec Decoder) error {
	ok := resp.StatusCode >= 200 && resp.StatusCode < 300
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ok && mt == "text/event-stream" {
		return readEvents(resp.Body, dec)
	}
	data, err := io.ReadAll(resp.Body)
	switch {
	case err != nil:
		return err
	case !ok:
		return ParseAPIError(resp.StatusCode, data)
	}
	if err := dec.Body(data); err != nil {
		return fmt.Errorf("%w: %w", errDecode, err)
	}
	return nil
}

// retryable reports whether a failed response of status with header may
// succeed when tried again: what its x-should-retry header says, else
// whether its status is 408, 409, 429 or 5xx.
func retryable(status int, header http.Header) bool {
	switch header.Get("X-Should-Retry") {
	case "true":
		return true
	case "false":
		return false
	}
	return status == http.StatusRequestTimeout || status == http.StatusConflict || status == http.StatusTooManyRequests || status >= 500
}

// retryDelay is the wait before retry n+1 after a failed response with
// header h, at now: what the server asks for (retry-after-ms, else
// Retry-After as seconds or an HTTP date; a time past is no wait), else
// the backoff. It is negative, no retry, when the server asks for more
// than MaxRetryAfter.
func retryDelay(h http.Header, n int, now time.Time) time.Duration {
	asked, ok := time.Duration(0), false
	if ms, err := strconv.ParseFloat(h.Get("Retry-After-Ms"), 64); err == nil && ms >= 0 {
		asked, ok = time.Duration(ms*float64(time.Millisecond)), true
	} else if v := h.Get("Retry-After"); v != "" {
		if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
			asked, ok = time.Duration(s*float64(time.Second)), true
		} else if t, err := http.ParseTime(v); err == nil {
			asked, ok = max(t.Sub(now), 0), true
		}
	}
	switch {
	case !ok:
		return backoff(n)
	case asked > MaxRetryAfter || asked < 0: // < 0: a number too large for a Duration
		return -1
	}
	return asked
}

// backoff is the wait before retry n+1 when the server asks for none.
func backoff(n int) time.Duration {
	d := backoffMax
	if n < 5 {
		d = min(backoffBase<<n, backoffMax)
	}
	return d - rand.N(d/4)
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d): // collected when ctx ends first
		return nil
	}
}

// APIError is a provider's error response: its HTTP status and what its
// body says. Both providers send an error object with a type and a
// message: OpenAI (and compatible servers) {"error": {"message", "type",
// "code", "param"}}, Anthropic {"type": "error", "error": {"type",
// "message"}}. A body in another form (a proxy's HTML page) leaves the
// fields empty.
type APIError struct {
	StatusCode int
	// Type is error.type, e.g. "invalid_request_error".
	Type string
	// Code is error.code when it is a string (OpenAI's), e.g.
	// "context_length_exceeded".
	Code string
	// Message is the provider's message. It may repeat what was sent, so
	// no error text includes it.
	Message string
	// Window is the context window in tokens the error names, 0 when it
	// names none: llama.cpp's server's error.n_ctx, else the number in
	// the message's wording of OpenAI and vLLM ("maximum context length
	// is N tokens", "longer than the maximum model length of N"),
	// llama.cpp's ("exceeds the available context size (N tokens)") or
	// Anthropic's ("N tokens > M maximum").
	Window int
}

// windowWords finds the window in an error message (APIError.Window).
var windowWords = regexp.MustCompile(`(?i)(?:maximum context length is|maximum model length of|available context size \(|tokens > )\s*(\d{1,10})\b`)

// ParseAPIError reads an error body of status, or an error event of a
// stream (both providers send the same error object there).
func ParseAPIError(status int, body []byte) *APIError {
	var b struct {
		Error struct {
			Type, Message, Code any
			NCtx                int `json:"n_ctx"`
		}
	}
	_ = json.Unmarshal(body, &b) // a field of another type stays empty
	str := func(v any) string { s, _ := v.(string); return s }
	e := &APIError{StatusCode: status, Type: str(b.Error.Type), Code: str(b.Error.Code), Message: str(b.Error.Message), Window: max(b.Error.NCtx, 0)}
	if m := windowWords.FindStringSubmatch(e.Message); m != nil && e.Window == 0 {
		e.Window, _ = strconv.Atoi(m[1])
	}
	return e
}

// Error is the status and the type, never the message.
func (e *APIError) Error() string {
	s := strconv.Itoa(e.StatusCode) + " " + http.StatusText(e.StatusCode)
	if plainCode(e.Type) {
		s += " (" + e.Type + ")"
	}
	return s
}
