package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/labstack/echo/v4"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/schema"
	"github.com/specloop/specloop/internal/textclip"
	"github.com/specloop/specloop/tools"
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
	var he *echo.HTTPError
	if errors.As(err, &he) {
		return s.fromHTTPError(he, c)
	}
	s.log.Error("request failed", "route", c.Path(), "err", err)
	return problemf(http.StatusInternalServerError, "the server failed; see its log")
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

// validationProblem turns a request-validation failure of kin-openapi into
// a 400 that names the field (a JSON pointer into the body, or a parameter
// name) and says what is wrong without quoting the value.
func validationProblem(err error, bodyLimit int64) *problemError {
	var re *openapi3filter.RequestError
	hasRE := errors.As(err, &re)
	var he *echo.HTTPError
	if hasRE && errors.As(re.Err, &he) && he.Code == http.StatusRequestEntityTooLarge {
		return problemf(http.StatusRequestEntityTooLarge, "the request body is larger than %d bytes", bodyLimit)
	}
	if hasRE && re.Parameter != nil {
		p := re.Parameter
		reason := "is invalid"
		var se *openapi3.SchemaError
		var pe *openapi3filter.ParseError
		switch {
		case errors.Is(re.Err, openapi3filter.ErrInvalidRequired):
			reason = "is required"
		case errors.Is(re.Err, openapi3filter.ErrInvalidEmptyValue):
			reason = "must not be empty"
		case errors.As(re.Err, &se):
			reason = schemaReason(se)
		case errors.As(re.Err, &pe) && pe.Reason != "":
			reason = "is " + pe.Reason
		}
		return badField(p.Name, "%s parameter %q: %s", p.In, p.Name, reason)
	}
	// Body schema errors; failures inside a oneOf arrive as a MultiError
	// without the RequestError around them.
	var se *openapi3.SchemaError
	if errors.As(err, &se) {
		se = schema.Innermost(se)
		tokens := se.JSONPointer()
		reason := schemaReason(se)
		if d := se.Schema; se.SchemaField == "discriminator" && d != nil && d.Discriminator != nil {
			tokens = append(tokens, d.Discriminator.PropertyName)
			reason = "must be one of " + strings.Join(slices.Sorted(maps.Keys(d.Discriminator.Mapping)), ", ")
		}
		ptr := pointer(tokens)
		if ptr == "" {
			return badField("", "the body %s", reason)
		}
		return badField(ptr, "field %q: %s", ptr, reason)
	}
	if hasRE && re.RequestBody != nil {
		var pe *openapi3filter.ParseError
		switch {
		case errors.Is(re.Err, openapi3filter.ErrInvalidRequired):
			return problemf(http.StatusBadRequest, "the request body is required")
		case strings.HasPrefix(re.Reason, "header Content-Type has unexpected value"):
			return &problemError{status: http.StatusBadRequest, field: "Content-Type", detail: "the request body must be application/json"}
		case errors.As(re.Err, &pe):
			return problemf(http.StatusBadRequest, "the request body is not valid JSON")
		}
		return problemf(http.StatusBadRequest, "the request body is invalid")
	}
	if !hasRE && errors.As(err, &he) && he.Code != http.StatusBadRequest {
		return nil // echo's own status (404, 405, ...)
	}
	return problemf(http.StatusBadRequest, "the request does not match the API")
}

// schemaReason is kin-openapi's reason, which by its contract never includes
// the value, shortened; generic when kin-openapi gave none.
func schemaReason(se *openapi3.SchemaError) string {
	r := se.Reason
	if r == "" {
		r = "does not match the schema (" + se.SchemaField + ")"
	}
	switch se.SchemaField {
	case "required":
		return "is required"
	case "nullable": // kin-openapi says "Value is not nullable"
		return "is required and must not be null"
	case "properties", "additionalProperties":
		// kin-openapi's reason names the unknown key: name the known ones.
		if se.Schema != nil && len(se.Schema.Properties) > 0 {
			keys := slices.Sorted(maps.Keys(se.Schema.Properties))
			return "has a property that is not allowed (allowed: " + strings.Join(keys, ", ") + ")"
		}
		return "has a property that is not allowed"
	}
	return textclip.Clip(strings.TrimPrefix(r, "value "), 200)
}

// pointer renders reference tokens as an RFC 6901 JSON pointer.
func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		t = strings.ReplaceAll(t, "~", "~0")
		b.WriteString(strings.ReplaceAll(t, "/", "~1"))
	}
	return textclip.Clip(b.String(), 512)
}

// toolErrorDetail is the detail of a tool's 422: what the spec's ErrorCode
// schema says code means. It is the spec's text, never the tool's message,
// which is written for the model and quotes the path, glob or expression it
// was given.
func toolErrorDetail(reg *tools.Registry, code gen.ErrorCode) string {
	if m := reg.ErrorMeaning(code); m != "" {
		return m
	}
	return "the tool failed with an error code the spec does not define"
}
