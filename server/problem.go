package server

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/textclip"
	"github.com/specloop/specloop/runner"
)

// problemContentType is the media type of every error response (RFC 9457).
const problemContentType = "application/problem+json"

// problemError is an error that is answered with a problem document. Its
// texts are written by this package and never contain submitted values.
type problemError struct {
	status int
	detail string
	field  string        // JSON pointer or parameter name, for 400s
	code   gen.ErrorCode // tool error code, for 422s
}

func (e *problemError) Error() string {
	msg := fmt.Sprintf("%d %s", e.status, http.StatusText(e.status))
	if e.field != "" {
		msg += " (" + e.field + ")"
	}
	if e.detail != "" {
		msg += ": " + e.detail
	}
	return msg
}

func problemf(status int, format string, args ...any) *problemError {
	return &problemError{status: status, detail: fmt.Sprintf(format, args...)}
}

// badField is a 400 that names the invalid field.
func badField(field, format string, args ...any) *problemError {
	return &problemError{status: http.StatusBadRequest, field: field, detail: fmt.Sprintf(format, args...)}
}

func (e *problemError) problem() gen.Problem {
	p := gen.Problem{Type: "about:blank", Title: http.StatusText(e.status), Status: e.status}
	if p.Title == "" {
		p.Title = "Error"
	}
	if e.detail != "" {
		p.Detail = &e.detail
	}
	if e.field != "" {
		p.Field = &e.field
	}
	if e.code != "" {
		p.Code = &e.code
	}
	return p
}

// handleError is echo's HTTPErrorHandler: every error, the server's own and
// echo's (unknown route, method not allowed, body too large), becomes an
// application/problem+json response.
func (s *Server) handleError(err error, c echo.Context) {
	resp := c.Response()
	if resp.Committed {
		s.log.Debug("error after the response started", "route", c.Path(), "err", err)
		return
	}
	pe := s.toProblem(err, c)
	p := pe.problem()
	if s.routes[c.Request().Method+" "+c.Path()] {
		path := c.Request().URL.Path
		if len(path) <= 256 {
			p.Instance = &path
		}
	}
	h := resp.Header()
	switch pe.status {
	case http.StatusUnauthorized:
		h.Set("WWW-Authenticate", `Bearer realm="specloop"`)
	case http.StatusMethodNotAllowed:
		if allow, ok := c.Get(echo.ContextKeyHeaderAllow).(string); ok && allow != "" {
			h.Set("Allow", allow)
		}
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		if h.Get("Retry-After") == "" { // a cap may have said how long
			h.Set("Retry-After", "1")
		}
	}
	body, merr := json.Marshal(p)
	if merr != nil {
		s.log.Error("encode problem", "err", merr)
		body = []byte(`{"type":"about:blank","title":"Internal Server Error","status":500}`)
		pe.status = http.StatusInternalServerError
	}
	h.Set(echo.HeaderContentType, problemContentType)
	if c.Request().Method == http.MethodHead {
		_ = c.NoContent(pe.status)
		return
	}
	resp.WriteHeader(pe.status)
	_, _ = resp.Write(append(body, '\n'))
}

// toProblem maps any error to a problem. Texts of foreign errors are never
// copied: they may quote what the client sent.
func (s *Server) toProblem(err error, c echo.Context) *problemError {
	var pe *problemError
	if errors.As(err, &pe) {
		if pe.status >= 500 {
			s.log.Error("request failed", "route", c.Path(), "status", pe.status, "err", pe.detail)
		}
		return pe
	}
	var re *runner.Error
	if errors.As(err, &re) {
		return runProblem(re)
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		return s.fromHTTPError(he, c)
	}
	s.log.Error("request failed", "route", c.Path(), "err", err)
	return problemf(http.StatusInternalServerError, "the server failed; see its log")
}

// runProblem is the problem of a runner.Error: its kind's status, its field
// and its detail.
func runProblem(re *runner.Error) *problemError {
	status := map[runner.Kind]int{
		runner.Invalid:     http.StatusBadRequest,
		runner.NotFound:    http.StatusNotFound,
		runner.Conflict:    http.StatusConflict,
		runner.Full:        http.StatusTooManyRequests,
		runner.Unavailable: http.StatusServiceUnavailable,
	}[re.Kind]
	return &problemError{status: cmp.Or(status, http.StatusInternalServerError), field: re.Field, detail: re.Detail}
}

// fromHTTPError maps echo's errors (and the generated wrapper's) to problems.
func (s *Server) fromHTTPError(he *echo.HTTPError, c echo.Context) *problemError {
	switch he.Code {
	case http.StatusNotFound:
		return problemf(http.StatusNotFound, "no such route")
	case http.StatusMethodNotAllowed:
		return problemf(http.StatusMethodNotAllowed, "the route does not accept this method")
	case http.StatusRequestEntityTooLarge:
		return problemf(http.StatusRequestEntityTooLarge, "the request body is larger than %d bytes", s.cfg.BodyLimit)
	case http.StatusUnsupportedMediaType:
		return &problemError{status: http.StatusBadRequest, field: "Content-Type", detail: "the request body must be application/json"}
	case http.StatusBadRequest:
		// The generated wrapper says "Invalid format for parameter NAME: ..."
		// (after the ':' it may quote the value), and echo's binder reports
		// malformed bodies; keep only the parameter name.
		if msg, ok := he.Message.(string); ok {
			if rest, ok := strings.CutPrefix(msg, "Invalid format for parameter "); ok {
				name, _, _ := strings.Cut(rest, ":")
				name = textclip.Clip(name, 64)
				return badField(name, "parameter %q: has an invalid format", name)
			}
		}
		return problemf(http.StatusBadRequest, "the request is malformed")
	}
	if he.Code >= 400 && he.Code < 500 {
		return problemf(he.Code, "%s", strings.ToLower(http.StatusText(he.Code)))
	}
	s.log.Error("request failed", "route", c.Path(), "status", he.Code, "err", he.Internal)
	return problemf(http.StatusInternalServerError, "the server failed; see its log")
}
