// Package server is specloop's HTTP API for remote runs: the echo server
// generated from spec/agent.yaml over a runner.Runner, which schedules,
// records and executes the runs, and the remote tool runtime.
//
// Serve the API with HTTPServer on Listener(ln): they apply the server's
// edges (read, idle and per-write timeouts, the connection cap), which
// edges.go describes with the event-stream caps and the Host check.
//
// Every error is an RFC 9457 application/problem+json document. The
// middleware runs in this order: recover, the Host check (403 on a
// server without a token, DNS-rebinding protection), the cross-origin
// check (403 for a state-changing request from another site's page),
// body limit (413),
// bearer-token auth (401; /healthz and /openapi.yaml are public as the
// spec says), then validation of the request's parameters and JSON body
// against the spec's schemas with internal/schema (400 naming the field,
// never quoting the value).
package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/spec"
)

// DefaultBodyLimit is Config.BodyLimit's default.
const DefaultBodyLimit = 2 << 20

// Config configures a Server: its runs (runner.Config: DataDir and
// WorkspaceRoot are required) and its HTTP side.
type Config struct {
	runner.Config
	// Token, when set, is the bearer token every request but /healthz and
	// /openapi.yaml must carry. Empty disables auth.
	Token string
	// BodyLimit is the largest request body in bytes; 0 means
	// DefaultBodyLimit.
	BodyLimit int64

	// The server's edges, used by HTTPServer and Listener: a zero field
	// means its default (see the Default* constants).

	// ReadHeaderTimeout bounds reading a request's headers, ReadTimeout
	// the whole request, body included: a slower client is cut off.
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	// IdleTimeout is how long a keep-alive connection may wait for its
	// next request.
	IdleTimeout time.Duration
	// WriteTimeout bounds each write of a response, every event of an
	// event stream included (unlike http.Server's WriteTimeout, which
	// bounds a whole response): a client that stops reading loses its
	// response instead of holding it open.
	WriteTimeout time.Duration
	// MaxConnections is the most connections open at once (Listener): at
	// the cap a new connection closes the one idle the longest, and waits
	// to be accepted only when all are busy.
	MaxConnections int
	// MaxStreams is the most event streams open at once, and
	// MaxStreamsPerClient the most from one client address; a stream
	// beyond either gets 429. MaxStreams is lowered to leave a reserve of
	// MaxConnections (an eighth, 1 to 64) to the other requests.
	MaxStreams          int
	MaxStreamsPerClient int
	// MCPHandler, when set, is served at /mcp (specloop as an MCP server,
	// see package mcpserver) behind the Host check and the token like the
	// API, but outside its request validation.
	MCPHandler http.Handler

	// AllowedHosts are the host names, besides loopback names and
	// addresses, that requests may name in their Host header when the
	// server has no token (protection against DNS rebinding). With a
	// token every Host is accepted.
	AllowedHosts []string
}

// Server serves the API. Create it with New, serve Handler, and end it
// with Shutdown.
type Server struct {
	cfg       Config
	log       *slog.Logger
	echo      *echo.Echo
	rn        *runner.Runner
	tokenHash []byte
	public    map[string]bool // "METHOD /path" of unauthenticated operations
	routes    map[string]bool // "METHOD /path" of every operation
	specYAML  []byte

	tools  *toolSet          // what callTool and listTools serve
	wsHook func(name string) // tests: called after a workspace is resolved

	allowedHosts map[string]bool // Config.AllowedHosts, normalized
	streams      streamSlots
	origins      *http.CrossOriginProtection
	conns        *ConnLimit
}

// api is the Server's implementation of the generated interface: the
// operations' handlers, which only the generated router calls.
type api struct{ *Server }

var _ gen.StrictServerInterface = api{}

// New opens the runner (the data directory, every run recorded in it)
// and returns a Server ready to serve.
func New(cfg Config) (*Server, error) {
	if cfg.BodyLimit <= 0 {
		cfg.BodyLimit = DefaultBodyLimit
	}
	allowed, err := edgeDefaults(&cfg)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Logger, specYAML: spec.YAML(),
		allowedHosts: allowed, streams: streamSlots{perClient: map[string]int{}}, origins: http.NewCrossOriginProtection(), conns: NewConnLimit(cfg.MaxConnections)}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if cfg.Token != "" {
		h := sha256.Sum256([]byte(cfg.Token))
		s.tokenHash = h[:]
	}
	s.public = map[string]bool{}
	for key, op := range operations() {
		s.public[key] = op.Public
	}
	rc := cfg.Config
	rc.Logger = s.log
	if cfg.Token != "" {
		rc.Secrets = append(slices.Clip(rc.Secrets), cfg.Token)
	}
	rn, err := runner.New(rc)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	s.rn = rn
	s.tools = &toolSet{base: rn.Tools(), servers: cfg.MCPServers, config: cfg.MCP}
	if err := s.initEcho(); err != nil {
		rn.Shutdown(context.Background())
		return nil, err
	}
	return s, nil
}

func (s *Server) initEcho() error {
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = s.handleError
	validate, err := s.validator()
	if err != nil {
		return fmt.Errorf("server: request validator: %w", err)
	}
	if err := s.registerGauges(); err != nil {
		return err
	}
	e.Use(s.observe, s.recoverer(), s.writeDeadlines, s.checkHost, s.crossOrigin, s.bodyLimit(), s.auth, s.checkQuery, s.readBody, s.strictJSON, validate)
	gen.RegisterHandlersWithOptions(e, gen.NewStrictHandler(api{s}, nil), gen.RegisterHandlersOptions{
		OperationMiddlewares: map[string][]echo.MiddlewareFunc{"getRunEvents": {s.streamSlot, noStore}},
	})
	e.POST(toolRoute, s.callTool)
	s.routes = map[string]bool{}
	for _, r := range e.Routes() {
		s.routes[r.Method+" "+r.Path] = true
	}
	if s.cfg.MCPHandler != nil {
		// Registered after s.routes was filled: the request validator
		// skips it (MCP is not an operation of the spec).
		e.Any(mcpPath, echo.WrapHandler(s.cfg.MCPHandler))
	}
	s.registerUI(e) // after s.routes: the page is not validated against the spec
	s.echo = e
	return nil
}

// mcpPath is where Config.MCPHandler is served.
const mcpPath = "/mcp"

// Handler returns the HTTP handler of the API.
func (s *Server) Handler() http.Handler { return s.echo }

// Shutdown stops the server's runs (runner.Runner.Shutdown): new runs
// are refused with 503, queued and running runs end, and the run log is
// closed. It returns when every run has ended, or with ctx's error when
// ctx is done first (call it again to finish). The HTTP server itself is
// the caller's: shut it down after this, so that event streams end with
// their runs.
func (s *Server) Shutdown(ctx context.Context) error {
	if err := s.rn.Shutdown(ctx); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	return s.tools.close()
}

// GetHealth reports that the server is up.
func (s api) GetHealth(context.Context, gen.GetHealthRequestObject) (gen.GetHealthResponseObject, error) {
	return gen.GetHealth200JSONResponse{Status: gen.HealthStatusOk}, nil
}

// GetSpec returns the OpenAPI document the server implements.
func (s api) GetSpec(context.Context, gen.GetSpecRequestObject) (gen.GetSpecResponseObject, error) {
	return gen.GetSpec200ApplicationyamlResponse{Body: bytes.NewReader(s.specYAML), ContentLength: int64(len(s.specYAML))}, nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
