// Package cli is what specloop's commands share: a program of subcommands
// (help, usage, exit statuses), the standard streams a command gets, the
// flags several commands take (sandbox, MCP servers, custom tools,
// telemetry) and `serve`, the HTTP server, whose engine the command
// chooses: `specloop serve` runs the embedded engine, `specloop-temporal
// serve` the Temporal one.
package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/specloop/specloop/sandbox"
)

// The exit statuses every command shares; `specloop run` adds one per exit
// reason.
const (
	ExitOK       = 0
	ExitInternal = 1 // internal_error, or the command itself failed
	ExitUsage    = 2
)

// Env is what a command gets from main; tests pass buffers.
type Env struct {
	Prog           string // the program's name, which its messages start with
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	cmd            *Command // the command running, whose help FlagSet prints
}

// Errorf prints a message of the program to standard error.
func (e *Env) Errorf(format string, args ...any) {
	fmt.Fprintf(e.Stderr, e.Prog+": "+format+"\n", args...)
}

// Fail prints a message of the program to standard error, as Errorf, and
// returns code, the command's exit status: a command that fails ends with
// `return env.Fail(ExitUsage, "run: %v", err)`.
func (e *Env) Fail(code int, format string, args ...any) int {
	e.Errorf(format, args...)
	return code
}

// Command is one subcommand.
type Command struct {
	Name    string
	Summary string
	// Examples open the command's help page, one command line each; Env
	// names the environment variables it reads (see envHelp).
	Examples []string
	Env      []string
	Run      func(ctx context.Context, env *Env, args []string) int
}

// Program is a command of subcommands.
type Program struct {
	Name     string
	About    string // what `help` prints above the commands
	Notes    string // and below them
	Commands []Command
}

// Main runs the program that run is on the process's arguments and
// streams, until SIGINT or SIGTERM cancels its context, and exits with its
// status.
func Main(run func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int) {
	// `PROG sandbox-exec` is the sandbox's re-exec helper (it runs from
	// the sandbox package's init before this; Main reports misuse).
	sandbox.Main()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// Run runs the subcommand args name; a nil stdin reads as empty.
func (p *Program) Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	env := &Env{Prog: p.Name, Stdin: stdin, Stdout: stdout, Stderr: stderr}
	if len(args) == 0 {
		p.usage(stderr)
		return ExitUsage
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 && args[0] == "help" {
			// `PROG help run` is `PROG run --help`, on standard output.
			if c := p.command(args[1]); c != nil {
				env.Stderr, env.cmd = stdout, c
				return c.Run(ctx, env, append([]string{"-h"}, args[2:]...))
			}
			return p.unknown(env, "help: ", args[1])
		}
		p.usage(stdout)
		return ExitOK
	case "--version", "-version":
		args = append([]string{"version"}, args[1:]...)
	case "sandbox-exec":
		return env.Fail(ExitUsage, "sandbox-exec is internal: %s starts it itself to run a command in a sandbox", p.Name)
	}
	if c := p.command(args[0]); c != nil {
		env.cmd = c
		return c.Run(ctx, env, args[1:])
	}
	return p.unknown(env, "", args[0])
}

// unknown reports the unknown command name in two lines, the closest
// command's name among them.
func (p *Program) unknown(env *Env, prefix, name string) int {
	var names []string
	for _, c := range p.Commands {
		names = append(names, c.Name)
	}
	return env.Fail(ExitUsage, "%sunknown command %q%s\nrun '%s help' for usage", prefix, name, didYouMean(name, names, ""), p.Name)
}

func (p *Program) command(name string) *Command {
	if i := slices.IndexFunc(p.Commands, func(c Command) bool { return c.Name == name }); i >= 0 {
		return &p.Commands[i]
	}
	return nil
}

func (p *Program) usage(w io.Writer) {
	fmt.Fprintf(w, "%s\n\nUsage: %s COMMAND [flags]\n\n", p.About, p.Name)
	for _, c := range p.Commands {
		fmt.Fprintf(w, "  %-7s %s\n", c.Name, c.Summary)
	}
	fmt.Fprintf(w, "\nRun `%s help COMMAND` (or `%s COMMAND --help`) for a command's examples and flags.\n", p.Name, p.Name)
	if p.Notes != "" {
		fmt.Fprintf(w, "\n%s\n", p.Notes)
	}
}
