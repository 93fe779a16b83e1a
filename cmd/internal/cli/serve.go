package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/internal/config"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/server"
	"github.com/specloop/specloop/trace"
	"github.com/specloop/specloop/wiring"
)

// TokenEnv is the environment variable that holds the bearer token of
// `serve` (and of `run --remote`) when no token file is given.
const TokenEnv = "SPECLOOP_TOKEN"

// shutdownTimeout bounds a graceful shutdown: running runs get this long
// to end cancelled.
const shutdownTimeout = 30 * time.Second

// Engine is where the runs of Serve execute.
type Engine interface {
	// Register adds the engine's flags.
	Register(fs *flag.FlagSet)
	// About is the paragraph of serve's help on where runs execute and
	// what a shutdown does to them.
	About() string
	// Open starts the engine (nil: the embedded one) for the runs under
	// root, the workspace root, and returns the func that releases it.
	// The error is a usage error and names the flag at fault.
	Open(root string, logger *slog.Logger) (runner.Engine, func(), error)
}

// Serve is the command `serve` with the runs on engine: it serves the HTTP
// API for remote runs until ctx ends.
func Serve(ctx context.Context, env *Env, args []string, engine Engine) int {
	fs := env.FlagSet("serve", "[flags]",
		"Serves the HTTP API for remote runs (see /openapi.yaml): runs execute in the background, at most\n"+
			"--max-concurrent at a time and one at a time per workspace; --queue more may wait (then 429).\n"+
			"Workspaces are directories under --workspace-root named by a relative path; a run without one\n"+
			"works in the root itself, and a run may read and write all of the root. Every run's trace is\n"+
			"DATA/traces/ID.jsonl, and DATA/runs.jsonl records each run (fsynced before it is acknowledged)\n"+
			"and its result, so a restarted server lists every run. DATA holds run results verbatim (answers,\n"+
			"patches, check output): it is made 0700, and defaults to the user's state directory:\n"+
			StateDirUsage("server")+". A --data inside --workspace-root, or containing it,\n"+
			"is refused: runs could read and forge the records.\n\n"+
			"Auth: the bearer token is read from --token-file, or else from $"+TokenEnv+". Without a token the\n"+
			"server only listens on a loopback address, unless --insecure is given, and only answers requests\n"+
			"whose Host header is a loopback name or address (localhost, 127.0.0.0/8, [::1]) or an --allowed-host\n"+
			"name (403 otherwise): a web page cannot reach it through DNS rebinding. A state-changing request\n"+
			"(any method but GET, HEAD, OPTIONS) that a browser sends for another site's page (Sec-Fetch-Site\n"+
			"other than same-origin, or a foreign Origin) gets 403, with or without a token.\n\n"+
			"Model keys come from the server's environment only (see Environment), never from requests.\n"+
			"MCP: /mcp serves the tools over MCP (streamable HTTP) on the workspace root, behind the same token\n"+
			"and Host check. --mcp NAME=COMMAND|URL configures external MCP servers that a run may choose with\n"+
			"mcp_servers: [NAME]; a client can never give a command. They run unsandboxed, as the server's user;\n"+
			"a stdio server gets none of the server's environment (its keys, its token) but PATH, HOME, the\n"+
			"locale and the like, and the variables --mcp-env names for it.\n\n"+
			engine.About())
	var cfg server.Config // the flags that configure the server go to it
	addr := fs.String("addr", "127.0.0.1:8080", "the address to listen on")
	fs.StringVar(&cfg.DataDir, "data", "", "the data directory: the run log and every run's trace; it must lie outside --workspace-root (default: "+StateDirUsage("server")+")")
	fs.StringVar(&cfg.WorkspaceRoot, "workspace-root", ".", "the directory that holds the workspaces runs and tool calls may use; runs may read and write all of it")
	fs.IntVar(&cfg.MaxConcurrent, "max-concurrent", runner.DefaultMaxConcurrent, "the most runs executing at once")
	fs.IntVar(&cfg.QueueSize, "queue", runner.DefaultQueueSize, "the most runs waiting to start; more are refused with 429")
	tokenFile := fs.String("token-file", "", "a file holding the bearer token clients must send (default: $"+TokenEnv+")")
	var toolsSpec ToolsSpecFlags
	toolsSpec.Register(fs)
	fs.BoolVar(&cfg.AllowCommands, "allow-commands", false, "offer run_command to runs and POST /v1/tools/run_command, and allow completion checks")
	insecure := fs.Bool("insecure", false, "allow listening on a non-loopback address without a token (anyone who can connect can run agents)")
	fs.Int64Var(&cfg.BodyLimit, "body-limit", server.DefaultBodyLimit, "the largest request body in bytes; larger ones get 413")
	fs.DurationVar(&cfg.TranscriptRetention, "transcript-retention", runner.DefaultTranscriptRetention, "how long a finished run's transcript is kept (its record and trace stay); 0 keeps them forever")
	syncPolicy := fs.String("sync", "none", "when run traces are fsynced: none, end (after run_finished) or every (each event); the run log is always fsynced")
	verbose := fs.Bool("v", false, "log every request (method, route, status, duration)")
	systemFile := fs.String("system-file", "", SystemFileUsage)
	fs.DurationVar(&cfg.ReadTimeout, "read-timeout", server.DefaultReadTimeout, "the longest a client may take to send a whole request, body included (its headers: 10 s); slower ones are cut off, as is a response write that stalls for 30 s")
	fs.IntVar(&cfg.MaxConnections, "max-connections", server.DefaultMaxConnections, "the most connections open at once; at the cap a new one closes the one idle the longest, or waits when all are busy")
	fs.IntVar(&cfg.MaxStreams, "max-streams", server.DefaultMaxStreams, "the most event streams open at once (at most --max-connections less a reserve of an eighth, 1 to 64); more get 429")
	fs.IntVar(&cfg.MaxStreamsPerClient, "max-streams-per-client", server.DefaultMaxStreamsPerClient, "the most event streams open from one client address; more get 429")
	var telFlags TelemetryFlags // see telemetry.go
	telFlags.Register(fs, true)
	fs.Func("allowed-host", "without a token, also answer requests whose Host header is this name (repeatable; default: loopback names only)", func(v string) error {
		if v == "" || strings.ContainsAny(v, "/ \t@?#*") {
			return errors.New("not a host name")
		}
		cfg.AllowedHosts = append(cfg.AllowedHosts, v)
		return nil
	})
	var cloneHosts []string
	fs.Func("clone-hosts", CloneHostsUsage, func(v string) (err error) {
		cloneHosts, err = ParseCloneHosts(v)
		return err
	})
	fs.DurationVar(&cfg.ApprovalTimeout, "approval-timeout", agent.DefaultApprovalTimeout, "how long a run's tool call waits for approval (POST /v1/runs/ID/approvals/CALL) before it is denied with reason timeout, unless the run gives approval_timeout_seconds")
	var sbFlags SandboxFlags
	sbFlags.Register(fs)
	engine.Register(fs)
	var mcpf MCPFlags
	mcpf.Register(fs, "an external MCP server runs may use (mcp_servers: [NAME]): NAME=COMMAND (stdio; split like a shell would, without one; with none of serve's environment but what --mcp-env lists) or NAME=URL (streamable HTTP); repeatable")
	fs.String("config", "", "a configuration file (TOML; see: specloop help config) whose keys are these flags in snake_case; the command line's flags override it")
	fs.String("profile", "", "with --config: apply the file's [profiles.NAME] table over its top-level keys")
	if path := scanFlag(args, "config"); path != "" {
		// The operator's file, so trusted: every key applies.
		f, err := config.Read(path)
		if err == nil && f == nil {
			err = fmt.Errorf("--config %s: no such file", path)
		}
		var set []config.Setting
		if err == nil {
			set, _, err = config.Apply(fs, f, nil, "", scanFlag(args, "profile"))
		}
		if err != nil {
			return env.Fail(ExitUsage, "serve: %v", err)
		}
		env.Errorf("serve: %d settings from %s", len(set), path)
	}
	if code, done := ParseNoArgs(fs, args); done {
		return code
	}
	for _, pos := range []struct {
		name  string
		value int64
	}{{"--max-concurrent", int64(cfg.MaxConcurrent)}, {"--queue", int64(cfg.QueueSize)}, {"--body-limit", cfg.BodyLimit},
		{"--max-connections", int64(cfg.MaxConnections)}, {"--max-streams", int64(cfg.MaxStreams)}, {"--max-streams-per-client", int64(cfg.MaxStreamsPerClient)}} {
		if pos.value < 1 {
			return env.Fail(ExitUsage, "serve: %s must be at least 1", pos.name)
		}
	}
	if cfg.TranscriptRetention < 0 {
		return env.Fail(ExitUsage, "serve: --transcript-retention must not be negative (0 keeps transcripts forever)")
	}
	var err error
	cfg.TraceSync, err = trace.ParseSyncPolicy(*syncPolicy)
	if err != nil {
		return env.Fail(ExitUsage, "serve: --sync: %v", err)
	}
	cfg.Sandbox, err = sbFlags.Policy()
	if err != nil {
		return env.Fail(ExitUsage, "serve: %v", err)
	}
	cfg.MCPServers, err = mcpf.Servers()
	if err != nil {
		return env.Fail(ExitUsage, "serve: %v", err)
	}
	cfg.ToolSpecs, err = toolsSpec.Load()
	if err != nil {
		return env.Fail(ExitUsage, "serve: %v", err)
	}
	cfg.Token, err = ReadToken(*tokenFile)
	if err != nil {
		return env.Fail(ExitUsage, "serve: %v", err)
	}
	system, err := ReadSystemFile(*systemFile)
	if err != nil {
		return env.Fail(ExitUsage, "serve: --system-file: %v", err)
	}
	if cfg.DataDir, err = RecordsDir("--data", cfg.DataDir, "server", cfg.WorkspaceRoot); err != nil {
		return env.Fail(ExitUsage, "serve: %v", err)
	}
	if len(cloneHosts) > 0 {
		// The cache, DATA/clones, is outside the workspace root as DATA is.
		cfg.Clones = &runner.Cloner{Hosts: cloneHosts}
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	cfg.Logger = slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: level}))
	logger := cfg.Logger
	tel, err := telFlags.Open(ctx, true)
	if err != nil {
		return env.Fail(ExitUsage, "serve: %v", err)
	}
	if !isLoopback(*addr) {
		switch {
		case cfg.Token == "" && !*insecure:
			return env.Fail(ExitUsage, "serve: refusing to listen on %s, which is not a loopback address, without a token: set $%s or --token-file (or pass --insecure)", *addr, TokenEnv)
		case cfg.Token == "":
			fmt.Fprintf(env.Stderr, "\n"+
				"  ************************************************************************\n"+
				"  WARNING: --insecure: serving on %s WITHOUT A TOKEN.\n"+
				"  Anyone who can reach this address can start agent runs%s\n"+
				"  in %s. Use a token ($%s or --token-file) instead.\n"+
				"  Clients must send a loopback or --allowed-host name as the Host.\n"+
				"  ************************************************************************\n\n",
				*addr, commandsNote(cfg.AllowCommands), cfg.WorkspaceRoot, TokenEnv)
		default:
			logger.Warn("the API is plain HTTP: put a TLS-terminating proxy in front of it so the token is not sent in clear", "addr", *addr)
		}
	}
	eng, closeEngine, err := engine.Open(cfg.WorkspaceRoot, logger)
	if err != nil {
		return env.Fail(ExitUsage, "serve: %v", err)
	}
	defer closeEngine()
	cfg.Engine = eng
	mcpH, mcpStop, mcpSetup, err := mcpHandler(wiring.Config{Dir: cfg.WorkspaceRoot, DisableCommands: !cfg.AllowCommands, Sandbox: cfg.Sandbox}, logger)
	if err != nil {
		return env.Fail(ExitUsage, "serve: /mcp: %v", err)
	}
	defer mcpSetup.Close()
	defer mcpStop()
	cfg.MCPHandler = mcpH
	// A run and a `specloop run` never edit one workspace at once.
	if cfg.LockDir, err = StateDir("locks"); err != nil {
		return env.Fail(ExitUsage, "serve: the workspace lock's directory: %v", err)
	}
	// Transcripts hold content (code, outputs): kept a bounded time
	// (--transcript-retention). Approval waits are in memory: a server
	// that stops ends the waiting runs interrupted.
	cfg.Telemetry = tel.Tel
	cfg.MCP = mcpf.Config(env.Stderr)
	cfg.System = system // the runs' models are built with it, on the workers too (Spec.System)
	srv, err := server.New(cfg)
	var we *wiring.Error
	if errors.As(err, &we) && we.Part == wiring.PartTools && len(cfg.ToolSpecs) > 0 {
		return env.Fail(ExitUsage, "serve: --tools-spec: %v", we.Err)
	}
	if err != nil {
		return env.Fail(ExitInternal, "serve: %v", err)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		env.Errorf("serve: %v", err)
		_ = srv.Shutdown(context.Background())
		return ExitUsage
	}
	if telFlags.metricsAddr != "" {
		if err := tel.serveMetrics(telFlags.metricsAddr, srv.LocalHost, logger); err != nil {
			env.Errorf("serve: %v", err)
			_ = srv.Shutdown(context.Background())
			return ExitUsage
		}
	}
	hs := srv.HTTPServer()
	hs.RegisterOnShutdown(mcpStop)
	served := make(chan error, 1)
	go func() { served <- hs.Serve(srv.Listener(ln)) }()
	logger.Info("serving", "url", "http://"+ln.Addr().String(), "data", cfg.DataDir, "workspace_root", cfg.WorkspaceRoot,
		"max_concurrent", cfg.MaxConcurrent, "queue", cfg.QueueSize, "commands", cfg.AllowCommands, "auth", cfg.Token != "")
	logger.Info("web page", "url", "http://"+ln.Addr().String()+server.UIPath)

	code := ExitOK
	select {
	case <-ctx.Done():
		logger.Info("shutting down: refusing new runs, cancelling the running ones")
	case err := <-served:
		logger.Error("the HTTP server stopped", "err", err)
		code = ExitInternal
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		logger.Error("shutdown", "err", err)
		code = ExitInternal
	}
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		logger.Error("shutdown", "err", err)
		code = ExitInternal
	}
	if err := tel.Close(sctx); err != nil {
		logger.Error("shutdown", "err", err)
		code = ExitInternal
	}
	logger.Info("stopped")
	return code
}

func commandsNote(allowed bool) string {
	if allowed {
		return " and shell commands"
	}
	return ""
}

// ReadToken returns the token from path, or from $SPECLOOP_TOKEN when path
// is empty. The token is never printed.
func ReadToken(path string) (string, error) {
	if path == "" {
		return strings.TrimSpace(os.Getenv(TokenEnv)), nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("--token-file: %w", err)
	}
	token := strings.TrimSpace(string(data))
	if token == "" {
		return "", errors.New("--token-file: the file is empty")
	}
	if strings.ContainsAny(token, "\r\n") {
		return "", errors.New("--token-file: the token must be one line")
	}
	return token, nil
}

// isLoopback reports whether addr (host:port) listens on loopback only.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// StateHomeEnv names the XDG base directory of a user's state files.
const StateHomeEnv = "XDG_STATE_HOME"

// StateDirUsage describes the default of a directory of run records, sub
// of specloop's state directory, for help texts.
func StateDirUsage(sub string) string {
	return "$" + StateHomeEnv + "/specloop/" + sub + ", or ~/.local/state/specloop/" + sub
}

// StateDir returns sub of specloop's directory in the user's state
// directory: $XDG_STATE_HOME/specloop (an absolute $XDG_STATE_HOME only,
// as the XDG specification says), else ~/.local/state/specloop (on
// Windows, %LocalAppData%\specloop).
func StateDir(sub string) (string, error) {
	if d := os.Getenv(StateHomeEnv); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "specloop", sub), nil
	}
	if runtime.GOOS == "windows" {
		d, err := os.UserCacheDir() // %LocalAppData%
		if err != nil {
			return "", err
		}
		return filepath.Join(d, "specloop", sub), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".local", "state", "specloop", sub), nil
}

// RecordsDir returns the directory of run records that flag names (dir,
// or by default sub of the user's state directory, created 0700), after
// checking that runs cannot reach it: it must lie outside root, the
// workspace root, and must not contain it.
func RecordsDir(flag, dir, sub, root string) (string, error) {
	if _, err := os.Stat(root); err != nil {
		return "", fmt.Errorf("--workspace-root: %w", err)
	}
	if dir == "" {
		d, err := StateDir(sub)
		if err != nil {
			return "", fmt.Errorf("%s: no default (set $%s or $HOME, or give %s): %w", flag, StateHomeEnv, flag, err)
		}
		dir = d
	}
	if err := wiring.CheckRecordsDir(dir, root); err != nil {
		if errors.Is(err, wiring.ErrRecordsInWorkspace) {
			return "", fmt.Errorf("%s %s must lie outside --workspace-root %s, and not contain it: runs may read and write the whole workspace root, so they could read and forge the run records; give a %s elsewhere (by default: %s)",
				flag, dir, root, flag, StateDirUsage(sub))
		}
		return "", fmt.Errorf("%s: %w", flag, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("%s: %w", flag, err)
	}
	return dir, nil
}

// scanFlag returns the last value of flag name on a command line not yet
// parsed (-name V, --name V, -name=V or --name=V, before any "--"), for
// the flags that decide how the others are read. A malformed one is left
// for the parse to report.
func scanFlag(args []string, name string) string {
	v := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || !strings.HasPrefix(a, "-") {
			if a == "--" {
				break
			}
			continue
		}
		a = strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		if a == name && i+1 < len(args) {
			v, i = args[i+1], i+1
		} else if val, ok := strings.CutPrefix(a, name+"="); ok {
			v = val
		}
	}
	return v
}

// CloneHostsUsage is the usage of --clone-hosts (serve, worker).
const CloneHostsUsage = "the hosts whose repositories runs may name by URL (repo_url, with isolation worktree): HOST[:PORT],...; only https URLs of them are cloned, into a cache outside --workspace-root (default: none, and repo_url is refused)"

// ParseCloneHosts parses --clone-hosts: HOST or HOST:PORT, separated by
// commas.
func ParseCloneHosts(v string) ([]string, error) {
	var hosts []string
	for h := range strings.SplitSeq(v, ",") {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		if strings.ContainsAny(h, "/@?#* \t\\") || strings.Contains(h, "://") {
			return nil, fmt.Errorf("%q is not HOST or HOST:PORT", h)
		}
		if host, port, err := net.SplitHostPort(h); err == nil {
			if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || host == "" {
				return nil, fmt.Errorf("%q is not HOST or HOST:PORT", h)
			}
		} else if strings.Count(h, ":") == 1 {
			return nil, fmt.Errorf("%q is not HOST or HOST:PORT", h)
		}
		hosts = append(hosts, h)
	}
	if len(hosts) == 0 {
		return nil, errors.New("names no host")
	}
	return hosts, nil
}
