package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/labstack/echo/v4"
	echomw "github.com/labstack/echo/v4/middleware"
	oapimw "github.com/oapi-codegen/echo-middleware"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/specdoc"
	"github.com/specloop/specloop/spec"
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

// validator validates every request against the spec with kin-openapi
// (through oapi-codegen's echo middleware). The document is a private copy
// of the embedded spec without servers, so the Host header is not checked.
// Failures become problems that name the field and never quote values.
func (s *Server) validator() (echo.MiddlewareFunc, error) {
	doc, err := specdoc.Parse(spec.YAML())
	if err != nil {
		return nil, err
	}
	doc.Servers = nil
	// callTool serves every tool: the built-in tools' own operations are
	// no routes, so the router must find callTool for them too.
	for _, d := range s.tools.base.Registry().Defs() {
		doc.Paths.Delete(toolPath + d.Spec.Name)
	}
	// Auth already ran: without security requirements the validator skips
	// the work of checking them against a no-op.
	doc.Security = nil
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			op.Security = nil
		}
	}
	opts := &oapimw.Options{
		SilenceServersWarning: true,
		Options: openapi3filter.Options{
			// Auth already ran; the spec's security is only declared here.
			AuthenticationFunc:  func(context.Context, *openapi3filter.AuthenticationInput) error { return nil },
			KeepValidatedValue:  true,
			SkipSettingDefaults: true,
		},
		// Requests for routes echo does not know get echo's own 404/405.
		Skipper: func(c echo.Context) bool { return !s.routes[c.Request().Method+" "+c.Path()] },
		// The default puts the errors' text, values included, in Message.
		MultiErrorHandler: func(me openapi3.MultiError) *echo.HTTPError {
			return &echo.HTTPError{Code: http.StatusBadRequest, Message: "invalid request", Internal: me}
		},
		ErrorHandler: func(c echo.Context, he *echo.HTTPError) error {
			if p := validationProblem(he, s.cfg.BodyLimit); p != nil {
				return p
			}
			return he
		},
	}
	validate := oapimw.OapiRequestValidatorWithOptions(doc, opts)
	// A tool's input is validated once, by the tool runtime against the
	// tool's own schema: callTool's parameters are checked here, its body
	// is not.
	toolOpts := *opts
	toolOpts.Options.ExcludeRequestBody = true
	validateTool := oapimw.OapiRequestValidatorWithOptions(doc, &toolOpts)
	return s.strictBefore(func(next echo.HandlerFunc) echo.HandlerFunc {
		all, tool := validate(next), validateTool(next)
		return func(c echo.Context) error {
			if c.Path() == toolRoute {
				return tool(c)
			}
			return all(c)
		}
	}), nil
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
