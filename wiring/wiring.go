// Package wiring opens what a run or a tool call works with: the
// workspace, the tool runtime and the completion check under one resolved
// sandbox, the MCP servers and the trace; it closes what it opened.
//
// A run's own options (budgets, caps, approvals) are not its business: a
// run is set up by runner.Open, from a runner.Spec, which calls Open for
// its tools, check and trace. Tool calls outside a run (the API's, the MCP
// server's, `specloop spec`) call Open directly.
package wiring

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/internal/gitcheckout"
	"github.com/specloop/specloop/internal/wslock"
	"github.com/specloop/specloop/mcpclient"
	"github.com/specloop/specloop/sandbox"
	"github.com/specloop/specloop/telemetry"
	"github.com/specloop/specloop/tools"
	"github.com/specloop/specloop/trace"
	"github.com/specloop/specloop/transcript"
)

// Config is everything a run's setup depends on. The zero value is a run
// in the current directory with commands in the strongest sandbox
// available, no check and no trace.
type Config struct {
	// Dir is the workspace directory; "" means the current directory. It
	// is ignored when Root is set.
	Dir string
	// Root is an already-open workspace directory to use instead of Dir
	// (a server's held directory); it stays open.
	Root *os.Root
	// DisableCommands leaves run_command out of the tools offered.
	DisableCommands bool
	// Tools are documents of custom tools offered besides the built-in
	// ones (tools.Config.Extra).
	Tools []*tools.Spec
	// Sandbox confines run_command and the check. It is resolved once, by
	// Open, when commands are offered or a check is set.
	Sandbox sandbox.Policy
	// Check is the completion check's command line; "" means no check.
	Check string
	// CheckEnv adds NAME=value variables to the check's environment.
	CheckEnv []string
	// Telemetry, when set, observes the run: Options.Trace, Options.Check
	// and (with content enabled) Options.Tools are wrapped so that the
	// run's metrics and spans are recorded (see package telemetry).
	// TelemetryRun names the run's model and its parent span.
	Telemetry    *telemetry.Telemetry
	TelemetryRun telemetry.RunInfo
	// TracePath appends the trace to this file (see trace.Create). It wins
	// over TraceWriter.
	TracePath string
	// TraceWriter receives the trace when TracePath is empty; Close does
	// not close it.
	TraceWriter io.Writer
	// TraceSync is when the trace is fsynced, and the transcript.
	TraceSync trace.SyncPolicy
	// TranscriptPath appends the run's transcript to this file (created
	// 0600 in a 0700 directory; see package transcript); "" keeps none.
	// Its lines are redacted of the values of this process's variables
	// that hold secrets, of the sandbox's PassEnv variables and of
	// Secrets.
	TranscriptPath string
	Secrets        []string
	// LockDir, when set, makes the setup hold its workspace directory
	// against every other specloop process (package internal/wslock: a
	// lock file in LockDir named by the directory's identity) from Open to
	// Close, so that two runs never edit one directory at once. While
	// another process holds it, Open waits, calling Waiting once with what
	// the holder says of itself; with NoWait it fails at once with an
	// error wrapping ErrWorkspaceBusy. A run's setup sets it; a setup for
	// one tool call or a check of the tools does not. LockDir must lie
	// outside the workspace.
	LockDir string
	Waiting func(holder string)
	NoWait  bool
	// MCPServers are external MCP servers whose tools the run offers next
	// to the built-in ones, as NAME__tool: Open starts (or reaches) each
	// once, and Close stops them. Given to runner.Open, they are the
	// servers a run may name, and it opens those its spec names.
	MCPServers []mcpclient.Server
	// MCP configures the sessions with MCPServers (call timeout, where
	// stdio servers' stderr goes).
	MCP mcpclient.Config
}

// ErrWorkspaceBusy is wrapped by Open's error, with Config.NoWait, when
// another specloop process holds the workspace.
var ErrWorkspaceBusy = errors.New("another specloop run uses this workspace")

// Part names the piece of a setup that failed, so that a caller can say
// which of its inputs was wrong.
type Part string

// The parts of a setup, in the order Open builds them.
const (
	PartWorkspace  Part = "workspace"
	PartSandbox    Part = "sandbox"
	PartTools      Part = "tools"
	PartTrace      Part = "trace"
	PartTranscript Part = "transcript"
	PartMCP        Part = "mcp"
)

// Error is a failed setup: the part that failed and why.
type Error struct {
	Part Part
	Err  error
}

func (e *Error) Error() string { return string(e.Part) + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Setup is an opened run setup. Options is ready for agent.Run (add an
// Observer if wanted); Close releases what Open opened.
type Setup struct {
	// Options holds the tools, check and trace (runner.Open adds the
	// run's budgets and approvals).
	Options agent.Options
	// Workspace is the workspace the tools and the check work in.
	Workspace *tools.Workspace
	// Runtime is the built-in tools' runtime: Options.Tools, unless MCP
	// servers add theirs.
	Runtime *tools.Runtime
	// MCP is Options.Tools when Config.MCPServers were given: Runtime
	// with the servers' tools; nil otherwise.
	MCP *mcpclient.Runtime
	// Sandbox confines the runtime's commands and the check; nil when
	// commands are disabled and there is no check.
	Sandbox *sandbox.Sandbox
	// ObjectDirs are the object directories outside the workspace that
	// its git repository borrows, read from its alternates file when it
	// was opened (gitcheckout.Alternates): what its commands may read of
	// them (sandbox.Policy.ObjectDirs).
	ObjectDirs []string
	// Check is Options.Check (or what it wraps, with Telemetry set); nil
	// without a check.
	Check *tools.CommandCheck
	// Trace is the trace writer: Options.Trace, or what Options.Trace
	// wraps with Telemetry set; nil without a trace.
	Trace *trace.Writer
	// Transcript is the transcript's writer; nil without one. runner.Open
	// feeds it the run's progress.
	Transcript *transcript.Writer

	workspaceClosed bool
	closeTrace      bool
	lock            *wslock.Lock // held until Close, when Config.LockDir is set
}

// Open builds the setup cfg describes. A failure is an *Error naming the
// part that failed; nothing stays open after one.
func Open(cfg Config) (*Setup, error) { return OpenContext(context.Background(), cfg) }

// OpenContext is Open with a context, which bounds starting the MCP
// servers.
func OpenContext(ctx context.Context, cfg Config) (*Setup, error) {
	s := &Setup{}
	if err := s.open(ctx, cfg); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Setup) open(ctx context.Context, cfg Config) error {
	var err error
	if cfg.Root != nil {
		s.Workspace, err = tools.OpenWorkspaceIn(cfg.Root, ".")
	} else {
		s.Workspace, err = tools.OpenWorkspace(cmp.Or(cfg.Dir, "."))
	}
	if err != nil {
		return &Error{PartWorkspace, err}
	}
	// The object directories the workspace's repository borrows (an
	// isolated run's work tree), read now, before any command could
	// rewrite its alternates file, and fixed for the run.
	policy := cfg.Sandbox
	policy.ObjectDirs = s.objectDirs(cfg.Root)
	s.ObjectDirs = policy.ObjectDirs
	if !cfg.DisableCommands || cfg.Check != "" {
		sb, err := sandbox.New(policy)
		if err != nil {
			return &Error{PartSandbox, err}
		}
		s.Sandbox = sb
		// The runtime confines commands with the backend resolved here.
		policy = sb.Policy()
		policy.Backend = sb.Info().Backend
	}
	rt, err := tools.New(tools.Config{Workspace: s.Workspace, DisableCommands: cfg.DisableCommands, Sandbox: policy, Extra: cfg.Tools})
	if err != nil {
		return &Error{PartTools, err}
	}
	s.Runtime = rt
	s.Options = agent.Options{Tools: rt}
	if len(cfg.MCPServers) > 0 {
		mr, err := mcpclient.Open(ctx, rt, cfg.MCPServers, cfg.MCP)
		if err != nil {
			return &Error{PartMCP, err}
		}
		s.MCP, s.Options.Tools = mr, mr
	}
	if cfg.Check != "" {
		c := tools.NewCommandCheck(s.Workspace, cfg.Check)
		c.Env = cfg.CheckEnv
		c.Sandbox = s.Sandbox
		c.Redactor = cfg.Redactor() // its output reaches the RunResult
		s.Check, s.Options.Check = c, c
	}
	switch {
	case cfg.TracePath != "":
		tw, err := trace.Create(cfg.TracePath, cfg.TraceSync)
		if err != nil {
			return &Error{PartTrace, err}
		}
		s.Trace, s.closeTrace = tw, true
	case cfg.TraceWriter != nil:
		s.Trace = trace.NewWriter(cfg.TraceWriter, cfg.TraceSync)
	}
	if s.Trace != nil {
		s.Options.Trace = s.Trace
	}
	if cfg.TranscriptPath != "" {
		// Inside the workspace the model could read it and the patch would
		// hold it.
		if err := CheckRecordsDir(filepath.Dir(cfg.TranscriptPath), s.Workspace.Dir()); err != nil {
			return &Error{PartTranscript, err}
		}
		tw, err := transcript.Open(cfg.TranscriptPath, cfg.Redactor(), cfg.TraceSync)
		if err != nil {
			return &Error{PartTranscript, err}
		}
		s.Transcript = tw
	}
	// After the records' checks, before anything starts (MCP servers).
	if cfg.LockDir != "" {
		if err := s.lockWorkspace(ctx, cfg); err != nil {
			return &Error{PartWorkspace, err}
		}
	}
	if cfg.Telemetry != nil {
		run := cfg.Telemetry.Observe(cfg.TelemetryRun, s.Options.Trace)
		s.Options.Trace = run
		s.Options.Check = run.Check(s.Options.Check)
		s.Options.Tools = run.Tools(s.Options.Tools)
	}
	return nil
}

// objectDirs reads the object directories the opened workspace's
// repository borrows, through root (the Config's) or the workspace's
// directory opened again.
func (s *Setup) objectDirs(root *os.Root) []string {
	if root == nil {
		r, err := os.OpenRoot(s.Workspace.Dir())
		if err != nil {
			return nil
		}
		defer r.Close()
		root = r
	}
	dirs := gitcheckout.Alternates(root, s.Workspace.Dir())
	return dirs[:min(len(dirs), sandbox.MaxObjectDirs)]
}

// Close stops the MCP servers and closes the trace file and the workspace
// Open opened (not the Config's Root or TraceWriter). It may be called
// more than once.
func (s *Setup) Close() error {
	var errs []error
	if s.MCP != nil {
		errs = append(errs, s.MCP.Close())
		s.MCP = nil
	}
	if s.closeTrace && s.Trace != nil {
		errs = append(errs, s.Trace.Close())
		s.closeTrace = false
	}
	if s.Transcript != nil {
		errs = append(errs, s.Transcript.Close())
		s.Transcript = nil
	}
	if s.Workspace != nil && !s.workspaceClosed {
		errs = append(errs, s.Workspace.Close())
		s.workspaceClosed = true
	}
	if s.lock != nil { // last: the next run finds everything written
		errs = append(errs, s.lock.Release())
		s.lock = nil
	}
	return errors.Join(errs...)
}

// lockWorkspace takes the workspace's lock across processes (see
// Config.LockDir).
func (s *Setup) lockWorkspace(ctx context.Context, cfg Config) error {
	if err := CheckRecordsDir(cfg.LockDir, s.Workspace.Dir()); err != nil {
		return fmt.Errorf("the lock directory: %w", err)
	}
	fi, err := os.Stat(s.Workspace.Dir())
	if err != nil {
		return err
	}
	lctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	waiting := cfg.Waiting
	if cfg.NoWait {
		waiting = func(holder string) {
			cancel(fmt.Errorf("%w (%s)", ErrWorkspaceBusy, cmp.Or(holder, "a process that did not say who it is")))
		}
	}
	l, err := wslock.Acquire(lctx, cfg.LockDir, wslock.Key(fi, s.Workspace.Dir()), waiting)
	if err != nil {
		if cause := context.Cause(lctx); errors.Is(cause, ErrWorkspaceBusy) {
			return cause
		}
		return err
	}
	s.lock = l
	return nil
}

// Redactor is what a run's transcript is redacted with: the values of this
// process's variables that hold secrets, of the sandbox's PassEnv variables
// and of Secrets.
func (cfg Config) Redactor() *transcript.Redactor {
	secrets := slices.Clone(cfg.Secrets)
	for _, name := range cfg.Sandbox.PassEnv {
		secrets = append(secrets, os.Getenv(name))
	}
	return transcript.NewRedactor(os.Environ(), secrets...)
}
