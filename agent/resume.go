package agent

import (
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/specloop/specloop/gen"
)

// Pausing and resuming a run, for a durable engine that must start a run
// over from a snapshot (a Temporal workflow's continue-as-new, which keeps
// a long run's workflow history short). With Options.PauseAfter, Run
// returns after that many steps, between two steps, with an error that
// wraps ErrPaused and is a *PausedError holding the run's State; Run with
// Options.Resume set to that State goes on where it stopped, with the same
// events, step numbers, budgets, usage and result as a run that never
// paused. Loop detection (StuckDetection) starts afresh at each resume:
// repeats that straddle a pause are not seen, and a warning given before
// it is given again.

// ErrPaused is wrapped by the error of a run that paused (PausedError).
var ErrPaused = errors.New("the run paused")

// PausedError is the error of a paused run: State resumes it.
type PausedError struct {
	State State
}

func (e *PausedError) Error() string { return ErrPaused.Error() }
func (e *PausedError) Unwrap() error { return ErrPaused }

// State is a paused run's state between two steps: everything the loop
// needs to go on but its Options. It is plain data (JSON-encodable), to be
// stored by the engine.
type State struct {
	// History is the history as the model sees it.
	History []Item
	// StepsUsed is the steps taken; the next step is StepsUsed+1.
	StepsUsed int
	// Usage is the model calls' usage so far; Counted says some call
	// reported any.
	Usage   gen.Usage
	Counted bool
	// Started is when the run started (for its duration).
	Started time.Time
	// Check is the completion check's last result.
	Check *gen.CheckResult `json:",omitempty"`
	// Approved are the tools approved for the rest of the run, CallIDs
	// the call ids the approvals gave, and Asked the call ids of the
	// run's approval requests so far (a later call with one of them is
	// asked about under an id of its own). Writes counts the calls
	// of tools that write files that ran, and ApprovedAt holds, for each
	// tool that runs commands and was approved, Writes at its last
	// approval (an approve_for_run of it lapses once they differ).
	Approved   []string       `json:",omitempty"`
	CallIDs    int            `json:",omitempty"`
	Asked      []string       `json:",omitempty"`
	Writes     int            `json:",omitempty"`
	ApprovedAt map[string]int `json:",omitempty"`
	// ContextBase, ContextBaseEstimate and ContextKnown are the context
	// budget's last reported request size and its estimate.
	ContextBase         int  `json:",omitempty"`
	ContextBaseEstimate int  `json:",omitempty"`
	ContextKnown        bool `json:",omitempty"`
	// ContextWindow is the window a refusal named (ContextLengthError),
	// which the run keeps to; 0 when none did.
	ContextWindow int `json:",omitempty"`
}

// state snapshots the loop after step steps.
func (l *loop) state(steps int) State {
	a := &l.approvals
	st := State{History: l.history.view().Items(), StepsUsed: steps, Usage: l.usage, Counted: l.counted, Started: l.start,
		Check: l.check, CallIDs: a.named, Writes: a.writes,
		ContextBase: l.ctxb.base, ContextBaseEstimate: l.ctxb.baseEst, ContextKnown: l.ctxb.known}
	if l.ctxb.learned {
		st.ContextWindow = l.ctxb.window
	}
	st.Approved = slices.Sorted(maps.Keys(a.approved))
	st.Asked = slices.Sorted(maps.Keys(a.asked))
	if len(a.approvedAt) > 0 {
		st.ApprovedAt = maps.Clone(a.approvedAt)
	}
	return st
}

// restore sets the loop to st; approvals must be initialized.
func (l *loop) restore(st *State) {
	for _, it := range st.History {
		l.history.add(it.clone())
	}
	l.usage, l.counted, l.start, l.check = st.Usage, st.Counted, st.Started, st.Check
	a := &l.approvals
	a.named, a.writes = st.CallIDs, st.Writes
	for _, id := range st.Asked {
		a.asked[id] = true
	}
	maps.Copy(a.approvedAt, st.ApprovedAt)
	for _, name := range st.Approved {
		a.approved[name] = true
	}
	l.ctxb.base, l.ctxb.baseEst, l.ctxb.known = st.ContextBase, st.ContextBaseEstimate, st.ContextKnown
	if st.ContextWindow > 0 {
		l.ctxb.window, l.ctxb.learned = st.ContextWindow, true
	}
}
