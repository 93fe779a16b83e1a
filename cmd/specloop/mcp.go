package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/specloop/specloop/mcpclient"
	"github.com/specloop/specloop/mcpserver"
	"github.com/specloop/specloop/wiring"
)

// mcpFlags are --mcp (repeatable) and --mcp-timeout, of run and serve.
// Locally and on a server, --mcp is NAME=COMMAND or NAME=URL; with
// run --remote it is the NAME of a server the remote server configured.
type mcpFlags struct {
	values  []string
	timeout time.Duration
}

func (f *mcpFlags) register(fs *flag.FlagSet, usage string) {
	fs.Func("mcp", usage, func(v string) error {
		f.values = append(f.values, v)
		return nil
	})
	fs.DurationVar(&f.timeout, "mcp-timeout", mcpclient.DefaultCallTimeout, "the longest one call of an MCP server's tool may take")
}

// servers parses the NAME=COMMAND and NAME=URL values; a name given twice
// is an error.
func (f *mcpFlags) servers() ([]mcpclient.Server, error) {
	if f.timeout <= 0 {
		return nil, errors.New("--mcp-timeout must be positive")
	}
	var out []mcpclient.Server
	seen := map[string]bool{}
	for _, v := range f.values {
		s, err := mcpclient.ParseServer(v)
		if err != nil {
			return nil, fmt.Errorf("--mcp: %w", err)
		}
		if seen[s.Name] {
			return nil, fmt.Errorf("--mcp: the server name %q is given twice", s.Name)
		}
		seen[s.Name] = true
		out = append(out, s)
	}
	return out, nil
}

// names returns the values as names of servers configured on a remote
// server.
func (f *mcpFlags) names() ([]string, error) {
	for _, v := range f.values {
		if strings.Contains(v, "=") {
			return nil, fmt.Errorf("--mcp %s: with --remote, give the NAME of a server the remote server was started with (serve --mcp NAME=...), not a command or URL", strings.SplitN(v, "=", 2)[0])
		}
	}
	return f.values, nil
}

func (f *mcpFlags) config(stderr io.Writer) mcpclient.Config {
	return mcpclient.Config{CallTimeout: f.timeout, Stderr: stderr}
}

func mcpCmd(ctx context.Context, env *cmdEnv, args []string) int {
	fs := newFlagSet(env, "mcp", "[flags]",
		"Serves the tools over the Model Context Protocol on standard input and output, for MCP clients\n"+
			"(Claude Desktop, VS Code, Cursor…): the spec's tools with the spec's schemas, each call validated,\n"+
			"confined to --workspace and, for run_command, run in the sandbox, as in a run. A tool failure is\n"+
			"a result with isError and the error code. Logs go to standard error.")
	workspace := fs.String("workspace", ".", "the directory the file tools and commands are confined to")
	noCommands := fs.Bool("no-commands", false, "do not offer run_command")
	var sb sandboxFlags
	sb.register(fs)
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if fs.NArg() > 0 {
		env.errorf("mcp: unexpected argument %q", fs.Arg(0))
		fs.Usage()
		return exitUsage
	}
	policy, err := sb.policy()
	if err != nil {
		env.errorf("mcp: %v", err)
		return exitUsage
	}
	setup, code := openSetup(env, "mcp", nil, wiring.Config{Dir: *workspace, DisableCommands: *noCommands, Sandbox: policy}, true)
	if setup == nil {
		return code
	}
	defer setup.Close()
	logger := slog.New(slog.NewTextHandler(env.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv, err := mcpserver.New(setup.Runtime, mcpserver.Config{Logger: logger})
	if err != nil {
		env.errorf("mcp: %v", err)
		return exitInternal
	}
	in := env.stdin
	if in == nil {
		in = strings.NewReader("")
	}
	err = srv.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{env.stdout}})
	if err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) && !errors.Is(err, mcp.ErrConnectionClosed) {
		env.errorf("mcp: %v", err)
		return exitInternal
	}
	return exitOK
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// mcpHandler serves the tools of a runtime on root over streamable HTTP,
// for /mcp of `specloop serve`. The SDK's DNS-rebinding protection stays
// on: a request that reached a loopback address naming another Host is
// refused. Call stop when the HTTP server shuts down: it ends the
// requests in flight (an idle session's event stream would otherwise hold
// the shutdown up); then close the setup.
func mcpHandler(cfg wiring.Config, logger *slog.Logger) (h http.Handler, stop func(), setup *wiring.Setup, err error) {
	setup, err = wiring.Open(cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	srv, err := mcpserver.New(setup.Runtime, mcpserver.Config{Logger: logger})
	if err != nil {
		setup.Close()
		return nil, nil, nil, err
	}
	// Sessions are capped in all and per client address, and an idle one
	// is closed (mcpserver's defaults).
	sh := mcpserver.NewHTTPHandler(srv, mcpserver.HTTPOptions{Logger: logger})
	down, stop := context.WithCancel(context.Background())
	h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		defer context.AfterFunc(down, cancel)()
		sh.ServeHTTP(w, r.WithContext(ctx))
	})
	return h, stop, setup, nil
}
