package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/cmd/internal/cli"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/termsafe"
	"github.com/specloop/specloop/sdk"
)

// approvalFlags choose a run's approval policy; the questions are asked on
// the terminal.
type approvalFlags struct {
	policy  string
	timeout time.Duration
}

func (f *approvalFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.policy, "approval", string(gen.ApprovalPolicyNever), "which tool calls wait for your approval on the terminal: never, commands (run_command), writes (commands and file writes) or always")
	fs.DurationVar(&f.timeout, "approval-timeout", agent.DefaultApprovalTimeout, "how long a call waits for your answer before it is denied with reason timeout")
}

// open checks the flags and returns, when the policy asks, the terminal
// approver. A policy that asks needs standard input to be a terminal:
// without one the run would wait for an answer nobody can give.
//
// With lines set (a chat session's input) the questions read their answers
// from lines instead of the terminal.
func (f *approvalFlags) open(env *cli.Env, lines chan lineOrErr) (*terminalApprover, error) {
	p := gen.ApprovalPolicy(f.policy)
	switch {
	case !p.Valid():
		return nil, fmt.Errorf("--approval must be one of never, commands, writes and always")
	case f.timeout <= 0:
		return nil, errors.New("--approval-timeout must be positive")
	case p == gen.ApprovalPolicyNever:
		return nil, nil
	case lines != nil:
		return &terminalApprover{out: env.Stderr, lines: lines}, nil
	}
	if !isTerminal(env.Stdin) {
		return nil, fmt.Errorf("--approval %s asks on the terminal, but standard input is not a terminal (run it in one, or use --approval never)", p)
	}
	return &terminalApprover{in: env.Stdin, out: env.Stderr}, nil
}

// terminalApprover asks a person on the terminal: it shows the tool and
// the call's arguments and reads y (approve), n (deny, then an optional
// reason for the model) or a (approve this tool for the rest of the run).
// Questions and answers use standard error and standard input, so that
// standard output stays the run's own.
type terminalApprover struct {
	in    io.Reader
	out   io.Writer
	lines chan lineOrErr // started on the first question
}

type lineOrErr struct {
	line string
	err  error
}

// Approve asks about req's call.
func (a *terminalApprover) Approve(ctx context.Context, req agent.ApprovalRequest) (agent.Approval, error) {
	if a.lines == nil { // the terminal's lines are read from the first question on
		a.lines = readLines(a.in, 1)
	}
	// Lines typed before the question are no answer to it.
	for len(a.lines) > 0 {
		<-a.lines
	}
	fmt.Fprintf(a.out, "\napproval needed: step %d calls %s (call %s)\n", req.Step, oneLine(req.Call.ToolName, maxNameChars), oneLine(deref(req.Call.CallId), maxNameChars))
	if req.Reason != "" {
		fmt.Fprintf(a.out, "  note: %s\n", oneLine(req.Reason, 400))
	}
	describeArguments(a.out, req.Call.Arguments)
	for {
		fmt.Fprint(a.out, "run it? [y]es, [n]o, [a]lways for this tool in this run: ")
		answer, err := a.readLine(ctx)
		if err != nil {
			return agent.Approval{}, err
		}
		switch strings.ToLower(strings.TrimSpace(answer)) {
		case "y", "yes":
			return agent.Approval{Decision: gen.ApprovalDecisionApprove}, nil
		case "a", "always":
			return agent.Approval{Decision: gen.ApprovalDecisionApproveForRun}, nil
		case "n", "no":
			fmt.Fprint(a.out, "reason, told to the model (optional): ")
			reason, err := a.readLine(ctx)
			if err != nil {
				return agent.Approval{}, err
			}
			return agent.Approval{Decision: gen.ApprovalDecisionDeny, Reason: strings.TrimSpace(reason)}, nil
		}
	}
}

// readLines sends r's lines on the channel it returns (of buffer size),
// and then the error that ended them, and closes it: a read cannot be
// cancelled, so one goroutine does them all.
func readLines(r io.Reader, size int) chan lineOrErr {
	lines := make(chan lineOrErr, size)
	go func() {
		defer close(lines)
		br := bufio.NewReader(r)
		for {
			line, err := br.ReadString('\n')
			if err != nil && line == "" {
				lines <- lineOrErr{err: err}
				return
			}
			lines <- lineOrErr{line: line}
		}
	}()
	return lines
}

// errNoTerminal is the error of a question standard input closed on.
var errNoTerminal = errors.New("standard input closed while a tool call waited for approval")

func (a *terminalApprover) readLine(ctx context.Context) (string, error) {
	select {
	case l, ok := <-a.lines:
		if !ok || l.err != nil {
			return "", errNoTerminal
		}
		return l.line, nil
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			fmt.Fprintln(a.out, "\nno answer in time: the call is denied")
		}
		return "", ctx.Err()
	}
}

// maxArgumentLines is the most lines of one argument shown.
const maxArgumentLines = 40

// describeArguments shows each argument of a call, sorted by name: a
// string as text (a command reads as it runs), anything else as JSON.
// Control characters, which could drive the terminal, show as visible
// escapes (`\x1b`).
func describeArguments(w io.Writer, args map[string]any) {
	for _, k := range slices.Sorted(maps.Keys(args)) {
		text, ok := args[k].(string)
		if !ok {
			text = compactJSON(args[k])
		}
		lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
		name := oneLine(k, maxNameChars)
		if len(lines) == 1 {
			fmt.Fprintf(w, "  %s: %s\n", name, printable(lines[0]))
			continue
		}
		fmt.Fprintf(w, "  %s:\n", name)
		for i, l := range lines {
			if i == maxArgumentLines {
				fmt.Fprintf(w, "    … %d more lines\n", len(lines)-i)
				break
			}
			fmt.Fprintf(w, "    | %s\n", printable(l))
		}
	}
}

// printable shows control characters but tabs as visible escapes
// (termsafe.Text; s holds no newline) and clips the line.
func printable(s string) string { return clip(termsafe.Text(s), 500) }

// errNotWaiting ends a question whose call no longer waits.
var errNotWaiting = errors.New("the call no longer waits")

// askRemote asks about the calls a remote run waits on and sends the
// decisions; after is the position of the approval_requested event that
// announced them, and seen holds the calls already asked about. A question
// ends unanswered when anything happens in the run meanwhile (the server
// timed the call out, someone else decided it, the run was cancelled or
// the server stopped).
func askRemote(ctx context.Context, env *cli.Env, c *sdk.Client, runID string, after int, a *terminalApprover, seen map[string]bool) error {
	pending, err := c.PendingApprovals(ctx, runID)
	if err != nil {
		return err
	}
	for _, p := range pending {
		key := fmt.Sprint(p.Step, "/", p.CallId)
		if seen[key] {
			continue
		}
		seen[key] = true
		call := gen.ToolCall{Type: gen.ToolCallTypeToolCall, ToolName: p.ToolName, Arguments: p.Arguments, CallId: &p.CallId}
		actx, cancel := context.WithCancelCause(ctx)
		go func() {
			for range c.Events(actx, runID, after) {
				cancel(errNotWaiting)
				return
			}
		}()
		dec, err := a.Approve(actx, agent.ApprovalRequest{RunID: runID, Step: p.Step, Call: call, Reason: deref(p.Reason)})
		notWaiting := errors.Is(context.Cause(actx), errNotWaiting)
		cancel(nil)
		if err != nil && notWaiting {
			fmt.Fprintln(a.out, "\nthe call no longer waits (decided by the server's timeout or elsewhere, or the run ended)")
			continue
		}
		if err != nil {
			return err
		}
		switch dec.Decision {
		case gen.ApprovalDecisionApprove:
			_, err = c.Approve(ctx, runID, p.CallId, dec.Reason)
		case gen.ApprovalDecisionApproveForRun:
			_, err = c.ApproveForRun(ctx, runID, p.CallId, dec.Reason)
		default:
			_, err = c.Deny(ctx, runID, p.CallId, dec.Reason)
		}
		if errors.Is(err, sdk.ErrConflict) {
			env.Errorf("run: call %s was decided before your answer arrived (it timed out, or the run ended)", oneLine(p.CallId, maxNameChars))
			continue
		}
		if err != nil {
			return err
		}
	}
	return nil
}
