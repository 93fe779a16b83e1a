package transcript

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
)

// State rebuilds the agent.State of the run recorded in log as the run
// had it at the end of its transcript: for a run that ended, after its
// last step (the history with its last turn, for a follow-up); for one
// whose process was killed, after its last complete step
// (Replay.CompleteSteps), to go on with agent.Options.Resume. It drives
// the loop itself over the record, with the Replay as model, tools,
// check and approver, so that nothing is executed and the history, step
// count, usage, approvals, check and context budget are the loop's own.
//
// task is the run's task (its Prompt "" means the recorded one, as
// redacted); opts are the run's options as the recorded run had them: its budgets,
// caps, approval policy, compaction and stuck detection, its tools (only
// their Specs are used, for what the loop derives from them: hints,
// which calls are asked about), and whether it had a check (only
// whether opts.Check is nil). m is the run's model, asked nothing: when
// it is an agent.ContextSizer its window and estimates budget the
// replayed requests as they budgeted the recorded ones. The Trace,
// Observer, Approver, Resume and PauseAfter of opts are not used.
//
// The rebuilt history holds what the transcript holds: a secret it
// redacted is [REDACTED] there too. An error wrapping ErrDiverged says
// at which step the replay left the record (options that are not the
// recorded run's, or a compaction to another history).
func State(ctx context.Context, log *Log, task gen.Task, m agent.Model, opts agent.Options) (*agent.State, error) {
	r, err := NewReplay(log)
	if err != nil {
		// A run killed before its first step has only its start.
		if i := slices.IndexFunc(log.Entries, func(e gen.TranscriptEntry) bool {
			return e.Step > 0 || e.EventType == gen.TraceEventTypeRunFinished
		}); i < 0 && len(log.Entries) > 0 {
			return &agent.State{Started: log.Entries[0].Time}, nil
		}
		return nil, err
	}
	if s, ok := m.(agent.ContextSizer); ok {
		r.sizer = s
	}
	ro := opts
	ro.Trace, ro.Observer, ro.RecordRaw = nil, nil, false
	r.Wire(&ro)
	ro.Resume, ro.PauseAfter = nil, 0
	ro.RunID = cmp.Or(opts.RunID, r.runID)
	ro.Clock = func() time.Time { return r.started }
	var ended *agent.State
	ro.Ended = func(st agent.State) { ended = &st }
	steps := r.CompleteSteps()
	if r.result == nil {
		if steps == 0 {
			return &agent.State{Started: r.started}, nil
		}
		ro.PauseAfter = steps
		ro.MaxSteps = max(cmp.Or(opts.MaxSteps, agent.DefaultMaxSteps), steps+1)
	}
	if task.Prompt == "" {
		task.Prompt = r.task
	}
	res, err := agent.Run(ctx, task, r.Model(), ro)
	var paused *agent.PausedError
	switch {
	case errors.As(err, &paused):
		return &paused.State, nil
	case err != nil:
		return nil, fmt.Errorf("transcript: rebuild the run's state: %w", err)
	case r.result == nil:
		return nil, fmt.Errorf("transcript: rebuild the run's state: %w: the replay ended %s after %d steps, before the recorded run's step %d", ErrDiverged, res.ExitReason, res.StepsUsed, steps)
	case res.ExitReason != r.result.ExitReason || res.StepsUsed != r.result.StepsUsed:
		return nil, fmt.Errorf("transcript: rebuild the run's state: %w: the replay ended %s after %d steps, the recorded run %s after %d", ErrDiverged, res.ExitReason, res.StepsUsed, r.result.ExitReason, r.result.StepsUsed)
	}
	return ended, nil
}

// Resume prepares the transcript at path for its run to go on after its
// process was killed: it reads it, cuts the file after the entries of the
// run's last complete step (Replay.CompleteSteps; the step in flight at
// the crash is run again, and its entries would otherwise be there
// twice, as would a torn last line), and returns the entries kept and
// the number of steps they hold. A transcript of a run that ended is
// left as it is, with an error.
func Resume(path string) (*Log, int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, fmt.Errorf("transcript: %w", err)
	}
	log, err := Read(bytes.NewReader(data))
	if err != nil {
		return nil, 0, err
	}
	r, err := NewReplay(log)
	if err != nil && len(log.Entries) == 0 {
		return nil, 0, fmt.Errorf("transcript: %s holds no entries", path)
	}
	steps := 0
	if err == nil {
		if r.Result() != nil {
			return nil, 0, fmt.Errorf("transcript: %s: the run ended", path)
		}
		steps = r.CompleteSteps()
	}
	n := 0
	for n < len(log.Entries) && log.Entries[n].Step <= steps {
		n++
	}
	if err := CutLines(path, data, n); err != nil {
		return nil, 0, fmt.Errorf("transcript: %w", err)
	}
	log.Entries, log.Torn = log.Entries[:n], 0
	return log, steps, nil
}

// CutLines truncates the file at path, whose content is data, after its
// first n lines.
func CutLines(path string, data []byte, n int) error {
	keep := 0
	for range n {
		i := bytes.IndexByte(data[keep:], '\n')
		if i < 0 {
			return fmt.Errorf("%s has fewer than %d lines", path, n)
		}
		keep += i + 1
	}
	if keep == len(data) {
		return nil
	}
	return os.Truncate(path, int64(keep))
}
