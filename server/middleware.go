package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"
	echomw "github.com/labstack/echo/v4/middleware"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/oas"
	"github.com/specloop/specloop/internal/schema"
	"github.com/specloop/specloop/internal/textclip"
)

// The middleware, outermost first: the access log and telemetry (see
// telemetry.go) → recover → write deadlines
// → Host check → cross-origin check → body limit → auth → body read (under ReadTimeout) →
// request validation against the spec → the strict handlers; the event
// stream adds its stream cap. edges.go has the write deadlines, the Host
// check, the cross-origin check, the body read and the stream cap.

// recoverer turns a panic (but http.ErrAbortHandler's) into a 500 and
// logs it with the stack of its goroutine: echo's Recover, logging with
// the server's logger.
func (s *Server) recoverer() echo.MiddlewareFunc {
	return echomw.RecoverWithConfig(echomw.RecoverConfig{StackSize: 64 << 10, DisableStackAll: true, DisableErrorHandler: true,
		LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
			s.log.Error("panic while serving a request", "route", c.Path(), "panic", err.Error(), "stack", string(stack))
			return problemf(http.StatusInternalServerError, "the server failed; see its log")
		}})
}

func (s *Server) bodyLimit() echo.MiddlewareFunc {
	return echomw.BodyLimitWithConfig(echomw.BodyLimitConfig{Limit: fmt.Sprintf("%dB", s.cfg.BodyLimit)})
}

// auth checks the bearer token in constant time, except on the operations
// the spec marks `security: []`. Without a configured token it lets
// everything through.
func (s *Server) auth(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.tokenHash == nil || s.public[route(c)] {
			return next(c)
		}
		h := c.Request().Header.Get(echo.HeaderAuthorization)
		const scheme = "bearer "
		ok := len(h) > len(scheme) && strings.EqualFold(h[:len(scheme)], scheme)
		var got [sha256.Size]byte
		if ok {
			got = sha256.Sum256([]byte(strings.TrimSpace(h[len(scheme):])))
		}
		// Hashing first makes the comparison independent of the lengths.
		if subtle.ConstantTimeCompare(got[:], s.tokenHash) != 1 || !ok {
			return problemf(http.StatusUnauthorized, "a valid bearer token is required")
		}
		return next(c)
	}
}

// operations are the spec's operations by their echo routes, "METHOD
// /echo/path" (an OpenAPI path template {id} is echo's :id).
var operations = sync.OnceValue(func() map[string]gen.SpecOperation {
	ops := map[string]gen.SpecOperation{}
	for _, op := range gen.Operations() {
		ops[op.Method+" "+strings.NewReplacer("{", ":", "}", "").Replace(op.Path)] = op
	}
	return ops
})

// route is the request's echo route, "METHOD /echo/path".
func route(c echo.Context) string { return c.Request().Method + " " + c.Path() }

// validator validates every request against the spec: each operation's
// path, query and header parameters and its JSON body against their
// schemas, compiled with internal/schema on the operation's first request.
// The body was decoded once already (strictJSON); callTool's body is not
// validated here, since the tool runtime validates a tool's input against
// the tool's own schema. Failures are problems that name the parameter or
// field and never quote values. Requests for routes echo does not know get
// echo's own 404/405.
func (s *Server) validator() (echo.MiddlewareFunc, error) {
	doc, err := gen.SpecDoc()
	if err != nil {
		return nil, err
	}
	checks := map[string]func() (*opCheck, error){}
	for _, p := range doc.Paths {
		for method, op := range p.Operations {
			key := method + " " + strings.NewReplacer("{", ":", "}", "").Replace(p.Path)
			checks[key] = sync.OnceValues(func() (*opCheck, error) { return compileOp(op, key == "POST "+toolRoute) })
		}
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			check, ok := checks[route(c)]
			if !s.routes[route(c)] || !ok {
				return next(c)
			}
			oc, err := check()
			if err != nil {
				return fmt.Errorf("the spec's %s: %w", route(c), err)
			}
			if p := oc.validate(c); p != nil {
				return p
			}
			return next(c)
		}
	}, nil
}

// opCheck validates the requests of one operation.
type opCheck struct {
	params []paramCheck
	body   *schema.Validator // nil: no JSON body to validate here
}

type paramCheck struct {
	*oas.Parameter
	v *schema.Validator
}

// compileOp compiles an operation's schemas; a tool call's body is left to
// the tool runtime.
func compileOp(op *oas.Operation, toolCall bool) (*opCheck, error) {
	oc := &opCheck{}
	for _, p := range op.Parameters {
		v, err := schema.Compile(p.Schema, schema.Request)
		if err != nil {
			return nil, fmt.Errorf("parameter %s: %w", p.Name, err)
		}
		oc.params = append(oc.params, paramCheck{p, v})
	}
	if op.Request != nil && !toolCall {
		v, err := schema.Compile(op.Request.Schema, schema.Request)
		if err != nil {
			return nil, fmt.Errorf("request body: %w", err)
		}
		oc.body = v
	}
	return oc, nil
}

// validate returns the problem of a request, or nil.
func (oc *opCheck) validate(c echo.Context) *problemError {
	req := c.Request()
	for _, p := range oc.params {
		var values []string
		switch p.In {
		case "path":
			v, err := url.PathUnescape(c.Param(p.Name))
			if err != nil {
				return badField(p.Name, "path parameter %q: is malformed", p.Name)
			}
			values = []string{v}
		case "query":
			values = c.QueryParams()[p.Name]
		case "header":
			values = req.Header.Values(p.Name)
		default:
			continue
		}
		if len(values) == 0 {
			if p.Required {
				return badField(p.Name, "%s parameter %q: is required", p.In, p.Name)
			}
			continue
		}
		if values[0] == "" && p.In != "path" {
			return badField(p.Name, "%s parameter %q: must not be empty", p.In, p.Name)
		}
		value, reason := paramValue(values[0], p.Schema)
		if reason == "" {
			if err := p.v.Validate(value); err != nil {
				reason = schemaErr(err).Reason
			}
		}
		if reason != "" {
			return badField(p.Name, "%s parameter %q: %s", p.In, p.Name, reason)
		}
	}
	if oc.body == nil {
		return nil
	}
	value := req.Context().Value(bodyKey{})
	if value == nil {
		return noBody(req, "the request body is required")
	}
	if err := oc.body.Validate(value); err != nil {
		return fieldProblem(schemaErr(err), "the body", "has a property that is not allowed")
	}
	// The generated wrappers bind the value validated, matching member
	// names exactly, rather than decode the body again case-insensitively.
	req.Body = validatedBody{req.Body, value}
	return nil
}

// validatedBody is a request body with the value validated from it, as
// the generated wrappers look for it (ValidatedValue).
type validatedBody struct {
	io.ReadCloser
	value any
}

func (b validatedBody) ValidatedValue() any { return b.value }

// paramValue is a parameter's text as the JSON value its schema's type
// says, or the reason it is not one. Strings stay strings.
func paramValue(text string, s map[string]any) (any, string) {
	types, _ := s["type"].([]any)
	if t, ok := s["type"].(string); ok {
		types = []any{t}
	}
	switch {
	case slices.Contains(types, "string"):
		return text, ""
	case slices.Contains(types, "integer"), slices.Contains(types, "number"):
		f, err := strconv.ParseFloat(text, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			if slices.Contains(types, "number") {
				return nil, "must be a number"
			}
			return nil, "must be an integer"
		}
		return f, ""
	case slices.Contains(types, "boolean"):
		b, err := strconv.ParseBool(text)
		if err != nil || (text != "true" && text != "false") {
			return nil, "must be true or false"
		}
		return b, ""
	}
	return text, ""
}

// fieldProblem is the 400 of a value (subject: the body, a tool's input)
// that does not match its schema: it names the field, or, for a property
// the schema does not declare (the client's text), the object holding it,
// why (unknown) and the properties it allows.
func fieldProblem(e *schema.Error, subject, unknown string) *problemError {
	ptr, reason := e.Pointer, e.Reason
	if e.Unknown {
		ptr, reason = ptr[:strings.LastIndexByte(ptr, '/')], unknown
		if len(e.Allowed) > 0 {
			reason += " (allowed: " + strings.Join(e.Allowed, ", ") + ")"
		}
	}
	ptr = textclip.Clip(ptr, schema.MaxPointer)
	if ptr == "" {
		return problemf(http.StatusBadRequest, "%s %s", subject, reason)
	}
	return badField(ptr, "field %q: %s", ptr, reason)
}

// noBody is the 400 of a request without the JSON body it needs (detail
// says which): none, or one that is not JSON.
func noBody(req *http.Request, detail string) *problemError {
	if req.ContentLength != 0 && !isJSON(req.Header.Get(echo.HeaderContentType)) {
		return &problemError{status: http.StatusBadRequest, field: "Content-Type", detail: "the request body must be application/json"}
	}
	return problemf(http.StatusBadRequest, "%s", detail)
}

// schemaErr is the *schema.Error err holds, or one for the whole value.
func schemaErr(err error) *schema.Error {
	var se *schema.Error
	if errors.As(err, &se) {
		return se
	}
	return &schema.Error{Reason: "does not match its schema"}
}

// noStore marks the event stream as not cacheable, for proxies too.
func noStore(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Cache-Control", "no-store")
		h.Set("X-Accel-Buffering", "no")
		return next(c)
	}
}
