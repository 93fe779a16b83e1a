package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/cmd/internal/cli"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/demo"
	"github.com/specloop/specloop/model"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/trace"
	"github.com/specloop/specloop/wiring"
)

// demoCmd runs the built-in demo: the real loop, tools and completion gate,
// with a scripted model, on a copy of an embedded Go module whose test
// fails.
func demoCmd(ctx context.Context, env *cli.Env, args []string) int {
	env = runText(env)
	fs := env.FlagSet("demo", "[flags]",
		"Copies a small Go module whose test fails into a temporary workspace and runs a scripted agent on it:\n"+
			"search, read_file, edit_file, run_command `go test ./...`, finish, with the completion check\n"+
			"`go test ./...`. Prints each step, the patch, the result and the trace's path. Needs only Go, no network.")
	keep := fs.Bool("keep", false, "keep the temporary workspace and the trace (their paths are printed); by default the demo removes them")
	asJSON := fs.Bool("json", false, "print only the RunResult as JSON")
	tracePath := fs.String("trace", "", "write the trace to this file, which the demo keeps (default: beside the temporary workspace, removed with it)")
	var sbFlags cli.SandboxFlags
	sbFlags.Register(fs)
	if code, done := cli.ParseNoArgs(fs, args); done {
		return code
	}
	sbPolicy, err := sbFlags.Policy()
	if err != nil {
		return env.Fail(exitUsage, "demo: %v", err)
	}
	if _, err := exec.LookPath("go"); err != nil {
		return env.Fail(exitInternal, "demo: the demo runs `go test`, and no go command is on PATH")
	}

	base, err := os.MkdirTemp("", "specloop-demo-*")
	if err != nil {
		return env.Fail(exitInternal, "demo: %v", err)
	}
	if !*keep {
		defer os.RemoveAll(base)
	}
	dir := filepath.Join(base, demo.ModuleName)
	if err := demo.WriteModule(dir); err != nil {
		return env.Fail(exitInternal, "demo: %v", err)
	}
	runID := agent.NewRunID()
	ownTrace := *tracePath == "" // removed with the workspace, unless --keep
	if ownTrace {
		*tracePath = filepath.Join(base, "trace.jsonl")
	}
	// The demo's scripted model reads no instructions: the same run on
	// every machine.
	sp := &runner.Spec{CreateRunRequest: gen.CreateRunRequest{Task: gen.Task{Prompt: demo.Task}, MaxSteps: new(demo.MaxSteps), Check: new(demo.Check), ProjectDocs: new(bool)},
		ID: runID}
	setup, code := openSetup(ctx, env, "demo", sp, wiring.Config{Dir: dir, TracePath: *tracePath, Sandbox: sbPolicy, CheckEnv: demo.CheckEnv, TraceSync: trace.SyncAtRunEnd}, false)
	if setup == nil {
		return code
	}
	defer setup.Close()
	opts := setup.Options
	if !*asJSON {
		w := env.Stdout
		fmt.Fprintln(w, "specloop demo: a scripted model fixes a failing Go test with the code tools.")
		fmt.Fprintf(w, "workspace: %s (a copy of an embedded module whose test fails)\n", dir)
		fmt.Fprintf(w, "task:      %s\n", demo.Task)
		fmt.Fprintf(w, "check:     %s (the run finishes only when it passes)\n\n", demo.Check)
		fmt.Fprintln(w, "note:      the first `go test` compiles the module and the standard library packages it")
		fmt.Fprintln(w, "           needs; on a cold build cache that can take a minute.")
		fmt.Fprintln(w)
		observe, stop := demoObserver(w, realClock(w), demo.Check)
		defer stop()
		opts.Observer = observe
	}
	start := time.Now()
	res, runErr := agent.Run(ctx, sp.Task, model.NewScript(demo.Script()...), opts)
	if err := setup.Trace.Close(); err != nil && runErr == nil {
		env.Errorf("demo: trace: %v", err)
	}
	shownTrace := *tracePath
	if ownTrace && !*keep {
		shownTrace = "" // about to be removed
	}
	code = report(env, &res, runErr, *asJSON, shownTrace)
	w := env.Stdout
	if *asJSON {
		w = env.Stderr // stdout holds only the JSON
	} else {
		fmt.Fprintf(w, "time:   %s\n", roundElapsed(time.Since(start)))
	}
	switch {
	case *keep && ownTrace:
		fmt.Fprintf(w, "kept:   %s (the workspace %s/ and the trace %s; remove it when done)\n", base, demo.ModuleName, filepath.Base(*tracePath))
	case *keep:
		fmt.Fprintf(w, "kept:   %s (the workspace; remove it when done)\n", dir)
	case ownTrace && !*asJSON:
		fmt.Fprintln(w, "removed: the temporary workspace and its trace (--keep keeps them, --trace FILE keeps a trace)")
	case !*asJSON:
		fmt.Fprintln(w, "removed: the temporary workspace (--keep keeps it)")
	}
	return code
}
