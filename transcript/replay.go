package transcript

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
)

// ErrDiverged is wrapped by the error of a replay whose run asked for
// something the recorded run did not: another tool, another step, a
// compaction to another history. The error names the step.
var ErrDiverged = errors.New("the replay diverged from the recorded run")

// Replay is a run recorded in a transcript, to be run again with nothing
// executed: its Model answers each step with the recorded turn (or the
// recorded invalid output) and each request for a summary with the
// recorded summary, its Tools each call with the recorded observation as
// the model saw it, its Checker each check with the recorded result and
// its Approver each approval with the recorded decision. A run with
// commands whose output changes from one run to the next (timings,
// "(cached)") replays exactly. What the transcript redacted stays
// redacted.
//
// A recorded compaction is replayed at its step: the Model refuses the
// step's request as over the context window (agent.ErrContextLength)
// unless the loop compacted before it, and Observe, chained into the
// loop's observer, checks that the loop compacted to the recorded
// history.
type Replay struct {
	runID   string
	task    string
	started time.Time
	steps   map[int]*step // by step number
	last    int           // the last step with entries
	tools   []gen.ToolSpec
	result  *gen.RunResult // nil when the run has no run_finished
	sizer   agent.ContextSizer

	mu       sync.Mutex
	current  int   // the step the loop is at
	diverged error // a divergence Observe saw
}

// step is what the transcript holds of one step.
type step struct {
	actions    []agent.Action
	invalid    *string // the feedback of invalid output, when the step had no actions
	usage      *gen.Usage
	obs        []gen.Observation
	decisions  []gen.TranscriptEntry // approval_decided
	check      *gen.CheckResult
	rejected   bool        // a finish_rejected was recorded
	compaction *compaction // before the step's model call
	nextObs    int
	nextDec    int
}

// compaction is a recorded history_compacted.
type compaction struct {
	summary *string
	usage   *gen.Usage
	history *[]gen.HistoryItem
	done    bool // the replay compacted at this step
}

// NewReplay makes the replay of the run of log (its only run).
func NewReplay(log *Log) (*Replay, error) {
	r := &Replay{steps: map[int]*step{}}
	at := func(n int) *step {
		s := r.steps[n]
		if s == nil {
			s = &step{}
			r.steps[n] = s
		}
		r.last = max(r.last, n)
		return s
	}
	for i := range log.Entries {
		e := &log.Entries[i]
		r.runID = e.RunId
		switch e.EventType {
		case gen.TraceEventTypeRunStarted:
			r.started = e.Time
			if e.Task != nil {
				r.task = *e.Task
			}
			if e.ToolNames != nil {
				for _, name := range *e.ToolNames {
					// Only names were recorded: the replayed calls are not
					// validated again, and count as running commands.
					r.tools = append(r.tools, gen.ToolSpec{Name: name, InputSchema: map[string]any{"type": "object"}, RunsCommands: true})
				}
			}
		case gen.TraceEventTypeModelAction:
			if e.Action == nil {
				return nil, fmt.Errorf("transcript: entry %d: a model_action without its action", e.Seq)
			}
			v, err := e.Action.ValueByDiscriminator()
			if err != nil {
				return nil, fmt.Errorf("transcript: entry %d: %w", e.Seq, err)
			}
			s := at(e.Step)
			var a agent.Action
			switch v := v.(type) {
			case gen.ToolCall:
				a.ToolCall = &v
			case gen.Finish:
				a.Finish = &v
			}
			if e.Usage != nil {
				s.usage = e.Usage
			}
			s.actions = append(s.actions, a)
		case gen.TraceEventTypeModelFeedback:
			if f := e.Feedback; f != nil && f.Kind == gen.FeedbackKindInvalidModelOutput {
				s := at(e.Step)
				s.invalid, s.usage = &f.Message, e.Usage
			}
		case gen.TraceEventTypeObservation:
			if e.Observation != nil {
				s := at(e.Step)
				s.obs = append(s.obs, *e.Observation)
			}
		case gen.TraceEventTypeApprovalDecided:
			s := at(e.Step)
			s.decisions = append(s.decisions, *e)
		case gen.TraceEventTypeFinishRejected:
			s := at(e.Step)
			s.check, s.rejected = e.Check, true
		case gen.TraceEventTypeHistoryCompacted:
			at(e.Step).compaction = &compaction{summary: e.Summary, usage: e.Usage, history: e.History}
		case gen.TraceEventTypeRunFinished:
			res := e.Result
			if res == nil {
				res = &gen.RunResult{}
			}
			r.result = res
			if res.Check != nil && res.Check.Passed {
				at(e.Step).check = res.Check
			}
		}
	}
	if len(r.steps) == 0 {
		return nil, errors.New("transcript: the run has no model turns to replay")
	}
	return r, nil
}

// Task is the recorded run's task (redacted, as the transcript holds it).
func (r *Replay) Task() string { return r.task }

// Result is how the recorded run ended; nil when the transcript has no
// run_finished (the run's process was killed).
func (r *Replay) Result() *gen.RunResult { return r.result }

// CompleteSteps is the number of the recorded run's steps that the
// transcript holds whole: all of them for a run that ended; for one
// whose process was killed, those before a last step that was cut short
// (a tool call without its observation, a finish without the check's
// verdict).
func (r *Replay) CompleteSteps() int {
	if r.result != nil {
		return r.last
	}
	s := r.steps[r.last]
	calls := 0
	for _, a := range s.actions {
		if a.ToolCall != nil {
			calls++
		}
	}
	finish := len(s.actions) > 0 && s.actions[len(s.actions)-1].Finish != nil
	if (len(s.actions) > 0 || s.invalid != nil) && calls == len(s.obs) && (!finish || s.rejected) {
		return r.last
	}
	return r.last - 1
}

// Offer makes the replay's tools offer specs, the run's own tools' (for
// their hints and traits: which calls are asked about, which write
// files), where the transcript recorded only names: each recorded tool
// takes the spec of its name, in the recorded order; a recorded tool
// specs lacks keeps its name-only spec. A transcript without names takes
// specs as they are.
func (r *Replay) Offer(specs []gen.ToolSpec) {
	if len(r.tools) == 0 {
		r.tools = slices.Clone(specs)
		return
	}
	for i, t := range r.tools {
		if j := slices.IndexFunc(specs, func(s gen.ToolSpec) bool { return s.Name == t.Name }); j >= 0 {
			r.tools[i] = specs[j]
		}
	}
}

// Wire makes opts, a run's options, the replay's: the recorded
// observations answer the tool calls (the run's own tools give only their
// specs, see Offer), the recorded results the check (when opts has one),
// the recorded decisions the approvals, and the replay watches the
// compactions (Observe, before opts.Observer).
func (r *Replay) Wire(opts *agent.Options) {
	if opts.Tools != nil {
		r.Offer(opts.Tools.Specs())
	}
	opts.Tools = r.Tools()
	if opts.Check != nil {
		opts.Check = r.Checker()
	}
	opts.Approver = r.Approver()
	if watch := opts.Observer; watch != nil {
		opts.Observer = func(p agent.Progress) { r.Observe(p); watch(p) }
	} else {
		opts.Observer = r.Observe
	}
}

// Model answers the loop's requests with the recorded turns.
func (r *Replay) Model() agent.Model { return replayModel{r} }

// Tools answers the loop's tool calls with the recorded observations; it
// offers the recorded tools' names.
func (r *Replay) Tools() agent.ToolRuntime { return replayTools{r} }

// Checker answers the completion checks with the recorded results; nil
// when the recorded run had none.
func (r *Replay) Checker() agent.Checker {
	for _, s := range r.steps {
		if s.check != nil {
			return replayChecker{r}
		}
	}
	return nil
}

// Approver answers the approval requests with the recorded decisions.
func (r *Replay) Approver() agent.Approver {
	return agent.ApproverFunc(func(_ context.Context, req agent.ApprovalRequest) (agent.Approval, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		s := r.at(req.Step)
		if s.nextDec >= len(s.decisions) {
			return agent.Approval{}, fmt.Errorf("%w: step %d: an approval of %s that was not recorded", ErrDiverged, req.Step, req.Call.ToolName)
		}
		d := s.decisions[s.nextDec]
		s.nextDec++
		if d.ToolName == nil || *d.ToolName != req.Call.ToolName || d.Decision == nil {
			return agent.Approval{}, fmt.Errorf("%w: step %d: an approval of %s where %s was recorded", ErrDiverged, req.Step, req.Call.ToolName, deref(d.ToolName))
		}
		return agent.Approval{Decision: *d.Decision, Reason: deref(d.Reason)}, nil
	})
}

// Observe checks, for a history_compacted of the replayed run, that the
// loop compacted at the recorded step to the recorded history; chain it
// into the loop's Observer. A divergence ends the replay at its next
// model call.
func (r *Replay) Observe(p agent.Progress) {
	if p.Event == nil || p.Event.EventType != gen.TraceEventTypeHistoryCompacted {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	n := p.Event.Step
	c := r.at(n).compaction
	switch {
	case c == nil:
		r.diverge(fmt.Errorf("%w: step %d: the history was compacted, which the recorded run did not do", ErrDiverged, n))
		return
	case c.history != nil && !sameHistory(p.History, *c.history):
		r.diverge(fmt.Errorf("%w: step %d: the history was compacted to another history than the recorded one", ErrDiverged, n))
	}
	c.done = true
}

func (r *Replay) diverge(err error) {
	if r.diverged == nil {
		r.diverged = err
	}
}

// at is step n's record, empty when the transcript has none.
func (r *Replay) at(n int) *step {
	if s := r.steps[n]; s != nil {
		return s
	}
	return &step{}
}

// sameHistory reports whether h is, in the spec's wire form, items.
func sameHistory(h agent.History, items []gen.HistoryItem) bool {
	if h.Len() != len(items) {
		return false
	}
	for i, it := range h.All() {
		w, err := it.Wire()
		if err != nil || !sameJSON(w, items[i]) {
			return false
		}
	}
	return true
}

// sameJSON reports whether a and b encode alike (a recorded value went
// through JSON: its numbers are float64, its empty fields absent).
func sameJSON(a, b gen.HistoryItem) bool {
	ja, erra := a.MarshalJSON()
	jb, errb := b.MarshalJSON()
	if erra != nil || errb != nil {
		return false
	}
	var va, vb any
	if json.Unmarshal(ja, &va) != nil || json.Unmarshal(jb, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

type replayModel struct{ r *Replay }

func (m replayModel) Next(_ context.Context, req *agent.Request) (agent.Turn, error) {
	r := m.r
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.diverged != nil {
		return agent.Turn{}, r.diverged
	}
	n := r.current + 1 // the step asked for, or compacted before
	s := r.at(n)
	if req.Summarize {
		if c := s.compaction; c != nil && c.summary != nil {
			return agent.Turn{Summary: *c.summary, Usage: c.usage}, nil
		}
		// The recorded run compacted without a summary.
		return agent.Turn{}, fmt.Errorf("step %d: no summary was recorded: %w", n, agent.ErrContextLength)
	}
	if c := s.compaction; c != nil && !c.done {
		// The recorded run compacted before this step: the loop compacts
		// when the request is refused as too long.
		c.done = true
		return agent.Turn{}, fmt.Errorf("step %d: the recorded run compacted its history here: %w", n, agent.ErrContextLength)
	}
	r.current = n
	switch {
	case len(s.actions) > 0:
		return agent.Turn{Actions: s.actions, Usage: s.usage}, nil
	case s.invalid != nil:
		return agent.Turn{}, &agent.InvalidOutputError{Message: *s.invalid, Usage: s.usage}
	}
	return agent.Turn{}, fmt.Errorf("%w: step %d was never recorded", ErrDiverged, n)
}

// ContextWindow is the context window of the model given to State (as a
// ContextSizer), so that the replayed run budgets its context as the
// recorded one did; 0 otherwise.
func (m replayModel) ContextWindow() int {
	if m.r.sizer == nil {
		return 0
	}
	return m.r.sizer.ContextWindow()
}

// RequestTokens is the estimate of the model given to State.
func (m replayModel) RequestTokens(req *agent.Request) int { return m.r.sizer.RequestTokens(req) }

type replayTools struct{ r *Replay }

func (t replayTools) Specs() []gen.ToolSpec { return t.r.tools }

// Patch is the recorded run's patch: what its tools changed, which the
// replay's did not.
func (t replayTools) Patch(context.Context) (string, error) {
	if res := t.r.result; res != nil && res.Patch != nil {
		return *res.Patch, nil
	}
	return "", nil
}

func (t replayTools) Call(_ context.Context, call *gen.ToolCall) (gen.Observation, error) {
	r := t.r
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.at(r.current)
	// The next recorded observation of this call: those the loop made
	// without calling a tool (a denial) are passed over.
	for i := s.nextObs; i < len(s.obs); i++ {
		o := s.obs[i]
		denied := o.ErrorCode != nil && *o.ErrorCode == gen.ErrorCodeDenied
		if denied || o.ToolName != call.ToolName || o.CallId != nil && call.CallId != nil && *o.CallId != *call.CallId {
			continue
		}
		s.nextObs = i + 1
		o.CallId = call.CallId
		return o, nil
	}
	return gen.Observation{}, fmt.Errorf("%w: step %d: a call of %s that was not recorded", ErrDiverged, r.current, call.ToolName)
}

type replayChecker struct{ r *Replay }

func (c replayChecker) Check(context.Context) (gen.CheckResult, error) {
	r := c.r
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.at(r.current)
	if s.check == nil {
		return gen.CheckResult{}, fmt.Errorf("%w: step %d: a check that was not recorded", ErrDiverged, r.current)
	}
	return *s.check, nil
}
