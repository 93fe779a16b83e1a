package runner

import "fmt"

// Error is a request the runner refuses: Kind says why, for the caller to
// answer with (the HTTP API maps it to a status), Field names the request
// field at fault (a JSON pointer, or a parameter name), and Detail says
// what is wrong without quoting what was submitted.
type Error struct {
	Kind   Kind
	Field  string
	Detail string
}

// Kind is the class of an Error.
type Kind int

// The kinds of Error.
const (
	Invalid     Kind = iota // the request is invalid (400)
	NotFound                // no such run, workspace or pending call (404)
	Conflict                // the run or call is past it (409)
	Full                    // the queue is full: retry later (429)
	Unavailable             // the runner is shutting down, or the engine's index cannot be reached (503)
	Internal                // the runner failed (500)
)

func (e *Error) Error() string {
	if e.Field != "" {
		return e.Field + ": " + e.Detail
	}
	return e.Detail
}

// badField is an Invalid Error naming field.
func badField(field, format string, args ...any) *Error {
	return &Error{Kind: Invalid, Field: field, Detail: fmt.Sprintf(format, args...)}
}
