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

const (
	// Each of stdout and stderr keeps this much of its head and of its tail
	// (32 KiB in all, as the spec says).
	commandHeadBytes = 16 << 10
	commandTailBytes = 16 << 10
)

var runCommandHandler = Func(NeedsCommands, runCommand, renderRunCommand)

func runCommand(ctx context.Context, env *Env, in *gen.RunCommandInput) (*gen.RunCommandResult, error) {
	timeout := commandTimeout(in)
	if err := env.Workspace.running(ctx); err != nil {
		return nil, err
	}
	stdout := newCapture(commandHeadBytes, commandTailBytes)
	stderr := newCapture(commandHeadBytes, commandTailBytes)
	if env.Sandbox == nil {
		return nil, errors.New("run_command: the runtime has no sandbox")
	}
	run, err := runCmd(ctx, env.Sandbox, env.Workspace, sandbox.Command{Args: []string{shellPath, "-c", in.Command}, Stdout: stdout, Stderr: stderr, Timeout: timeout})
	var se *sandbox.StartError
	if errors.As(err, &se) {
		return nil, Errorf(gen.ErrorCodeStartFailed, "the shell could not be started: %v", se.Err)
	}
	if msg, ok := gitGuardMessage(err); ok {
		return nil, Errorf(gen.ErrorCodeProtectedPath, "%s (the command exited with code %d)", msg, run.ExitCode)
	}
	if err != nil {
		return nil, err
	}
	out := &gen.RunCommandResult{
		ExitCode:   run.ExitCode,
		Stdout:     stdout.text(),
		Stderr:     stderr.text(),
		DurationMs: float64(run.Duration.Microseconds()) / 1e3,
		TimedOut:   run.TimedOut,
	}
	if n := stdout.omitted(); n > 0 {
		out.StdoutOmittedBytes = new(int(n))
	}
	if n := stderr.omitted(); n > 0 {
		out.StderrOmittedBytes = new(int(n))
	}
	return out, nil
}

func renderRunCommand(in *gen.RunCommandInput, out *gen.RunCommandResult) string {
	var b strings.Builder
	secs := out.DurationMs / 1e3
	switch {
	case out.TimedOut:
		fmt.Fprintf(&b, "timed out after %s: the command and its children were killed (exit code -1)\n", commandTimeout(in))
	case out.ExitCode < 0:
		fmt.Fprintf(&b, "killed by a signal after %.2fs (exit code -1)\n", secs)
	default:
		fmt.Fprintf(&b, "exit code %d after %.2fs\n", out.ExitCode, secs)
	}
	section := func(name, text string) {
		if text == "" {
			fmt.Fprintf(&b, "%s: (empty)\n", name)
			return
		}
		fmt.Fprintf(&b, "%s:\n%s", name, text)
		if !strings.HasSuffix(text, "\n") {
			b.WriteByte('\n')
		}
	}
	section("stdout", out.Stdout)
	section("stderr", out.Stderr)
	return b.String()
}

// commandTimeout is the call's timeout_seconds, or the spec's default.
func commandTimeout(in *gen.RunCommandInput) time.Duration {
	if in.TimeoutSeconds != nil {
		return time.Duration(*in.TimeoutSeconds) * time.Second
	}
	return defaultCommandTimeout
}
