package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/specloop/specloop/cmd/internal/cli"
	"github.com/specloop/specloop/eval"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/sandbox"
	"github.com/specloop/specloop/tools"
	"github.com/specloop/specloop/transcript"
)

// `specloop eval` runs a task file: each attempt a `specloop run` in a
// work tree of its own, in this process, graded by the task's test after
// the run (so the model never sees it).

type evalFlags struct {
	parallel, attempts int
	out, predictions   string
	keep               bool
	priceIn, priceOut  float64
}

func evalCmd(ctx context.Context, env *cli.Env, args []string) int {
	if len(args) > 0 && args[0] == "compare" {
		return evalCompare(env, args[1:])
	}
	fs := env.FlagSet("eval", "TASKS.jsonl (--script FILE | --model PROVIDER:NAME) [--parallel N] [--attempts K] [--out DIR] [run flags]",
		"Runs every task of TASKS.jsonl (one JSON object a line: id, repo, commit, prompt, test, and optionally\n"+
			"setup, max_steps, time_limit_seconds; see docs/eval.md) K times, N attempts at a time. Each attempt is a\n"+
			"`specloop run` in its own git work tree of the task's repository at its commit, under --out, removed after\n"+
			"it unless --keep; setup runs first and the test after the run, both in the sandbox (setup with the\n"+
			"network), and the test, which the model never sees, decides whether the attempt resolved the task.\n"+
			"Results are appended to DIR/results.jsonl as attempts end; Ctrl-C stops, and the same command again\n"+
			"resumes, skipping the attempts recorded. The summary is printed and written to DIR/summary.json and\n"+
			"DIR/summary.md. --remote URL runs each attempt on a specloop server, in a work tree of its own there\n"+
			"(of the server's clone of a repository given as an https URL), and grades its patch here. `specloop eval compare DIR_A DIR_B` shows what changed per task. Takes the flags of\n"+
			"`specloop run` (see `specloop help run`) but those that name one workspace, prompt or record.")
	var f runFlags
	f.register(fs)
	// The run flags given are every attempt's (eval's own come after).
	var set [][2]string
	fs.VisitAll(func(fl *flag.Flag) { fl.Value = &recorded{Value: fl.Value, name: fl.Name, to: &set} })
	var e evalFlags
	fs.IntVar(&e.parallel, "parallel", 1, "how many attempts run at once")
	fs.IntVar(&e.attempts, "attempts", 1, "attempts at each task (pass@k is reported for k up to it)")
	fs.StringVar(&e.out, "out", "", "the directory of the results, records and work trees (default: "+cli.StateDirUsage("evals/NAME")+", NAME the task file's name); giving it again resumes")
	fs.BoolVar(&e.keep, "keep", false, "leave each attempt's work tree in DIR/worktrees")
	fs.StringVar(&e.predictions, "predictions", "", "also write SWE-bench's predictions (instance_id, model_name_or_path, model_patch) to this file: JSON Lines for .jsonl, else a JSON array")
	fs.Float64Var(&e.priceIn, "price-input", 0, "US dollars per million prompt tokens, to report each attempt's cost")
	fs.Float64Var(&e.priceOut, "price-output", 0, "US dollars per million generated tokens")
	file, code, done := parseWithPositional(fs, args)
	if done {
		return code
	}
	for _, bad := range []string{"workspace", "prompt-file", "json", "continue", "resume", "patch", "trace", "approval"} {
		if isSet(fs, bad) {
			return cli.Usagef(fs, "--%s does not apply to an evaluation: each attempt has its own", bad)
		}
	}
	switch {
	case file == "":
		return cli.Usagef(fs, "the task file TASKS.jsonl is required")
	case e.parallel < 1 || e.parallel > 256:
		return cli.Usagef(fs, "--parallel must be between 1 and 256")
	case e.attempts < 1 || e.attempts > gen.MaxEvalAttemptAttempt:
		return cli.Usagef(fs, "--attempts must be between 1 and %d", gen.MaxEvalAttemptAttempt)
	case e.priceIn < 0 || e.priceOut < 0:
		return cli.Usagef(fs, "--price-input and --price-output must not be negative")
	}
	runArgs := flagArgs(set)
	// The model may come from a configuration file: check the flags as
	// a run would see them (each attempt reads the files again, with its
	// work tree's own).
	cfg, err := runConfig(fs, &f)
	if err != nil {
		return env.Fail(exitUsage, "eval: %v", err)
	}
	var cf runFlags
	cfs := runFlagSet(&cf)
	if err := cfs.Parse(append(cfg.args(), runArgs...)); err != nil {
		return env.Fail(exitUsage, "eval: %v", err)
	}
	if err := cf.validate(cfs); err != nil {
		return cli.Usagef(fs, "%v", err)
	}
	policy, err := cf.sandbox.Policy() // the setups and tests are sandboxed as the runs are
	if err != nil {
		return cli.Usagef(fs, "%v", err)
	}

	tasks, err := eval.ReadTasks(file)
	if err != nil {
		return env.Fail(exitUsage, "eval: %v", err)
	}
	if e.out == "" {
		name := strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
		if e.out, err = cli.StateDir(filepath.Join("evals", name)); err != nil {
			return env.Fail(exitUsage, "eval: --out: %v", err)
		}
	}
	if e.out, err = filepath.Abs(e.out); err != nil {
		return env.Fail(exitUsage, "eval: --out: %v", err)
	}
	for _, t := range tasks {
		if t.Repo != "" && (e.out == t.Repo || strings.HasPrefix(e.out, t.Repo+string(filepath.Separator))) {
			return env.Fail(exitUsage, "eval: --out %s is inside task %s's repository %s: give a directory outside it", e.out, t.Id, t.Repo)
		}
	}
	if err := eval.Prepare(ctx, tasks, e.out, file); err != nil {
		return env.Fail(exitUsage, "eval: %v", err)
	}
	cmds, err := newEvalCommands(policy)
	if err != nil {
		return env.Fail(exitUsage, "eval: %v", err)
	}
	ecfg := eval.Config{Out: e.out, Parallel: e.parallel, Attempts: e.attempts, Keep: e.keep,
		Run: func(ctx context.Context, a *eval.Attempt) (eval.Outcome, error) {
			return evalRun(ctx, runArgs, a)
		},
		Command: cmds.run}
	if cf.remote != "" {
		run, err := evalRemote(&cf, tasks, file)
		if err != nil {
			return env.Fail(exitUsage, "eval: %v", err)
		}
		ecfg.Run, ecfg.Apply = run, true
	}
	if e.priceIn > 0 || e.priceOut > 0 {
		ecfg.Prices = &eval.Prices{Input: e.priceIn, Output: e.priceOut}
	}
	total := len(tasks) * e.attempts
	recorded, _ := eval.ReadResults(filepath.Join(e.out, eval.ResultsFile), false)
	fmt.Fprintf(env.Stderr, "eval: %d tasks × %d attempts in %s, %d at a time", len(tasks), e.attempts, e.out, e.parallel)
	if len(recorded) > 0 {
		fmt.Fprintf(env.Stderr, " (%d recorded before: resuming)", len(recorded))
	}
	fmt.Fprintln(env.Stderr)
	ecfg.Done = func(r gen.EvalAttempt, p eval.Progress) {
		fmt.Fprintf(env.Stderr, "[%d/%d] %s #%d %s · %d running, %d left, %d resolved · %d/%d tokens · %s elapsed",
			len(recorded)+p.Done, total, r.TaskId, r.Attempt, attemptLine(r), p.Running, p.Left, p.Resolved,
			p.InputTokens, p.OutputTokens, p.Elapsed.Round(time.Second))
		if eta := p.ETA(); eta > 0 {
			fmt.Fprintf(env.Stderr, ", ETA %s", eta.Round(time.Second))
		}
		fmt.Fprintln(env.Stderr)
	}
	results, err := eval.Run(ctx, tasks, ecfg)
	stopped := errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
	if err != nil && !stopped {
		return env.Fail(exitInternal, "eval: %v", err)
	}
	sum := eval.Summarize(results)
	if err := writeSummary(e.out, sum); err != nil {
		return env.Fail(exitInternal, "eval: %v", err)
	}
	if e.predictions != "" {
		if err := writePredictions(e.predictions, results, cf.model+cf.script); err != nil {
			return env.Fail(exitInternal, "eval: --predictions: %v", err)
		}
	}
	if err := eval.WriteMarkdown(env.Stdout, sum); err != nil {
		return exitInternal
	}
	fmt.Fprintf(env.Stdout, "\nresults: %s\n", filepath.Join(e.out, eval.ResultsFile))
	if stopped {
		fmt.Fprintf(env.Stderr, "eval: stopped after %d of %d attempts; the same command resumes\n", len(results), total)
		return exitCancelled
	}
	return exitOK
}

// attemptLine says how an attempt ended, in a few words.
func attemptLine(r gen.EvalAttempt) string {
	verdict := "not resolved"
	if r.Resolved {
		verdict = "resolved"
	}
	switch {
	case r.Error != nil:
		return "not run: " + oneLine(*r.Error, 120)
	case r.ExitReason != nil:
		return fmt.Sprintf("%s (%s, %d steps, %.1fs)", verdict, *r.ExitReason, r.Steps, r.DurationSeconds)
	}
	return verdict
}

// evalRun runs one attempt: `specloop run` in its work tree, with its
// records beside it.
func evalRun(ctx context.Context, runArgs []string, a *eval.Attempt) (eval.Outcome, error) {
	o := eval.Outcome{PatchPath: filepath.Join(a.Records, "patch.diff"), TracePath: filepath.Join(a.Records, "trace.jsonl")}
	promptFile := filepath.Join(a.Records, "prompt.md")
	if err := os.WriteFile(promptFile, []byte(a.Task.Prompt), 0o600); err != nil {
		return o, err
	}
	args := append(slices.Clone(runArgs), "--workspace", a.Dir, "--json", "--no-wait", "--approval", "never",
		"--patch", o.PatchPath, "--trace", o.TracePath, "--prompt-file", promptFile)
	if a.MaxSteps > 0 {
		args = append(args, "--max-steps", strconv.Itoa(a.MaxSteps))
	}
	logPath := filepath.Join(a.Records, "run.log")
	log, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return o, err
	}
	defer log.Close()
	result, err := os.OpenFile(filepath.Join(a.Records, "result.json"), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return o, err
	}
	defer result.Close()
	var out outcome
	code := runOnce(ctx, &cli.Env{Prog: "specloop", Stdin: strings.NewReader(""), Stdout: result, Stderr: log}, args, &out)
	if out.ID == "" {
		return o, fmt.Errorf("the run did not start (exit status %d; see %s)", code, logPath)
	}
	o.Result = out.Result
	if p, err := runFile(out.ID, transcript.FileName); err == nil {
		if _, err := os.Stat(p); err == nil {
			o.TranscriptPath = p
		}
	}
	return o, nil
}

// evalCommands runs a task's setup (with the network) and test in the
// sandbox, one for each object store the attempts' work trees borrow
// (their task's repository's, which eval named when it made them, never
// read back from a work tree the model has worked in).
type evalCommands struct {
	policy sandbox.Policy
	mu     sync.Mutex
	boxes  map[[2]string]*sandbox.Sandbox // by objects and "setup" or "test"
}

func newEvalCommands(p sandbox.Policy) (*evalCommands, error) {
	c := &evalCommands{policy: p, boxes: map[[2]string]*sandbox.Sandbox{}}
	_, err := c.sandbox("", false) // the policy is checked before any attempt
	return c, err
}

func (c *evalCommands) sandbox(objects string, setup bool) (*sandbox.Sandbox, error) {
	key := [2]string{objects, "test"}
	if setup {
		key[1] = "setup"
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if sb := c.boxes[key]; sb != nil {
		return sb, nil
	}
	p := c.policy
	p.AllowNetwork = p.AllowNetwork || setup
	if objects != "" {
		// The sandbox opens it again with no symbolic link on the way.
		real, err := filepath.EvalSymlinks(objects)
		if err != nil {
			return nil, err
		}
		p.ObjectDirs = []string{real}
	}
	sb, err := sandbox.New(p)
	if err != nil {
		return nil, err
	}
	c.boxes[key] = sb
	return sb, nil
}

func (c *evalCommands) run(ctx context.Context, a *eval.Attempt, command string, setup bool) (gen.CheckResult, error) {
	sb, err := c.sandbox(a.Task.Objects, setup)
	if err != nil {
		return gen.CheckResult{}, err
	}
	ws, err := tools.OpenWorkspace(a.Dir)
	if err != nil {
		return gen.CheckResult{}, err
	}
	defer ws.Close()
	check := tools.NewCommandCheck(ws, command)
	check.Sandbox = sb
	return check.Check(ctx)
}

func writeSummary(dir string, s gen.EvalSummary) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "summary.json"), append(data, '\n'), 0o600); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, "summary.md"), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	return errors.Join(eval.WriteMarkdown(f, s), f.Close())
}

func writePredictions(path string, results []gen.EvalAttempt, model string) error {
	ps, err := eval.Predictions(results, model)
	if err != nil {
		return err
	}
	var data []byte
	if strings.HasSuffix(path, ".jsonl") {
		for _, p := range ps {
			line, err := json.Marshal(p)
			if err != nil {
				return err
			}
			data = append(append(data, line...), '\n')
		}
	} else if data, err = json.MarshalIndent(ps, "", "  "); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// evalCompare prints what changed per task between two evaluations.
func evalCompare(env *cli.Env, args []string) int {
	fs := env.FlagSet("eval compare", "DIR_A DIR_B", "Shows, task by task, what changed from evaluation A to evaluation B (each an --out directory or a\nresults.jsonl): resolved attempts, and the mean steps, tokens and cost per attempt.")
	if code, done := cli.ParseFlags(fs, args); done {
		return code
	}
	if fs.NArg() != 2 {
		return cli.Usagef(fs, "expected two result directories, got %d", fs.NArg())
	}
	var sides [2][]gen.EvalAttempt
	for i := range sides {
		p := fs.Arg(i)
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			p = filepath.Join(p, eval.ResultsFile)
		}
		rs, err := eval.ReadResults(p, false)
		if err == nil && rs == nil {
			err = fmt.Errorf("%s: no results", p)
		}
		if err != nil {
			return env.Fail(exitUsage, "eval compare: %v", err)
		}
		sides[i] = rs
	}
	changes := eval.Compare(sides[0], sides[1])
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tA\tB\tSTEPS Δ\tTOKENS Δ\tCOST Δ\t")
	var solved, failing []string
	side := func(c, n int) string {
		if n == 0 {
			return "-"
		}
		return fmt.Sprintf("%d/%d", c, n)
	}
	for _, c := range changes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%+.1f\t%+.0f\t%+.4f\t\n", c.Task, side(c.BeforeResolved, c.BeforeAttempts), side(c.AfterResolved, c.AfterAttempts), c.StepsDelta, c.TokensDelta, c.CostDelta)
		if c.NewlySolved() {
			solved = append(solved, c.Task)
		}
		if c.NewlyFailing() {
			failing = append(failing, c.Task)
		}
	}
	tw.Flush()
	a, b := eval.Summarize(sides[0]), eval.Summarize(sides[1])
	fmt.Fprintf(env.Stdout, "\nresolved: %.1f %% → %.1f %%\nnewly solved (%d): %s\nnewly failing (%d): %s\n",
		100*a.ResolvedRate, 100*b.ResolvedRate, len(solved), strings.Join(solved, ", "), len(failing), strings.Join(failing, ", "))
	return exitOK
}

// evalRemote returns the Run of an evaluation on a specloop server: each
// attempt a run there with isolation worktree, in the workspace that is
// the task's repository's path relative to the task file (the server's
// workspace root holds the same repositories as the task file's
// directory) or, for a repository given as a URL, of the server's clone
// of it (repo_url: https only, of a host the server allows), at the
// task's commit, with the task's setup. Its patch comes back, and the
// attempt applies it to its own work tree here, where the test grades it.
func evalRemote(f *runFlags, tasks []eval.Task, file string) (func(context.Context, *eval.Attempt) (eval.Outcome, error), error) {
	top, err := filepath.Abs(filepath.Dir(file))
	if err != nil {
		return nil, err
	}
	workspaces := map[string]string{}
	for _, t := range tasks {
		if u := t.URL(); u != "" {
			if !strings.HasPrefix(u, "https://") {
				return nil, fmt.Errorf("--remote: task %s: a server clones only https URLs (repo_url), not %s", t.Id, oneLine(u, 200))
			}
			continue
		}
		rel, err := filepath.Rel(top, t.Repo)
		if err != nil || !filepath.IsLocal(rel) && rel != "." {
			return nil, fmt.Errorf("--remote: task %s: its repo must be a path inside the task file's directory, which names its workspace on the server", t.Id)
		}
		workspaces[t.Id] = filepath.ToSlash(rel)
	}
	c, base, err := f.remoteRun("")
	if err != nil {
		return nil, err
	}
	worktree := gen.CreateRunRequestIsolationWorktree
	return func(ctx context.Context, a *eval.Attempt) (eval.Outcome, error) {
		req := base
		req.Task, req.Setup = gen.Task{Prompt: a.Task.Prompt}, a.Task.Setup // the setup runs with the run, where the model works
		req.Isolation, req.Commit = &worktree, &a.Task.Commit
		if u := a.Task.URL(); u != "" {
			req.RepoUrl = &u
		} else {
			req.Workspace = new(workspaces[a.Task.Id])
		}
		if a.MaxSteps > 0 {
			req.MaxSteps = &a.MaxSteps
		}
		o := eval.Outcome{PatchPath: filepath.Join(a.Records, "patch.diff")}
		run, err := c.CreateRun(ctx, req)
		if err != nil {
			return o, err
		}
		final, err := c.Wait(ctx, run.Id)
		if ctx.Err() != nil {
			// Stopped (Ctrl-C, or the task's time limit): the server's run
			// is cancelled too, and the attempt graded as it stands.
			final, err = stopRemote(ctx, c, run.Id)
		}
		if err != nil {
			return o, err
		}
		if final.Result == nil {
			return o, fmt.Errorf("run %s ended without a result", run.Id)
		}
		o.Result = *final.Result
		data, err := json.Marshal(final.Result)
		if err == nil {
			err = os.WriteFile(filepath.Join(a.Records, "result.json"), append(data, '\n'), 0o600)
		}
		if err == nil {
			err = os.WriteFile(o.PatchPath, []byte(deref(final.Result.Patch)), 0o600)
		}
		return o, err
	}, nil
}
