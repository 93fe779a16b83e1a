// Package server is specloop's HTTP API for remote runs: the echo server
// generated from spec/agent.yaml (it implements gen.StrictServerInterface),
// a runs manager, durable run records and the remote tool runtime.
//
// Runs execute in the background with agent.Run, at most MaxConcurrent at a
// time and never two in the same workspace; up to QueueSize more wait, and
// a create beyond that is refused with 429. Workspaces are directories under
// the workspace root, named by relative paths validated like tool paths.
//
// Durability: a run's creation is appended to DATA/runs.jsonl and fsynced
// before the 202 is sent (one fsync covers every create waiting for one);
// its trace goes to DATA/traces/ID.jsonl event by event (fsynced as
// Config.TraceSync says); its result is appended to the run log when it
// ends, before run_finished reaches any client, and fsynced within 200 ms.
// New rebuilds every run from the data directory: finished runs keep their
// results (from the log, or from the trace's run_finished when the log lost
// it), and runs that were in flight when the server stopped end with exit
// reason interrupted, recorded in their trace and in the log; with an
// Engine, they are followed again instead (engine.go). The run log
// keeps the task's summary only, but each finished run's whole result
// (answer, patch, error, check output tail), so that GET /v1/runs/{id}
// returns it after a restart: the data directory is not as privacy-safe
// as a trace, and New makes it (and the run log) private to the server's
// user (0700, files 0600).
//
// Workspaces are opened once, through the root's os.Root, when a request
// names one; a run holds its workspace open from its creation to its end.
// Replacing the directory afterwards (by a symbolic link elsewhere, say)
// changes nothing for the request or the run.
//
// Finished runs cost memory only for their compact record (about 1 KiB);
// their events are read back from the trace files, except for the last
// runs that finished, whose events stay in memory for the clients that
// follow a run to its end.
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
// spec says), then validation of the request against the spec with
// kin-openapi (400 naming the field, never quoting the value).
package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/mcpclient"
	"github.com/specloop/specloop/sandbox"
	"github.com/specloop/specloop/spec"
	"github.com/specloop/specloop/telemetry"
	"github.com/specloop/specloop/tools"
	"github.com/specloop/specloop/trace"
	"github.com/specloop/specloop/wiring"
)

// Defaults for a zero Config.
const (
	DefaultMaxConcurrent = 64
	DefaultQueueSize     = 10000
	DefaultBodyLimit     = 2 << 20
)

// recentRunsKept is how many finished runs keep their events in memory,
// for the streams that follow a run's end.
const recentRunsKept = 1024

// Config configures a Server. DataDir and WorkspaceRoot are required.
type Config struct {
	// Engine executes the runs; nil means the embedded engine (agent.Run
	// in this process).
	Engine Engine
	// DataDir holds the run log and the traces; it is created if missing.
	// It must lie outside WorkspaceRoot (and WorkspaceRoot outside it):
	// New refuses it otherwise (ErrRecordsInWorkspace), since runs may read
	// and write every file of the workspace root.
	DataDir string
	// WorkspaceRoot is the directory runs and tool calls work in; a request
	// may name a directory under it.
	WorkspaceRoot string
	// Token, when set, is the bearer token every request but /healthz and
	// /openapi.yaml must carry. Empty disables auth.
	Token string
	// MaxConcurrent is the most runs executing at once; 0 means
	// DefaultMaxConcurrent.
	MaxConcurrent int
	// QueueSize is the most runs waiting to start; 0 means
	// DefaultQueueSize. A create beyond it gets 429.
	QueueSize int
	// AllowCommands offers run_command to runs and to POST
	// /v1/tools/run_command, and allows completion checks.
	AllowCommands bool
	// ToolSpecs are documents of custom tools that runs and the MCP
	// endpoint offer besides the built-in ones (see tools.LoadSpec); New
	// fails when one runs commands and AllowCommands is off.
	ToolSpecs []*tools.Spec
	// Sandbox confines run_command and completion checks. New fails when
	// commands are allowed and the sandbox is unavailable; only a Backend
	// of sandbox.None, given explicitly, runs them unconfined.
	Sandbox sandbox.Policy
	// BodyLimit is the largest request body in bytes; 0 means
	// DefaultBodyLimit.
	BodyLimit int64
	// ApprovalTimeout is how long a run's tool call waits for approval
	// before it is denied with reason timeout, when the run's request
	// gives no approval_timeout_seconds; 0 means
	// agent.DefaultApprovalTimeout.
	ApprovalTimeout time.Duration
	// TraceSync is when run traces are fsynced. The default, SyncNone,
	// leaves it to the operating system: a crash of the process loses
	// nothing, a power loss may lose the last events of a trace (the run
	// log, fsynced, still has every run and result).
	TraceSync trace.SyncPolicy
	// Logger receives the server's log; nil discards it.
	Logger *slog.Logger
	// Models builds each run's model; nil means DefaultModels.
	Models ModelFactory
	// Telemetry, when set, counts what the server and its runs do (GET
	// /metrics) and exports their spans; see telemetry.go.
	Telemetry *telemetry.Telemetry

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
	// MCPServers are the external MCP servers a run may choose by name
	// (CreateRunRequest.mcp_servers); each run starts its own sessions
	// with them and stops them at its end. MCP configures the sessions.
	MCPServers []mcpclient.Server
	MCP        mcpclient.Config
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
	store     *store
	runs      *registry
	recent    *recentRuns
	sched     *scheduler
	ws        *workspaces
	tokenHash []byte
	public    map[string]bool // "METHOD /path" of unauthenticated operations
	routes    map[string]bool // "METHOD /path" of every operation
	specYAML  []byte

	runTools  []gen.ToolSpec        // the tools a run offers a model
	toolDefs  map[string]*tools.Def // by input schema name
	closing   atomic.Bool
	attached  []*run // runs an Engine executes, to follow once the server is up
	stopOnce  sync.Once
	closeOnce sync.Once
	closeErr  error
	wsHook    func(name string) // tests: called after a workspace is resolved

	allowedHosts map[string]bool // Config.AllowedHosts, normalized
	streams      streamSlots
	origins      *http.CrossOriginProtection
	conns        *ConnLimit
}

var _ gen.StrictServerInterface = (*Server)(nil)

// New opens the data directory, rebuilds every run recorded in it and
// returns a Server ready to serve.
func New(cfg Config) (*Server, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("server: a data directory is required")
	}
	if cfg.WorkspaceRoot == "" {
		return nil, errors.New("server: a workspace root is required")
	}
	if cfg.MaxConcurrent <= 0 {
		cfg.MaxConcurrent = DefaultMaxConcurrent
	}
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = DefaultQueueSize
	}
	if cfg.BodyLimit <= 0 {
		cfg.BodyLimit = DefaultBodyLimit
	}
	if cfg.Models == nil {
		cfg.Models = DefaultModels
	}
	if cfg.ApprovalTimeout <= 0 {
		cfg.ApprovalTimeout = agent.DefaultApprovalTimeout
	}
	allowed, err := edgeDefaults(&cfg)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Logger, runs: newRegistry(), recent: newRecentRuns(recentRunsKept), specYAML: spec.YAML(),
		allowedHosts: allowed, streams: streamSlots{perClient: map[string]int{}}, origins: http.NewCrossOriginProtection(), conns: NewConnLimit(cfg.MaxConnections)}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if cfg.AllowCommands {
		sb, err := sandbox.New(cfg.Sandbox)
		if err != nil {
			return nil, fmt.Errorf("server: commands are allowed but cannot be sandboxed (choose a sandbox, or none explicitly): %w", err)
		}
		if w := sb.Warning(); w != "" {
			s.log.Warn(w)
		}
		// Every runtime and check (set up by setupConfig) uses the backend
		// resolved here.
		s.cfg.Sandbox = sb.Policy()
		s.cfg.Sandbox.Backend = sb.Info().Backend
	}
	if cfg.Token != "" {
		h := sha256.Sum256([]byte(cfg.Token))
		s.tokenHash = h[:]
	}
	s.public = publicOperations()
	ws, err := openWorkspaces(cfg.WorkspaceRoot)
	if err != nil {
		return nil, fmt.Errorf("server: workspace root: %w", err)
	}
	if err := CheckRecordsDir(cfg.DataDir, cfg.WorkspaceRoot); err != nil {
		ws.close()
		return nil, fmt.Errorf("server: data directory: %w", err)
	}
	s.ws = ws
	if err := s.initTools(); err != nil {
		ws.close()
		return nil, err
	}
	st, entries, bad, err := openStore(cfg.DataDir)
	if err != nil {
		ws.close()
		return nil, fmt.Errorf("server: %w", err)
	}
	s.store = st
	for _, e := range bad {
		s.log.Warn("skipping a damaged run log line", "err", e)
	}
	if err := s.recover(entries); err != nil {
		st.close()
		ws.close()
		return nil, fmt.Errorf("server: recover runs: %w", err)
	}
	s.sched = newScheduler(cfg.MaxConcurrent, cfg.QueueSize, s.execute)
	if err := s.initEcho(); err != nil {
		st.close()
		ws.close()
		return nil, err
	}
	s.followAttached(s.attached)
	s.attached = nil
	return s, nil
}

// initTools learns the tools a run offers from a runtime on the workspace
// root, and binds each tool operation to its definition.
func (s *Server) initTools() error {
	cfg := s.setupConfig()
	cfg.Root = s.ws.root
	setup, err := wiring.Open(cfg)
	var we *wiring.Error
	if errors.As(err, &we) && we.Part == wiring.PartWorkspace {
		return fmt.Errorf("server: workspace root: %w", we.Err)
	}
	if err != nil {
		return fmt.Errorf("server: tools: %w", err)
	}
	defer setup.Close()
	rt := setup.Runtime
	s.runTools = rt.Specs()
	s.toolDefs = map[string]*tools.Def{}
	for _, d := range rt.Registry().Defs() {
		s.toolDefs[d.InputSchemaName] = d
	}
	return nil
}

// setupConfig maps the server's configuration to the setup of its runs and
// tool calls; each adds its workspace (and a run its request's check,
// budgets and trace). `specloop run` maps its flags to the same
// wiring.Config, so a server and a local run are set up alike.
func (s *Server) setupConfig() wiring.Config {
	return wiring.Config{DisableCommands: !s.cfg.AllowCommands, Sandbox: s.cfg.Sandbox, TraceSync: s.cfg.TraceSync, Tools: s.cfg.ToolSpecs}
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
	if err := s.useTelemetry(e); err != nil {
		return err
	}
	e.Use(s.accessLog, s.recoverer, s.writeDeadlines, s.checkHost, s.crossOrigin, s.bodyLimit(), s.auth, s.checkQuery, s.readBody, validate)
	gen.RegisterHandlersWithOptions(e, gen.NewStrictHandler(s, nil), gen.RegisterHandlersOptions{
		OperationMiddlewares: map[string][]echo.MiddlewareFunc{"getRunEvents": {s.streamSlot, noStore}},
	})
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

// Handler returns the HTTP handler of the API.
func (s *Server) Handler() http.Handler { return s.echo }

// Shutdown stops the server's work: new runs are refused with 503, queued
// runs end cancelled at once, running runs are cancelled and end cancelled
// (those waiting for an approval end interrupted: the wait is not
// durable), recorded in their traces and the run log, and then the run log is
// synced and closed. With an Engine, running runs are only no longer
// followed: they stay open in the run log for the next server. It returns when every run has ended, or with ctx's
// error when ctx is done first (call it again to finish). The HTTP server
// itself is the caller's: shut it down after this, so that event streams
// end with their runs.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stopOnce.Do(func() {
		s.closing.Store(true)
		for _, r := range s.sched.close() {
			s.cancelQueued(r, errShuttingDown)
		}
		s.runs.mu.RLock()
		for _, r := range s.runs.sorted {
			if r.job != nil {
				r.job.cancel(errShuttingDown)
			}
		}
		s.runs.mu.RUnlock()
	})
	if err := s.sched.wait(ctx); err != nil {
		return fmt.Errorf("server: runs still ending: %w", err)
	}
	s.closeOnce.Do(func() {
		s.closeErr = errors.Join(s.store.close(), s.ws.close())
	})
	return s.closeErr
}

// GetHealth reports that the server is up.
func (s *Server) GetHealth(context.Context, gen.GetHealthRequestObject) (gen.GetHealthResponseObject, error) {
	return gen.GetHealth200JSONResponse{Status: gen.HealthStatusOk}, nil
}

// GetSpec returns the OpenAPI document the server implements.
func (s *Server) GetSpec(context.Context, gen.GetSpecRequestObject) (gen.GetSpecResponseObject, error) {
	return gen.GetSpec200ApplicationyamlResponse{Body: bytes.NewReader(s.specYAML), ContentLength: int64(len(s.specYAML))}, nil
}

// typeName is the Go name of T, which for generated tool inputs is the
// name of their schema component.
func typeName[T any]() string { return reflect.TypeFor[T]().Name() }
