package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
	"github.com/specloop/specloop/tools"
	"github.com/specloop/specloop/trace"
)

// runFlags are the flags of `specloop run`.
type runFlags struct {
	script     string
	maxSteps   int
	tracePath  string
	syncPolicy string
	asJSON     bool
	workspace  string
	noCommands bool
	check      string
	recordRaw  bool
	// model selection (see models.go) and remote runs (see remote.go)
	model       string
	baseURL     string
	tokenBudget int64
	remote      string
	tokenFile   string
	sandbox     sandboxFlags
}

func (f *runFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.script, "script", "", "a file of raw model responses, one per line, replayed in order through the JSON action adapter")
	fs.IntVar(&f.maxSteps, "max-steps", agent.DefaultMaxSteps, "the step budget: model calls, including ones that produced invalid output")
	fs.StringVar(&f.tracePath, "trace", "", "append the run's JSONL trace to this file")
	fs.StringVar(&f.syncPolicy, "sync", "end", "when the trace is fsynced: none, end (after run_finished) or every (each event)")
	fs.BoolVar(&f.asJSON, "json", false, "print only the RunResult as JSON")
	fs.StringVar(&f.workspace, "workspace", ".", "the directory the file tools and commands are confined to (with --remote: a directory under the server's workspace root)")
	fs.BoolVar(&f.noCommands, "no-commands", false, "do not offer run_command to the model")
	fs.StringVar(&f.check, "check", "", "a completion check command run in the workspace when the model finishes; the run finishes only when it exits 0")
	fs.BoolVar(&f.recordRaw, "record-raw", false, "record the model's raw output in the trace (for replay); off by default because it stores raw text")
	fs.StringVar(&f.model, "model", "", "the model: openai:MODEL, anthropic:MODEL or replay:TRACE_FILE (instead of --script)")
	fs.StringVar(&f.baseURL, "base-url", "", "the provider's base URL (e.g. a local OpenAI-compatible server); default from OPENAI_BASE_URL or ANTHROPIC_BASE_URL, else the provider's")
	fs.Int64Var(&f.tokenBudget, "token-budget", 0, "end the run once the model calls used more tokens than this (0: no limit)")
	fs.StringVar(&f.remote, "remote", "", "run on a specloop server at this base URL instead of locally")
	fs.StringVar(&f.tokenFile, "token-file", "", "with --remote: a file holding the server's bearer token (default: $SPECLOOP_TOKEN)")
	f.sandbox.register(fs)
}

func runCmd(ctx context.Context, env *cmdEnv, args []string) int {
	var f runFlags
	fs := newFlagSet(env, "run", "--script FILE [flags] PROMPT",
		"Runs an agent on PROMPT. Prints each step as it happens and the result, or with --json only the\n"+
			"RunResult. The exit status tells how the run ended (see `specloop help`).")
	f.register(fs)
	prompt, code, done := parseWithPositional(fs, args)
	if done {
		return code
	}
	if prompt == "" {
		env.errorf("run: the task PROMPT is required")
		fs.Usage()
		return exitUsage
	}
	if f.maxSteps < 1 {
		env.errorf("run: --max-steps must be at least 1")
		return exitUsage
	}
	if (f.script == "") == (f.model == "") {
		env.errorf("run: give exactly one of --script FILE and --model PROVIDER:NAME")
		return exitUsage
	}
	if f.remote != "" {
		return runRemote(ctx, env, &f, prompt)
	}
	policy, err := trace.ParseSyncPolicy(f.syncPolicy)
	if err != nil {
		env.errorf("run: --sync: %v", err)
		return exitUsage
	}
	m, err := openModel(&f)
	if err != nil {
		env.errorf("run: %v", err)
		return exitUsage
	}
	ws, err := tools.OpenWorkspace(f.workspace)
	if err != nil {
		env.errorf("run: --workspace: %v", err)
		return exitUsage
	}
	defer ws.Close()
	sbPolicy, err := f.sandbox.policy()
	if err != nil {
		env.errorf("run: %v", err)
		return exitUsage
	}
	rt, err := tools.New(tools.Config{Workspace: ws, DisableCommands: f.noCommands, Sandbox: sbPolicy})
	if err != nil {
		env.errorf("run: %v", err)
		return exitInternal
	}
	opts := agent.Options{MaxSteps: f.maxSteps, TokenBudget: f.tokenBudget, Tools: rt, RecordRaw: f.recordRaw}
	if !f.noCommands || f.check != "" {
		sb, err := f.sandbox.open(env)
		if err != nil {
			env.errorf("run: %v", err)
			return exitInternal
		}
		if f.check != "" {
			check := tools.NewCommandCheck(ws, f.check)
			check.Sandbox = sb
			opts.Check = check
		}
	}
	if f.tracePath != "" {
		tw, err := trace.Create(f.tracePath, policy)
		if err != nil {
			env.errorf("run: --trace: %v", err)
			return exitUsage
		}
		defer tw.Close()
		opts.Trace = tw
	}
	if !f.asJSON {
		opts.Observer = (&progressPrinter{w: env.stdout}).observe
	}
	res, runErr := agent.Run(ctx, gen.Task{Prompt: prompt}, m, opts)
	return report(env, &res, runErr, f.asJSON, f.tracePath)
}

// report prints a run's result and returns the exit status for it.
func report(env *cmdEnv, res *gen.RunResult, runErr error, asJSON bool, tracePath string) int {
	if asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(res); err != nil {
			env.errorf("%v", err)
			return exitInternal
		}
	} else {
		printResult(env.stdout, res, tracePath)
	}
	if runErr != nil {
		env.errorf("%v", runErr)
	}
	return exitCodeFor(res.ExitReason)
}

// loadScript reads a script file: one raw model response per line; empty
// lines are skipped.
func loadScript(path string) (*model.Script, error) {
	lines, err := readScriptLines(path)
	if err != nil {
		return nil, err
	}
	return model.NewScript(lines...), nil
}

// readScriptLines reads the raw model responses of a script file, one per
// line, empty lines skipped.
func readScriptLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		if line := sc.Text(); strings.TrimSpace(line) != "" {
			lines = append(lines, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(lines) == 0 {
		return nil, fmt.Errorf("%s holds no responses", path)
	}
	return lines, nil
}

// parseWithPositional parses flags that may come before or after the one
// positional argument, so `run PROMPT --json` works like `run --json PROMPT`.
func parseWithPositional(fs *flag.FlagSet, args []string) (positional string, code int, done bool) {
	var rest []string
	for {
		if code, done := parseFlags(fs, args); done {
			return "", code, true
		}
		if fs.NArg() == 0 {
			break
		}
		rest = append(rest, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(rest) > 1 {
		fmt.Fprintf(fs.Output(), "specloop %s: expected one PROMPT argument, got %d (quote the prompt)\n", fs.Name(), len(rest))
		return "", exitUsage, true
	}
	if len(rest) == 1 {
		positional = rest[0]
	}
	return positional, 0, false
}
