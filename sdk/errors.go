package sdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/specloop/specloop/gen"
)

// Sentinels for the statuses callers branch on; an *APIError matches the
// one for its status with errors.Is.
var (
	ErrBadRequest   = errors.New("bad request")        // 400
	ErrUnauthorized = errors.New("unauthorized")       // 401
	ErrNotFound     = errors.New("not found")          // 404
	ErrConflict     = errors.New("conflict")           // 409
	ErrTooLarge     = errors.New("request too large")  // 413
	ErrToolFailed   = errors.New("tool failed")        // 422
	ErrQueueFull    = errors.New("run queue full")     // 429
	ErrUnavailable  = errors.New("server unavailable") // 503
	ErrServer       = errors.New("server error")       // any other 5xx
)

var sentinels = map[int]error{
	http.StatusBadRequest:            ErrBadRequest,
	http.StatusUnauthorized:          ErrUnauthorized,
	http.StatusNotFound:              ErrNotFound,
	http.StatusConflict:              ErrConflict,
	http.StatusRequestEntityTooLarge: ErrTooLarge,
	http.StatusUnprocessableEntity:   ErrToolFailed,
	http.StatusTooManyRequests:       ErrQueueFull,
	http.StatusServiceUnavailable:    ErrUnavailable,
}

// APIError is an error response of the server: its HTTP status and the
// RFC 9457 problem it sent (Field names the invalid field of a 400, Code
// the tool's error code of a 422).
type APIError struct {
	Status  int
	Problem gen.Problem
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "specloop: %d %s", e.Status, e.Problem.Title)
	if e.Problem.Code != nil {
		fmt.Fprintf(&b, " (%s)", *e.Problem.Code)
	}
	if e.Problem.Field != nil {
		fmt.Fprintf(&b, " at %s", *e.Problem.Field)
	}
	if e.Problem.Detail != nil {
		b.WriteString(": " + *e.Problem.Detail)
	}
	return b.String()
}

// Is matches the sentinel of the error's status.
func (e *APIError) Is(target error) bool {
	if s, ok := sentinels[e.Status]; ok {
		return s == target
	}
	return target == ErrServer && e.Status >= 500
}

// apiError builds the error for a response that is not the expected one.
func apiError(resp *http.Response, body []byte) error {
	status := resp.StatusCode
	e := &APIError{Status: status}
	if err := json.Unmarshal(body, &e.Problem); err != nil || e.Problem.Status == 0 {
		e.Problem = gen.Problem{Type: "about:blank", Title: http.StatusText(status), Status: status}
	}
	if e.Problem.Title == "" {
		e.Problem.Title = http.StatusText(status)
	}
	return e
}
