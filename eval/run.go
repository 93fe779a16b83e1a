package eval

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/gitcheckout"
	"github.com/specloop/specloop/trace"
)

// Attempt is one attempt at a task, as the Runner gets it.
type Attempt struct {
	Task *Task
	N    int
	// Dir is the attempt's work tree: the run's workspace.
	Dir string
	// Records is a directory for the run's records (its patch, trace,
	// log), outside the work tree.
	Records string
	// MaxSteps is the task's step budget, 0 for the run's default.
	MaxSteps int
}

// Outcome is what an attempt's run left.
type Outcome struct {
	Result                    gen.RunResult
	TracePath, TranscriptPath string
	PatchPath                 string
}

// Config says how an evaluation runs.
type Config struct {
	// Out holds results.jsonl, the attempts' records and, while they
	// run, their work trees.
	Out string
	// Parallel is how many attempts run at once (at least 1); Attempts
	// how many each task gets (at least 1).
	Parallel, Attempts int
	// Keep leaves each work tree in place after its attempt.
	Keep bool
	// Apply: the runs happen elsewhere (a server's work trees), with the
	// task's setup (the run's own, CreateRunRequest.setup), so the patch
	// each leaves is applied to the attempt's own work tree before the
	// test grades it.
	Apply bool
	// Run runs the model in a.Dir; Command runs a task's setup or test
	// there, in the sandbox, which may read the object store the work
	// tree borrows (a.Task.Objects).
	Run     func(ctx context.Context, a *Attempt) (Outcome, error)
	Command func(ctx context.Context, a *Attempt, command string, setup bool) (gen.CheckResult, error)
	// Prices, in US dollars per million tokens, give each attempt a cost;
	// nil gives none.
	Prices *Prices
	// Done is told of every attempt recorded, with the progress so far.
	Done func(gen.EvalAttempt, Progress)
}

// Prices are what a million tokens cost, in US dollars.
type Prices struct{ Input, Output float64 }

// Progress counts an evaluation's attempts.
type Progress struct {
	Done, Running, Left, Resolved int
	InputTokens, OutputTokens     int
	Elapsed                       time.Duration
}

// ETA is the time the attempts left may take, at the pace so far; 0 until
// one is done.
func (p Progress) ETA() time.Duration {
	if p.Done == 0 {
		return 0
	}
	return p.Elapsed / time.Duration(p.Done) * time.Duration(p.Left+p.Running)
}

// ResultsFile is the name of the results file in Config.Out.
const ResultsFile = "results.jsonl"

// Run runs every attempt of every task that results.jsonl in cfg.Out does
// not hold yet, cfg.Parallel at a time, and appends each one's result
// there as it ends. It returns every result, the earlier ones included.
// When ctx ends, the attempts running are stopped and not recorded (so
// that running again resumes them), and Run returns ctx's error.
func Run(ctx context.Context, tasks []Task, cfg Config) ([]gen.EvalAttempt, error) {
	if cfg.Parallel < 1 || cfg.Attempts < 1 {
		return nil, errors.New("eval: parallel and attempts must be at least 1")
	}
	if err := os.MkdirAll(cfg.Out, 0o700); err != nil {
		return nil, err
	}
	path := filepath.Join(cfg.Out, ResultsFile)
	results, err := ReadResults(path, true)
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	for _, r := range results {
		have[key(r.TaskId, r.Attempt)] = true
	}
	var todo []*Attempt
	for i := range tasks {
		t := &tasks[i]
		for n := 1; n <= cfg.Attempts; n++ {
			if have[key(t.Id, n)] {
				continue
			}
			a := &Attempt{Task: t, N: n, Dir: filepath.Join(cfg.Out, "worktrees", key(t.Id, n)), Records: filepath.Join(cfg.Out, "attempts", t.Id, strconv.Itoa(n))}
			if t.MaxSteps != nil {
				a.MaxSteps = *t.MaxSteps
			}
			todo = append(todo, a)
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	defer f.Close()

	// An error that is no attempt's own (a write of the results, a run
	// that could not start, a sandbox that would not) stops them all,
	// recording none of those running: the next Run starts them again.
	parent := ctx
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(cfg.Parallel)
	start := time.Now()
	var mu sync.Mutex
	prog := Progress{Left: len(todo)}
	for _, a := range todo {
		if ctx.Err() != nil {
			break
		}
		g.Go(func() error {
			if ctx.Err() != nil {
				return nil // stopped while it waited for its turn
			}
			mu.Lock()
			prog.Left--
			prog.Running++
			mu.Unlock()
			r, err := attempt(ctx, cfg, a)
			if err == nil {
				var line []byte
				if line, err = trace.EncodeLine(&r); err == nil {
					mu.Lock()
					_, err = f.Write(line) // one write of one line: a crash loses at most it
					mu.Unlock()
				}
				if err != nil {
					err = fmt.Errorf("%s: %w", path, err)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			prog.Running--
			if err != nil {
				return fmt.Errorf("eval: %s #%d: %w", a.Task.Id, a.N, err)
			}
			results = append(results, r)
			prog.Done++
			prog.InputTokens += r.InputTokens
			prog.OutputTokens += r.OutputTokens
			if r.Resolved {
				prog.Resolved++
			}
			prog.Elapsed = time.Since(start)
			if cfg.Done != nil {
				cfg.Done(r, prog)
			}
			return nil
		})
	}
	err = g.Wait()
	if parent.Err() != nil {
		return results, parent.Err()
	}
	return results, err
}

func key(task string, n int) string { return task + "-" + strconv.Itoa(n) }

// attempt runs one attempt: its work tree, its setup, the run, the grade.
// An error means it is not recorded: ctx ended, or something that is not
// the task's (a run that could not start, a sandbox that would not) went
// wrong. A setup that fails is the task's: the attempt is recorded, as not
// run, with exit reason setup_failed.
func attempt(ctx context.Context, cfg Config, a *Attempt) (gen.EvalAttempt, error) {
	start := time.Now()
	r := gen.EvalAttempt{TaskId: a.Task.Id, Attempt: a.N}
	if err := os.MkdirAll(a.Records, 0o700); err != nil {
		return r, err
	}
	if !cfg.Keep {
		defer os.RemoveAll(a.Dir)
	}
	if err := gitcheckout.Make(ctx, a.Task.Objects, a.Task.Commit, a.Dir); err != nil {
		return r, fmt.Errorf("work tree: %w", err)
	}
	if a.Task.Setup != nil && !cfg.Apply {
		res, err := cfg.Command(ctx, a, *a.Task.Setup, true)
		if err != nil {
			return r, fmt.Errorf("setup: %w", err)
		}
		if !res.Passed {
			return setupFailed(r, a, res, start), nil
		}
	}
	runCtx, cancel := ctx, context.CancelFunc(func() {})
	if a.Task.TimeLimitSeconds != nil {
		runCtx, cancel = context.WithTimeout(ctx, time.Duration(*a.Task.TimeLimitSeconds)*time.Second)
	}
	out, err := cfg.Run(runCtx, a)
	timedOut := runCtx.Err() != nil && ctx.Err() == nil
	cancel()
	if ctx.Err() != nil {
		return r, ctx.Err()
	}
	if err != nil {
		return r, fmt.Errorf("run: %w", err)
	}
	res := out.Result
	if res.ExitReason == gen.ExitReasonSetupFailed && res.Setup != nil { // the setup ran with the run
		r.RunId = res.RunId
		return setupFailed(r, a, *res.Setup, start), nil
	}
	r.RunId, r.ExitReason, r.Steps = res.RunId, &res.ExitReason, res.StepsUsed
	if timedOut {
		r.TimedOut = &timedOut
	}
	if res.Usage != nil {
		r.InputTokens, r.OutputTokens = int(res.Usage.InputTokens), int(res.Usage.OutputTokens)
	}
	if cfg.Prices != nil {
		cost := (float64(r.InputTokens)*cfg.Prices.Input + float64(r.OutputTokens)*cfg.Prices.Output) / 1e6
		r.CostUsd = &cost
	}
	for p, v := range map[**string]string{&r.PatchPath: out.PatchPath, &r.TracePath: out.TracePath, &r.TranscriptPath: out.TranscriptPath} {
		if v != "" {
			*p = &v
		}
	}
	if cfg.Apply && out.PatchPath != "" {
		patch, err := os.ReadFile(out.PatchPath)
		if err == nil {
			err = gitcheckout.Apply(ctx, a.Dir, patch)
		}
		if err != nil {
			msg := fmt.Sprintf("the run's patch does not apply to the task's commit: %v", err)
			r.Error = &msg
			r.DurationSeconds = time.Since(start).Seconds()
			return r, nil
		}
	}
	grade, err := cfg.Command(ctx, a, a.Task.Test, false)
	if err != nil {
		return r, fmt.Errorf("test: %w", err)
	}
	r.Grade, r.Resolved = &grade, grade.Passed
	r.DurationSeconds = time.Since(start).Seconds()
	return r, nil
}

// setupFailed is attempt r of a, whose setup failed with res, recorded
// with exit reason setup_failed (the one a run on a server ends with), no
// grade, and the setup's output in the attempt's setup.log.
func setupFailed(r gen.EvalAttempt, a *Attempt, res gen.CheckResult, start time.Time) gen.EvalAttempt {
	log := filepath.Join(a.Records, "setup.log")
	msg := fmt.Sprintf("setup failed with exit code %d (its output: %s)", res.ExitCode, log)
	if res.OutputTail != nil {
		_ = os.WriteFile(log, []byte(*res.OutputTail), 0o600)
	}
	reason := gen.ExitReasonSetupFailed
	r.Error, r.ExitReason = &msg, &reason
	r.DurationSeconds = time.Since(start).Seconds()
	return r
}
