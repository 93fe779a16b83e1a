package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/sandbox"
)

// DefaultCheckTimeout bounds a completion check when CommandCheck.Timeout is
// zero.
const DefaultCheckTimeout = 10 * time.Minute

// CheckTailBytes is how much of the end of a check's output is kept.
const CheckTailBytes = 4 << 10

// CommandCheck is a completion gate that runs a shell command in a
// workspace, exactly as run_command runs commands (in the sandbox, with an
// allowlisted environment, no standard input, every process it started
// killed at its end); the check passes when the command exits 0 in time.
// It implements agent.Checker.
type CommandCheck struct {
	ws      *Workspace
	command string
	// Timeout kills the check (which then fails); zero means
	// DefaultCheckTimeout.
	Timeout time.Duration
	// Env adds NAME=value variables to the check's environment.
	Env []string
	// Sandbox confines the check; nil means a sandbox with the default
	// Policy, resolved at the first Check.
	Sandbox *sandbox.Sandbox
	// Redactor, when set, redacts the tail of the output before it is
	// returned (a run's transcript redactor, wiring.Config.Redactor): the
	// result reaches the RunResult, which a server returns and stores.
	// A tail cut from longer output first starts at its next whole line,
	// since a secret whose start was cut off would not be known by its end.
	Redactor TextRedactor
}

// TextRedactor replaces secrets in text and says how many it replaced;
// *transcript.Redactor is one.
type TextRedactor interface {
	Text(s string) (string, int)
}

// NewCommandCheck returns a check that runs command in ws.
func NewCommandCheck(ws *Workspace, command string) *CommandCheck {
	return &CommandCheck{ws: ws, command: command}
}

// Command returns the check's command line.
func (c *CommandCheck) Command() string { return c.command }

// Check runs the command. It returns an error only when the check could not
// be run at all or ctx was cancelled; a failing command is a result with
// Passed false, its exit code (-1 when killed) and the tail of its combined
// output.
func (c *CommandCheck) Check(ctx context.Context) (gen.CheckResult, error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultCheckTimeout
	}
	if err := c.resolveSandbox(); err != nil {
		return gen.CheckResult{}, fmt.Errorf("completion check: %w", err)
	}
	out := newCapture(0, CheckTailBytes)
	run, err := runCmd(ctx, c.Sandbox, c.ws, sandbox.Command{Args: []string{shellPath, "-c", c.command}, Env: c.Env, Stdout: out, Stderr: out, Timeout: timeout})
	guard, guarded := gitGuardMessage(err)
	if guarded {
		err = nil
	}
	if err != nil {
		var se *sandbox.StartError
		if errors.As(err, &se) {
			return gen.CheckResult{}, fmt.Errorf("completion check: %w", err)
		}
		return gen.CheckResult{}, err
	}
	tail := out.tailText()
	if c.Redactor != nil {
		if out.cut() {
			if i := strings.IndexByte(tail, '\n'); i >= 0 {
				tail = tail[i+1:]
			} else {
				tail = ""
			}
		}
		tail, _ = c.Redactor.Text(tail)
	}
	if run.TimedOut {
		tail += fmt.Sprintf("\n[the check timed out after %s and was killed]\n", timeout)
	}
	if guarded {
		tail += "\n[the check failed: " + guard + "]\n"
	}
	res := gen.CheckResult{Passed: run.ExitCode == 0 && !run.TimedOut && !guarded, ExitCode: run.ExitCode}
	if tail != "" {
		res.OutputTail = &tail
	}
	return res, nil
}

// SandboxInfo returns how the check is confined (resolving the default
// sandbox when none was set); nil when no sandbox is available, in which
// case Check fails.
func (c *CommandCheck) SandboxInfo() *gen.SandboxInfo {
	if c.resolveSandbox() != nil {
		return nil
	}
	return sandboxInfo(c.Sandbox.Info())
}

// resolveSandbox sets the default sandbox when none was set.
func (c *CommandCheck) resolveSandbox() (err error) {
	if c.Sandbox == nil {
		c.Sandbox, err = sandbox.New(sandbox.Policy{})
	}
	return err
}
