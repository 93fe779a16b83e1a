// Package runner executes agent runs in the background and keeps their
// records: scheduling, durable run records, recovery after a crash, live
// events, the approval gate and the Engine seam.
//
// Runs execute with agent.Run (or on an Engine), at most MaxConcurrent at
// a time and never two in the same workspace; up to QueueSize more wait,
// and a create beyond that is refused (Full). Workspaces are directories
// under the workspace root, named by relative paths validated like tool
// paths.
//
// Durability: a run's creation is appended to DATA/runs.jsonl and fsynced
// before Create returns (one fsync covers every create waiting for one);
// its trace goes to DATA/traces/ID.jsonl event by event (fsynced as
// Config.TraceSync says); its result is appended to the run log when it
// ends, before run_finished reaches any stream, and fsynced within 200 ms.
// New rebuilds every run from the data directory: finished runs keep their
// results (from the log, or from the trace's run_finished when the log lost
// it), and runs that were in flight when the runner stopped end with exit
// reason interrupted, recorded in their trace and in the log; with an
// Engine, they are followed again instead (engine.go). The run log
// keeps the task's summary only, but each finished run's whole result
// (answer, patch, error, check output tail), so that Get returns it after
// a restart: the data directory is not as privacy-safe as a trace, and New
// makes it (and the run log) private to the runner's user (0700, files
// 0600).
//
// Workspaces are opened once, through the root's os.Root, when a request
// names one; a run holds its workspace open from its creation to its end.
// Replacing the directory afterwards (by a symbolic link elsewhere, say)
// changes nothing for the run.
//
// Finished runs cost memory only for their compact record (about 1 KiB);
// their events are read back from the trace files (a stream that
// followed a run to its end keeps its live events).
package runner

import (
	"context"
	"errors"
	"fmt"
	"golang.org/x/sync/singleflight"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/mcpclient"
	"github.com/specloop/specloop/sandbox"
	"github.com/specloop/specloop/telemetry"
	"github.com/specloop/specloop/tools"
	"github.com/specloop/specloop/trace"
	"github.com/specloop/specloop/wiring"
)

// Defaults for a zero Config.
const (
	DefaultMaxConcurrent = 64
	DefaultQueueSize     = 10000
	// DefaultTranscriptRetention is `specloop serve`'s
	// --transcript-retention.
	DefaultTranscriptRetention = 30 * 24 * time.Hour
)

// Config configures a Runner. DataDir and WorkspaceRoot are required.
type Config struct {
	// Engine executes the runs; nil means the embedded engine (agent.Run
	// in this process).
	Engine Engine
	// Secrets are redacted from the runs' transcripts besides the values
	// of this process's variables that hold secrets (the server's token).
	Secrets []string
	// DataDir holds the run log and the traces; it is created if missing.
	// It must lie outside WorkspaceRoot (and WorkspaceRoot outside it):
	// New refuses it otherwise (wiring.ErrRecordsInWorkspace), since runs may read
	// and write every file of the workspace root.
	DataDir string
	// WorkspaceRoot is the directory runs and tool calls work in; a request
	// may name a directory under it.
	WorkspaceRoot string
	// MaxConcurrent is the most runs executing at once; 0 means
	// DefaultMaxConcurrent.
	MaxConcurrent int
	// QueueSize is the most runs waiting to start; 0 means
	// DefaultQueueSize. A create beyond it is refused (Full).
	QueueSize int
	// AllowCommands offers run_command to runs (and to tool calls over the
	// API), and allows completion checks.
	AllowCommands bool
	// ToolSpecs are documents of custom tools that runs offer besides the
	// built-in ones (see tools.LoadSpec); New fails when one runs commands
	// and AllowCommands is off.
	ToolSpecs []*tools.Spec
	// Sandbox confines run_command and completion checks. New fails when
	// commands are allowed and the sandbox is unavailable; only a Backend
	// of sandbox.None, given explicitly, runs them unconfined.
	Sandbox sandbox.Policy
	// ApprovalTimeout is how long a run's tool call waits for approval
	// before it is denied with reason timeout, when the run's request
	// gives no approval_timeout_seconds; 0 means
	// agent.DefaultApprovalTimeout.
	ApprovalTimeout time.Duration
	// LockDir, when set, holds each running run's workspace against other
	// specloop processes (wiring.Config.LockDir): a run whose workspace a
	// `specloop run` holds waits for it, and says so in the log. It must
	// lie outside WorkspaceRoot.
	LockDir string
	// TranscriptRetention is how long a finished run's transcript is
	// kept (its run record and trace stay): the runner removes older ones
	// when it starts and then at least hourly. 0 keeps them forever.
	TranscriptRetention time.Duration
	// TraceSync is when run traces are fsynced. The default, SyncNone,
	// leaves it to the operating system: a crash of the process loses
	// nothing, a power loss may lose the last events of a trace (the run
	// log, fsynced, still has every run and result).
	TraceSync trace.SyncPolicy
	// Logger receives the runner's log; nil discards it.
	Logger *slog.Logger
	// System is the system prompt of the runs' openai and anthropic
	// models (serve --system-file); "" means the adapters' default. Every
	// run's spec carries it (Spec.System), for an Engine's workers.
	System string
	// Models builds each run's model; nil means ModelsWithSystem(System).
	// A Models given is told nothing of System: it must build the
	// models with the same prompt.
	Models ModelFactory
	// Telemetry, when set, counts what the runs do and exports their
	// spans.
	Telemetry *telemetry.Telemetry
	// MCPServers are the external MCP servers a run may choose by name
	// (CreateRunRequest.mcp_servers); each run starts its own sessions
	// with them and stops them at its end. MCP configures the sessions.
	MCPServers []mcpclient.Server
	MCP        mcpclient.Config
	// Clones, when set, clones the repositories isolated runs name by URL
	// (CreateRunRequest.repo_url); nil refuses every repo_url. New sets
	// its Dir to DataDir/clones when empty and fails when it is inside
	// WorkspaceRoot.
	Clones *Cloner
}

// Runner accepts, schedules, executes and records runs. Create it with
// New and end it with Shutdown.
type Runner struct {
	cfg   Config
	log   *slog.Logger
	store *store
	runs  *registry
	sched *scheduler
	ws    *workspaces
	tools *wiring.Setup // the tools on the workspace root (Tools)
	// host is what every run's setup shares, made of the Config once (New),
	// with the sandbox New resolved: each run adds its workspace, trace,
	// transcript and telemetry, and goes through Open with its spec.
	host wiring.Config

	closing      atomic.Bool
	adopting     singleflight.Group // adoptions of runs from the engine's index, by run id
	attached     []*run             // runs an Engine executes, to follow once the runner is up
	resumed      []*run             // runs in flight at a crash, to go on once the runner is up
	stopSweeping chan struct{}      // closed by Shutdown
	// stop is cancelled (errShuttingDown) first thing in Shutdown: the
	// requests to the engine's index and the runs the engine executes
	// derive from it, so that nothing Shutdown waits for outlasts it.
	stop      context.Context
	stopNow   context.CancelCauseFunc
	stopOnce  sync.Once
	closeOnce sync.Once
	closeErr  error
}

// New opens the data directory, rebuilds every run recorded in it and
// returns a Runner ready to take runs.
func New(cfg Config) (*Runner, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("runner: a data directory is required")
	}
	if cfg.WorkspaceRoot == "" {
		return nil, errors.New("runner: a workspace root is required")
	}
	if cfg.MaxConcurrent <= 0 {
		cfg.MaxConcurrent = DefaultMaxConcurrent
	}
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = DefaultQueueSize
	}
	if cfg.Models == nil {
		cfg.Models = ModelsWithSystem(cfg.System)
	}
	if cfg.ApprovalTimeout <= 0 {
		cfg.ApprovalTimeout = agent.DefaultApprovalTimeout
	}
	s := &Runner{cfg: cfg, log: cfg.Logger, runs: newRegistry(), host: wiring.Config{
		DisableCommands: !cfg.AllowCommands, Tools: cfg.ToolSpecs, Sandbox: cfg.Sandbox, TraceSync: cfg.TraceSync, Secrets: cfg.Secrets,
		Telemetry: cfg.Telemetry, MCPServers: cfg.MCPServers, MCP: cfg.MCP, LockDir: cfg.LockDir}}
	s.stop, s.stopNow = context.WithCancelCause(context.Background())
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	ws, err := openWorkspaces(cfg.WorkspaceRoot)
	if err != nil {
		return nil, fmt.Errorf("runner: workspace root: %w", err)
	}
	if err := wiring.CheckRecordsDir(cfg.DataDir, cfg.WorkspaceRoot); err != nil {
		ws.close()
		return nil, fmt.Errorf("runner: data directory: %w", err)
	}
	if cfg.Clones != nil {
		if err := cfg.Clones.open(cfg.DataDir, cfg.WorkspaceRoot); err != nil {
			ws.close()
			return nil, fmt.Errorf("runner: clone cache: %w", err)
		}
	}
	s.ws = ws
	if err := s.initTools(); err != nil {
		ws.close()
		return nil, err
	}
	st, entries, bad, err := openStore(cfg.DataDir)
	if err != nil {
		s.tools.Close()
		ws.close()
		return nil, fmt.Errorf("runner: %w", err)
	}
	s.store = st
	for _, e := range bad {
		s.log.Warn("skipping a damaged run log line", "err", e)
	}
	if err := s.recover(entries); err != nil {
		st.close()
		s.tools.Close()
		ws.close()
		return nil, fmt.Errorf("runner: recover runs: %w", err)
	}
	s.stopSweeping = make(chan struct{})
	if cfg.TranscriptRetention > 0 {
		s.sweepTranscripts(time.Now())
		go s.keepSweeping()
	}
	s.sched = newScheduler(cfg.MaxConcurrent, cfg.QueueSize, s.execute)
	s.followAttached(s.attached)
	s.resumeRuns(s.resumed)
	s.attached, s.resumed = nil, nil
	return s, nil
}

// initTools opens the tools on the workspace root (Tools), which checks
// that a run's tools open, and resolves the sandbox that every runtime and
// check (set up on host) then uses when commands are allowed.
func (s *Runner) initTools() error {
	setup, err := wiring.Open(wiring.Config{Root: s.ws.root, DisableCommands: s.host.DisableCommands, Tools: s.host.Tools, Sandbox: s.host.Sandbox})
	var we *wiring.Error
	switch {
	case errors.As(err, &we) && we.Part == wiring.PartWorkspace:
		return fmt.Errorf("runner: workspace root: %w", we.Err)
	case errors.As(err, &we) && we.Part == wiring.PartSandbox:
		return fmt.Errorf("runner: commands are allowed but cannot be sandboxed (choose a sandbox, or none explicitly): %w", we.Err)
	case err != nil:
		return fmt.Errorf("runner: tools: %w", err)
	}
	s.tools = setup
	if sb := setup.Sandbox; sb != nil {
		if w := sb.Warning(); w != "" {
			s.log.Warn(w)
		}
		s.host.Sandbox = sb.Policy()
		s.host.Sandbox.Backend = sb.Info().Backend
		s.host.Sandbox.ObjectDirs = nil // each run's are read when its workspace is opened
	}
	return nil
}

// serversPart gives sp what the runner decides for every run and an
// Engine's workers need: the system prompt and the custom tools'
// documents.
func (s *Runner) serversPart(sp *Spec) {
	sp.System, sp.CustomTools = s.cfg.System, nil
	for _, ts := range s.cfg.ToolSpecs {
		sp.CustomTools = append(sp.CustomTools, string(ts.Document()))
	}
}

// Tools is the runner's built-in and custom tools, open on the workspace
// root until Shutdown, with the sandbox its runs use: a tool call outside
// a run (the API's POST /v1/tools/{name}) runs them in the workspace it
// names.
func (s *Runner) Tools() *tools.Runtime { return s.tools.Runtime }

// OpenWorkspace opens the directory workspace name resolves to now, for a
// tool call that then uses it alone; field names the request field for
// an Error. The caller closes it.
func (s *Runner) OpenWorkspace(name *string, field string) (string, *os.Root, error) {
	return s.ws.open(name, field)
}

// Shutdown stops the runner's work: new runs are refused (Unavailable),
// queued runs end cancelled at once, running runs are cancelled and end
// cancelled (those waiting for an approval end interrupted: the wait is
// not durable), recorded in their traces and the run log, and then the run
// log is synced and closed. With an Engine, running runs are only no
// longer followed: they stay open in the run log for the next runner. It
// returns when every run has ended, or with ctx's error when ctx is done
// first (call it again to finish).
func (s *Runner) Shutdown(ctx context.Context) error {
	s.stopOnce.Do(func() {
		s.closing.Store(true)
		s.stopNow(errShuttingDown)
		close(s.stopSweeping)
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
		return fmt.Errorf("runner: runs still ending: %w", err)
	}
	s.closeOnce.Do(func() {
		s.closeErr = errors.Join(s.store.close(), s.tools.Close(), s.ws.close())
	})
	return s.closeErr
}
