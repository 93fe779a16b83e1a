package server

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	echomw "github.com/labstack/echo/v4/middleware"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/oas"
	"github.com/specloop/specloop/internal/schema"
	"github.com/specloop/specloop/internal/textclip"
)

// The middleware, outermost first: telemetry (with Config.Telemetry; see
// telemetry.go) → access log → recover → write deadlines
// → Host check → cross-origin check → body limit → auth → body read (under ReadTimeout) →
// request validation against the spec → the strict handlers; the event
// stream adds its stream cap. edges.go has the write deadlines, the Host
// check, the cross-origin check, the body read and the stream cap.

// accessLog logs each request at debug level: method, route, status and
// duration; never headers, query strings or bodies.
func (s *Server) accessLog(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !s.log.Enabled(c.Request().Context(), slog.LevelDebug) {
			return next(c)
		}
		t0 := time.Now()
		err := next(c)
		if err != nil {
			c.Error(err)
		}
		s.log.Debug("request", "method", c.Request().Method, "route", c.Path(), "status", c.Response().Status, "duration", time.Since(t0))
		return nil
	}
}

// recoverer turns a panic into a 500 and logs it with its stack.
func (s *Server) recoverer(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.log.Error("panic while serving a request", "route", c.Path(), "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				err = problemf(http.StatusInternalServerError, "the server failed; see its log")
			}
		}()
		return next(c)
	}
}

func (s *Server) bodyLimit() echo.MiddlewareFunc {
	return echomw.BodyLimitWithConfig(echomw.BodyLimitConfig{Limit: fmt.Sprintf("%dB", s.cfg.BodyLimit)})
}

// auth checks the bearer token in constant time, except on the operations
// the spec marks `security: []`. Without a configured token it lets
// everything through.
func (s *Server) auth(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.tokenHash == nil || s.public[c.Request().Method+" "+c.Path()] {
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

// publicOperations lists "METHOD /echo/path" of the operations whose
// security is explicitly empty in the spec.
func publicOperations() map[string]bool {
	public := map[string]bool{}
	for _, op := range gen.Operations() {
		if op.Public {
			public[op.Method+" "+echoPath(op.Path)] = true
		}
	}
	return public
}

// echoPath turns an OpenAPI path template into echo's form: {id} → :id.
func echoPath(p string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(p, '{')
		j := strings.IndexByte(p, '}')
		if i < 0 || j < i {
			b.WriteString(p)
			return b.String()
		}
		b.WriteString(p[:i])
		b.WriteByte(':')
		b.WriteString(p[i+1 : j])
		p = p[j+1:]
	}
}

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
			key := method + " " + echoPath(p.Path)
			checks[key] = sync.OnceValues(func() (*opCheck, error) { return compileOp(op, key == "POST "+toolRoute) })
		}
	}
	return s.strictBefore(func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			key := c.Request().Method + " " + c.Path()
			check, ok := checks[key]
			if !s.routes[key] || !ok {
				return next(c)
			}
			oc, err := check()
			if err != nil {
				return fmt.Errorf("the spec's %s: %w", key, err)
			}
			if p := oc.validate(c); p != nil {
				return p
			}
			return next(c)
		}
	}), nil
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
		// strictJSON decodes every non-empty JSON body.
		data, _ := io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(data))
		if len(bytes.TrimSpace(data)) == 0 {
			return problemf(http.StatusBadRequest, "the request body is required")
		}
		return &problemError{status: http.StatusBadRequest, field: "Content-Type", detail: "the request body must be application/json"}
	}
	if err := oc.body.Validate(value); err != nil {
		return bodyProblem(schemaErr(err))
	}
	return nil
}

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

// bodyProblem is the 400 of a body that does not match its schema: it
// names the field, or, for a property the schema does not declare (the
// client's text), the object holding it and the properties it allows.
func bodyProblem(e *schema.Error) *problemError {
	ptr, reason := e.Pointer, e.Reason
	if e.Unknown {
		ptr, reason = ptr[:strings.LastIndexByte(ptr, '/')], "has a property that is not allowed"
		if len(e.Allowed) > 0 {
			reason += " (allowed: " + strings.Join(e.Allowed, ", ") + ")"
		}
	}
	ptr = textclip.Clip(ptr, 512)
	if ptr == "" {
		return badField("", "the body %s", reason)
	}
	return badField(ptr, "field %q: %s", ptr, reason)
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
