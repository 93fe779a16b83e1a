package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"time"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/cmd/internal/cli"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/sdk"
	"github.com/specloop/specloop/trace"
	"github.com/specloop/specloop/transcript"
)

// remoteGrace bounds how long an interrupted `run --remote` waits for the
// server to record the cancelled run.
const remoteGrace = 30 * time.Second

// runRemote runs the job on a specloop server through the sdk: it creates
// the run, prints each trace event as it arrives (the server sends
// summaries, not the raw tool output a local run prints), and prints the
// result exactly like a local run, with the same exit status. --workspace
// names a directory under the server's workspace root ("." is the root);
// --trace writes the streamed events to a local file. An interrupt cancels
// the run on the server.
//
// With --continue, the server's run RUN_ID is continued with prompt as
// the message, keeping its request but for --max-steps, --token-budget
// and the model when set here (fs holds the flags set here).
func runRemote(ctx context.Context, env *cli.Env, f *runFlags, prompt string, fs *flag.FlagSet) int {
	c, req, err := f.remoteRun(prompt)
	if err != nil {
		return env.Fail(exitUsage, "run: %v", err)
	}
	asker, err := f.approval.open(env, nil)
	if err != nil {
		return env.Fail(exitUsage, "run: %v", err)
	}
	var tw *trace.Writer
	if f.tracePath != "" {
		if tw, err = trace.Create(f.tracePath, f.sync); err != nil {
			return env.Fail(exitUsage, "run: --trace: %v", err)
		}
		defer tw.Close()
	}

	var run gen.Run
	if f.continueID != "" {
		run, err = c.Continue(ctx, f.continueID, prompt, func(r *gen.ContinueRunRequest) {
			if isSet(fs, "max-steps") {
				r.MaxSteps = req.MaxSteps
			}
			if isSet(fs, "token-budget") {
				r.TokenBudget = req.TokenBudget
			}
			if f.script != "" || f.model != "" {
				r.Model = &req.Model
			}
		})
	} else {
		run, err = c.CreateRun(ctx, req)
	}
	if err != nil {
		env.Errorf("run: %v", err)
		var apiErr *sdk.APIError
		if errors.As(err, &apiErr) && apiErr.Status < 500 && apiErr.Status != http.StatusTooManyRequests {
			return exitUsage
		}
		return exitInternal
	}
	env.Errorf("remote run %s on %s", run.Id, f.remote)
	// A run that keeps a transcript is shown from it, as show --follow
	// shows one: the task, the model's text, each call's arguments and
	// output. One that keeps none is shown from the trace's summaries.
	printer := &progressPrinter{w: env.Stdout}
	rendered := transcript.NewRenderer(env.Stdout)
	content := !f.noTranscript
	var streamErr error
	asked := map[string]bool{}
	seen := 0 // events
	for it, err := range c.Stream(ctx, run.Id, 0) {
		if err != nil {
			streamErr = err
			break
		}
		// The result is printed below, once, as a local run prints it.
		if it.Entry != nil && !f.asJSON && it.Entry.EventType != gen.TraceEventTypeRunFinished {
			if err := rendered.Entry(it.Entry); err != nil {
				streamErr = err
				break
			}
		}
		if it.Event == nil {
			continue
		}
		ev := *it.Event
		seen++
		if asker != nil && ev.EventType == gen.TraceEventTypeApprovalRequested {
			if err := askRemote(ctx, env, c, run.Id, seen, asker, asked); err != nil {
				streamErr = err
				break
			}
		}
		if tw != nil {
			if err := tw.Emit(&ev); err != nil {
				env.Errorf("run: --trace: %v", err)
				tw = nil
			}
		}
		if !f.asJSON && (!content || ev.EventType == gen.TraceEventTypeRunStarted) {
			printer.observe(agent.Progress{Event: &ev})
		}
	}
	// After an interrupt, cancel the run on the server and report how it
	// ended, like a local run would.
	var final gen.Run
	if ctx.Err() != nil {
		final, err = stopRemote(ctx, c, run.Id)
	} else {
		if streamErr != nil {
			env.Errorf("run: event stream: %v (waiting for the result)", streamErr)
		}
		final, err = c.Wait(ctx, run.Id)
	}
	if err != nil || final.Result == nil {
		return env.Fail(exitInternal, "run: run %s: %v", run.Id, err)
	}
	return writePatch(env, f.patchPath, final.Result, report(env, final.Result, nil, f.asJSON, f.tracePath))
}

// remoteRun is the client of --remote and the request a local run makes
// of the same flags, its model included when one is given (a remote run
// that continues another keeps its own).
func (f *runFlags) remoteRun(prompt string) (*sdk.Client, gen.CreateRunRequest, error) {
	var req gen.CreateRunRequest
	if err := refuse("is not available with --remote (the server decides)", given{"--record-raw", f.recordRaw}, given{"--base-url", f.baseURL != ""},
		given{"--no-commands", f.noCommands}, given{"--system-file", f.systemFile != ""}); err != nil {
		return nil, req, err
	}
	token, err := cli.ReadToken(f.tokenFile)
	if err != nil {
		return nil, req, err
	}
	c, err := sdk.New(f.remote, sdk.Config{Token: token})
	if err != nil {
		return nil, req, fmt.Errorf("--remote: %w", err)
	}
	names, err := f.mcp.Names()
	if err != nil {
		return nil, req, err
	}
	req = f.request(prompt, names)
	if f.script != "" || f.model != "" {
		req.Model, err = modelConfig(f)
	}
	return c, req, err
}

// stopRemote cancels run id on the server, once ctx, the command's, is
// done, and waits (a bounded time) for the run it records.
func stopRemote(ctx context.Context, c *sdk.Client, id string) (gen.Run, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), remoteGrace)
	defer cancel()
	if _, err := c.Cancel(ctx, id); err != nil && !errors.Is(err, sdk.ErrConflict) {
		return gen.Run{}, fmt.Errorf("cancel run %s: %w", id, err)
	}
	return c.Wait(ctx, id)
}
