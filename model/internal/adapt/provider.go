package adapt

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/specloop/specloop/internal/ident"
)

// ProviderError is a model provider failing for a reason that is not the
// model's output: an HTTP error status (after the retries for 429 and 5xx),
// a request timeout or a network failure. The loop ends the run with exit
// reason model_error and this error's text, which names the provider, e.g.
// "openai: request failed after 3 retries: 500 Internal Server Error
// (server_error)". The text never includes the provider's error message or
// anything sent to it.
type ProviderError struct {
	// Provider names the provider, e.g. "openai" or "anthropic".
	Provider string
	// Retries is how many times the request was retried.
	Retries int
	// StatusCode is the last HTTP status, 0 when there was no response.
	StatusCode int
	// Code is the provider's error type or code, e.g. "rate_limit_error",
	// when it sent one that is a plain identifier.
	Code string
	// Timeout is set when a request attempt ran out of time.
	Timeout time.Duration
	// Err is what failed: an *APIError for an error status, else the
	// network's error, the timeout or the response's decoding.
	Err error
}

func (e *ProviderError) Error() string {
	retries := ""
	switch {
	case e.Retries == 1:
		retries = "1 retry"
	case e.Retries > 1:
		retries = strconv.Itoa(e.Retries) + " retries"
	}
	if e.Timeout > 0 {
		if retries != "" {
			retries = " (" + retries + ")"
		}
		return e.Provider + ": request timed out after " + e.Timeout.String() + retries
	}
	s := e.Provider + ": request failed"
	if retries != "" {
		s += " after " + retries
	}
	switch {
	case e.StatusCode != 0:
		s += ": " + strings.TrimSpace(strconv.Itoa(e.StatusCode)+" "+http.StatusText(e.StatusCode))
		if plainCode(e.Code) {
			s += " (" + e.Code + ")"
		}
	case e.Err != nil:
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns Err.
func (e *ProviderError) Unwrap() error { return e.Err }

// plainCode reports whether code is a short identifier, safe to print.
func plainCode(code string) bool { return ident.Of(code, 64, "_.-") }
