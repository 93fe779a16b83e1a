// Command specloop runs code agents: locally (`specloop run`, `specloop
// demo`) or on a server (`specloop serve`, `specloop run --remote`), and
// reads their traces (`specloop trace show`). The Temporal engine is a
// command of its own, specloop-temporal, so that this one does not carry
// it.
package main

import (
	"context"
	"io"
	"os"
	"slices"

	"golang.org/x/term"

	"github.com/specloop/specloop/cmd/internal/cli"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/termsafe"
	"github.com/specloop/specloop/telemetry"
)

func main() { cli.Main(run) }

// Exit statuses. A run's exit reason maps to its own status so scripts can
// tell them apart without parsing output.
const (
	exitOK                  = cli.ExitOK
	exitInternal            = cli.ExitInternal // internal_error, or the command itself failed
	exitUsage               = cli.ExitUsage
	exitMaxSteps            = 3
	exitInvalidModelOutput  = 4
	exitCheckFailed         = 5
	exitModelError          = 6
	exitTokenBudgetExceeded = 7
	exitInterrupted         = 8
	exitStuck               = 9
	exitContextWindow       = 10
	exitSetupFailed         = 11
	exitCancelled           = 130
)

var exitCodes = map[gen.ExitReason]int{
	gen.ExitReasonFinished:              exitOK,
	gen.ExitReasonInternalError:         exitInternal,
	gen.ExitReasonMaxStepsExceeded:      exitMaxSteps,
	gen.ExitReasonInvalidModelOutput:    exitInvalidModelOutput,
	gen.ExitReasonCheckFailed:           exitCheckFailed,
	gen.ExitReasonModelError:            exitModelError,
	gen.ExitReasonTokenBudgetExceeded:   exitTokenBudgetExceeded,
	gen.ExitReasonInterrupted:           exitInterrupted,
	gen.ExitReasonStuck:                 exitStuck,
	gen.ExitReasonContextWindowExceeded: exitContextWindow,
	gen.ExitReasonCancelled:             exitCancelled,
	gen.ExitReasonSetupFailed:           exitSetupFailed,
}

func exitCodeFor(reason gen.ExitReason) int {
	if code, ok := exitCodes[reason]; ok {
		return code
	}
	return exitInternal
}

// runText returns env for a command that prints what a run produced (the
// answer, the error, the patch, command output, a trace): its standard
// output and error pass the sanitiser (termsafe.Text) when they are a
// terminal or a pipe, so that nothing a model or a workspace wrote drives
// the person's terminal; a file gets the text exactly. Output that must
// stay exact everywhere (--json) is written to termsafe.Exact(env.Stdout).
func runText(env *cli.Env) *cli.Env {
	e := *env
	e.Stdout, e.Stderr = termsafe.Guard(env.Stdout), termsafe.Guard(env.Stderr)
	return &e
}

// The environment variables commands read (see the help pages).
var (
	modelEnv = []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"}
	localEnv = []string{cli.StateHomeEnv, "XDG_CONFIG_HOME", telemetry.EnvEndpoint, "PATH"}
)

func commands() []cli.Command {
	return []cli.Command{
		{Name: "run", Summary: "run an agent on a task", Run: runCmd,
			Examples: []string{
				`specloop run --model openai:gpt-4.1 --check "go test ./..." "fix the failing test"`,
				`specloop run --model openai:qwen2.5-coder --base-url http://localhost:8000/v1 --workspace ./myproject --prompt-file task.md`,
				`specloop run --remote http://127.0.0.1:8080 --model anthropic:claude-sonnet-4-5 --workspace proj "explain main.go"`,
			},
			Env: slices.Concat(modelEnv, []string{cli.TokenEnv}, localEnv)},
		{Name: "chat", Summary: "open a session: type a task, watch it, type follow-ups (a conversation of runs)", Run: chatCmd,
			Examples: []string{
				`specloop chat --model openai:gpt-4.1 --check "go test ./..."`,
				`specloop chat --model anthropic:claude-sonnet-4-5 --approval writes`,
				`specloop chat --continue 1f0c9a3e5b7d2468`,
			},
			Env: slices.Concat(modelEnv, localEnv)},
		{Name: "demo", Summary: "run the built-in demo: a scripted agent fixes a failing Go test", Run: demoCmd,
			Examples: []string{"specloop demo", "specloop demo --keep", "specloop demo --json --trace demo.jsonl"},
			Env:      []string{"PATH"}},
		{Name: "serve", Summary: "serve the HTTP API for remote runs (specloop run --remote)", Run: serveCmd,
			Examples: []string{
				"specloop serve --workspace-root ./workspaces --allow-commands",
				"specloop serve --addr 0.0.0.0:8080 --token-file token.txt --workspace-root /srv/work",
				"specloop serve --metrics-addr 127.0.0.1:9464 --otel",
			},
			Env: slices.Concat(modelEnv, []string{cli.TokenEnv}, localEnv)},
		{Name: "mcp", Summary: "serve the tools over MCP on stdio (for Claude Desktop, VS Code, Cursor…)", Run: mcpCmd,
			Examples: []string{"specloop mcp --workspace .", "specloop mcp --workspace . --sandbox bwrap", "specloop mcp --no-commands"},
			Env:      []string{"PATH"}},
		{Name: "eval", Summary: "run a task file: each attempt in its own git work tree, graded by the task's test (eval compare A B)", Run: evalCmd,
			Examples: []string{
				"specloop eval tasks.jsonl --model openai:gpt-4.1 --parallel 4 --attempts 3 --out results/gpt-4.1",
				"specloop eval compare results/gpt-4.1 results/claude",
			},
			Env: slices.Concat(modelEnv, localEnv)},
		{Name: "acp", Summary: "serve sessions to an editor over the Agent Client Protocol on stdio (Zed, JetBrains, Neovim)", Run: acpCmd,
			Examples: []string{"specloop acp --approval writes", `specloop acp --model anthropic:claude-sonnet-4-5 --check "go test ./..."`},
			Env:      slices.Concat(modelEnv, localEnv)},
		{Name: "config", Summary: "print the settings a run would use and where each came from (help config: the files)", Run: configCmd,
			Examples: []string{"specloop config", "specloop config --workspace ./myproject --profile local"},
			Env:      []string{"XDG_CONFIG_HOME"}},
		{Name: "show", Summary: "print what a run said and did (show RUN_ID)", Run: showCmd,
			Examples: []string{
				"specloop show 1f0c9a3e5b7d2468",
				"specloop show --follow 1f0c9a3e5b7d2468",
				"specloop show --remote http://127.0.0.1:8080 1f0c9a3e5b7d2468",
			},
			Env: []string{cli.StateHomeEnv, cli.TokenEnv}},
		{Name: "trace", Summary: "read traces (trace show RUN_ID|FILE)", Run: traceCmd,
			Examples: []string{"specloop trace show 1f0c9a3e5b7d2468", "specloop trace show run.jsonl", "specloop trace show ~/.local/state/specloop/server/traces/1f0c9a3e5b7d2468.jsonl"}},
		{Name: "tools", Summary: "list the tools a model can call", Run: toolsCmd,
			Examples: []string{"specloop tools", "specloop tools --json --no-commands"}},
		{Name: "spec", Summary: "print the OpenAPI document everything is generated from", Run: specCmd,
			Examples: []string{"specloop spec > agent.yaml", "specloop spec | grep operationId"}},
		{Name: "version", Summary: "print the version and the revision it was built from", Run: cli.Version,
			Examples: []string{"specloop version", "specloop --version"}},
	}
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "worker" || len(args) > 1 && args[0] == "help" && args[1] == "worker" {
		return temporalMoved(stderr, "worker", "worker", "")
	}
	// Plain `specloop` at the keyboard opens a session; anywhere else it
	// prints the usage.
	if len(args) == 0 && isTerminal(stdin) && isTerminal(stdout) {
		args = []string{"chat"}
	}
	p := cli.Program{Name: "specloop", Commands: commands(),
		About: "specloop runs code agents: a model proposes actions, the runtime runs tools in a confined workspace,\n" +
			"and every run ends with a structured result and a JSONL trace.",
		Notes: "Exit status of run and demo: 0 finished, 1 internal error, 2 usage error, 3 max_steps_exceeded,\n" +
			"4 invalid_model_output, 5 check_failed, 6 model_error, 7 token_budget_exceeded, 8 interrupted, 9 stuck,\n" +
			"10 context_window_exceeded, 11 setup_failed, 130 cancelled.\n\n" +
			"Runs as Temporal workflows (serve and worker) are a command of their own: specloop-temporal."}
	return p.Run(ctx, args, stdin, stdout, stderr)
}

// isTerminal reports whether v, a standard stream, is a terminal.
func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
