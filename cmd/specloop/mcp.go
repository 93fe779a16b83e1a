package main

import (
	"context"
	"errors"
	"io"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/specloop/specloop/cmd/internal/cli"
	"github.com/specloop/specloop/mcpserver"
	"github.com/specloop/specloop/wiring"
)

func mcpCmd(ctx context.Context, env *cli.Env, args []string) int {
	fs := env.FlagSet("mcp", "[flags]",
		"Serves the tools over the Model Context Protocol on standard input and output, for MCP clients\n"+
			"(Claude Desktop, VS Code, Cursor…): the spec's tools with the spec's schemas, each call validated,\n"+
			"confined to --workspace and, for run_command, run in the sandbox, as in a run. A tool failure is\n"+
			"a result with isError and the error code. Logs go to standard error.")
	workspace := fs.String("workspace", ".", "the directory the file tools and commands are confined to")
	noCommands := fs.Bool("no-commands", false, "do not offer run_command")
	var sb cli.SandboxFlags
	sb.Register(fs)
	if code, done := cli.ParseNoArgs(fs, args); done {
		return code
	}
	policy, err := sb.Policy()
	if err != nil {
		return env.Fail(exitUsage, "mcp: %v", err)
	}
	setup, code := openSetup(ctx, env, "mcp", nil, wiring.Config{Dir: *workspace, DisableCommands: *noCommands, Sandbox: policy}, true)
	if setup == nil {
		return code
	}
	defer setup.Close()
	logger := slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv, err := mcpserver.New(setup.Runtime, mcpserver.Config{Logger: logger})
	if err != nil {
		return env.Fail(exitInternal, "mcp: %v", err)
	}
	err = srv.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(env.Stdin), Writer: nopWriteCloser{env.Stdout}})
	if err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) && !errors.Is(err, mcp.ErrConnectionClosed) {
		return env.Fail(exitInternal, "mcp: %v", err)
	}
	return exitOK
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
