// Command specloop runs code agents: locally (`specloop run`, `specloop
// demo`) or on a server (`specloop serve`, `specloop run --remote`), and
// reads their traces (`specloop trace show`).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/termsafe"
	"github.com/specloop/specloop/sandbox"
)

func main() {
	// `specloop sandbox-exec` is the sandbox's re-exec helper (it runs from
	// the sandbox package's init before this; Main reports misuse).
	sandbox.Main()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// Exit statuses. A run's exit reason maps to its own status so scripts can
// tell them apart without parsing output.
const (
	exitOK                  = 0
	exitInternal            = 1 // internal_error, or the command itself failed
	exitUsage               = 2
	exitMaxSteps            = 3
	exitInvalidModelOutput  = 4
	exitCheckFailed         = 5
	exitModelError          = 6
	exitTokenBudgetExceeded = 7
	exitInterrupted         = 8
	exitStuck               = 9
	exitContextWindow       = 10
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
}

func exitCodeFor(reason gen.ExitReason) int {
	if code, ok := exitCodes[reason]; ok {
		return code
	}
	return exitInternal
}

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env *cmdEnv, args []string) int
}

// cmdEnv is what commands get from main; tests pass buffers.
type cmdEnv struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	clock          *clock // nil: the wall clock (see realClock)
}

// clockFor is the clock for output written to w.
func (e *cmdEnv) clockFor(w io.Writer) clock {
	if e.clock != nil {
		return *e.clock
	}
	return realClock(termsafe.Exact(w))
}

// runText returns e for a command that prints what a run produced (the
// answer, the error, the patch, command output, a trace): its standard
// output and error pass the sanitiser (termsafe.Text) when they are a
// terminal or a pipe, so that nothing a model or a workspace wrote drives
// the person's terminal; a file gets the text exactly. Output that must
// stay exact everywhere (--json) is written to termsafe.Exact(e.stdout).
func (e *cmdEnv) runText() *cmdEnv {
	return &cmdEnv{stdin: e.stdin, stdout: termsafe.Guard(e.stdout), stderr: termsafe.Guard(e.stderr), clock: e.clock}
}

func (e *cmdEnv) errorf(format string, args ...any) {
	fmt.Fprintf(e.stderr, "specloop: "+format+"\n", args...)
}

func commands() []command {
	return []command{
		{"run", "run an agent on a task", runCmd},
		{"demo", "run the built-in demo: a scripted agent fixes a failing Go test", demoCmd},
		{"serve", "serve the HTTP API for remote runs (specloop run --remote)", serveCmd},
		{"worker", "execute the runs of serve --engine temporal", workerCmd},
		{"mcp", "serve the tools over MCP on stdio (for Claude Desktop, VS Code, Cursor…)", mcpCmd},
		{"show", "print what a run said and did (show RUN_ID)", showCmd},
		{"trace", "read traces (trace show FILE)", traceCmd},
		{"tools", "list the tools a model can call", toolsCmd},
		{"spec", "print the OpenAPI document everything is generated from", specCmd},
	}
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	env := &cmdEnv{stdin: stdin, stdout: stdout, stderr: stderr}
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 && args[0] == "help" {
			return helpCmd(ctx, env, args[1:])
		}
		usage(stdout)
		return exitOK
	case "sandbox-exec":
		env.errorf("sandbox-exec is internal: specloop starts it itself to run a command in a sandbox")
		return exitUsage
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, env, args[1:])
		}
	}
	env.errorf("unknown command %q", args[0])
	usage(stderr)
	return exitUsage
}

// helpCmd prints a command's help to standard output: `specloop help run`
// is `specloop run -h`.
func helpCmd(ctx context.Context, env *cmdEnv, args []string) int {
	for _, c := range commands() {
		if c.name == args[0] {
			out := &cmdEnv{stdin: env.stdin, stdout: env.stdout, stderr: env.stdout, clock: env.clock}
			return c.run(ctx, out, append([]string{"-h"}, args[1:]...))
		}
	}
	env.errorf("help: unknown command %q", args[0])
	usage(env.stderr)
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "specloop runs code agents: a model proposes actions, the runtime runs tools in a confined workspace,")
	fmt.Fprintln(w, "and every run ends with a structured result and a JSONL trace.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage: specloop COMMAND [flags]")
	fmt.Fprintln(w)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-7s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run `specloop help COMMAND` (or `specloop COMMAND -h`) for a command's flags.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Exit status of run and demo: 0 finished, 1 internal error, 2 usage error, 3 max_steps_exceeded,")
	fmt.Fprintln(w, "4 invalid_model_output, 5 check_failed, 6 model_error, 7 token_budget_exceeded, 8 interrupted, 9 stuck,")
	fmt.Fprintln(w, "10 context_window_exceeded, 130 cancelled.")
}
