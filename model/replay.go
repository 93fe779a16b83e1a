package model

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/trace"
)

// ErrNoRawResponses is wrapped by NewReplay's error for a trace recorded
// without raw responses.
var ErrNoRawResponses = errors.New("the trace has no raw model responses; record the run with --record-raw (agent.Options.RecordRaw)")

// ErrDiverged is wrapped by the error a Replay returns when the replayed run
// no longer matches the recorded one: the task differs, a tool observation
// differs from the recorded one, or the run asks for more model responses
// than were recorded. The loop ends the run with exit reason model_error and
// the error's text, which says at which step and for which tool.
var ErrDiverged = errors.New("replay diverged from the recorded run")

// ReplayConfig configures a Replay.
type ReplayConfig struct {
	// RunID selects the run to replay in a trace that holds several; empty
	// means the last run of the trace.
	RunID string
}

// Replay is a model that re-runs a recorded run: it answers each call with
// the next recorded turn of the trace (recorded with raw recording on): the
// raw responses of the step's model_action events, each parsed by
// ParseAction exactly like the original, with the recorded token usage. A response the original run rejected as invalid output is rejected
// again.
//
// Replay checks that the replayed run takes the recorded path: before each
// answer it compares the task and every new Observation in the history with
// the recorded observation (tool name, failure, and the sha256 summary of
// the content, which is all a trace keeps). On the first difference it
// returns an error wrapping ErrDiverged that names the step and the tool; the
// observation of a run's very last step is compared only if the model is
// asked again.
//
// A Replay serves one run; it is safe for concurrent use.
type Replay struct {
	mu       sync.Mutex
	task     string // the recorded task summary, when recorded
	maxSteps int
	steps    []replayStep
	obs      []gen.TraceEvent
	next     int // index into steps
	checked  int // history items already compared
	seen     int // observations already compared
}

// replayStep is one recorded model call: the model_action events of its
// turn, in order, or its one model_feedback event.
type replayStep struct {
	evs      []gen.TraceEvent
	feedback bool
}

// OpenReplay reads a JSONL trace file and returns a Replay of one of its
// runs (see NewReplay). A torn last line is ignored.
func OpenReplay(path string, cfg ReplayConfig) (*Replay, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	defer f.Close()
	log, err := trace.Read(f)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	return NewReplay(log.Events, cfg)
}

// NewReplay returns a Replay of the run cfg.RunID (or the last run) in
// events. It fails when the run made no model calls or was recorded without
// raw responses (ErrNoRawResponses).
func NewReplay(events []gen.TraceEvent, cfg ReplayConfig) (*Replay, error) {
	runID := cfg.RunID
	if runID == "" {
		for _, ev := range events {
			if ev.EventType == gen.TraceEventTypeRunStarted || runID == "" {
				runID = ev.RunId
			}
		}
		if runID == "" {
			return nil, errors.New("replay: the trace has no events")
		}
	}
	r := &Replay{}
	found := false
	for _, ev := range events {
		if ev.RunId != runID {
			continue
		}
		found = true
		switch ev.EventType {
		case gen.TraceEventTypeRunStarted:
			if ev.InputSummary != nil {
				r.task = *ev.InputSummary
			}
			if ev.MaxSteps != nil {
				r.maxSteps = *ev.MaxSteps
			}
		case gen.TraceEventTypeModelAction, gen.TraceEventTypeModelFeedback:
			if ev.EventType == gen.TraceEventTypeModelFeedback && ev.FeedbackKind != nil && *ev.FeedbackKind != gen.FeedbackKindInvalidModelOutput {
				continue // the loop's own feedback (a stuck warning), not a model reply
			}
			if ev.RawResponse == nil {
				return nil, fmt.Errorf("replay: run %s, step %d: %w", runID, ev.Step, ErrNoRawResponses)
			}
			feedback := ev.EventType == gen.TraceEventTypeModelFeedback
			if n := len(r.steps); n > 0 && !feedback && !r.steps[n-1].feedback && r.steps[n-1].evs[0].Step == ev.Step {
				// Another action of the step's turn.
				r.steps[n-1].evs = append(r.steps[n-1].evs, ev)
				continue
			}
			r.steps = append(r.steps, replayStep{evs: []gen.TraceEvent{ev}, feedback: feedback})
		case gen.TraceEventTypeObservation:
			r.obs = append(r.obs, ev)
		}
	}
	if !found {
		return nil, errors.New("replay: the trace has no run with that id")
	}
	if len(r.steps) == 0 {
		return nil, fmt.Errorf("replay: run %s made no model calls", runID)
	}
	return r, nil
}

// MaxSteps returns the recorded run's step budget (0 when not recorded); a
// replay should run with the same budget.
func (r *Replay) MaxSteps() int { return r.maxSteps }

var _ agent.Model = (*Replay)(nil)

// Next returns the next recorded turn — the actions of one recorded step,
// in order, with the step's usage — after checking that the task and the
// observations so far match the recorded run.
func (r *Replay) Next(ctx context.Context, req *agent.Request) (agent.Turn, error) {
	task, history := req.Task, req.History
	if err := ctx.Err(); err != nil {
		return agent.Turn{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.next == 0 && r.task != "" {
		if got := trace.Summary(task.Prompt); got != r.task {
			return agent.Turn{}, fmt.Errorf("%w: the task differs from the recorded one (recorded %s, replayed %s)", ErrDiverged, r.task, got)
		}
	}
	if err := r.compare(history); err != nil {
		return agent.Turn{}, err
	}
	if r.next >= len(r.steps) {
		return agent.Turn{}, fmt.Errorf("%w at step %d: the recorded run made only %d model calls", ErrDiverged, r.next+1, len(r.steps))
	}
	s := r.steps[r.next]
	r.next++
	first := &s.evs[0]
	if s.feedback {
		a, err := ParseAction(*first.RawResponse)
		var inv *agent.InvalidOutputError
		switch {
		case errors.As(err, &inv):
			inv.Usage = first.Usage
			return agent.Turn{}, inv
		case err == nil || a.ToolCall != nil || a.Finish != nil:
			// The original adapter rejected a well-formed action (an
			// unknown tool, say): reject it again.
			return agent.Turn{}, &agent.InvalidOutputError{Message: "the recorded run rejected this model output", Raw: *first.RawResponse, Usage: first.Usage}
		}
		return agent.Turn{}, fmt.Errorf("replay: step %d: %w", first.Step, err)
	}
	turn := agent.Turn{Actions: make([]agent.Action, len(s.evs)), Usage: first.Usage}
	for i := range s.evs {
		ev := &s.evs[i]
		a, err := ParseAction(*ev.RawResponse)
		var inv *agent.InvalidOutputError
		switch {
		case errors.As(err, &inv):
			// Not %w: this is a broken trace, not model output to give feedback on.
			return agent.Turn{}, fmt.Errorf("replay: step %d: the recorded raw response is not a valid action: %s", ev.Step, inv.Message)
		case err != nil:
			return agent.Turn{}, fmt.Errorf("replay: step %d: %w", ev.Step, err)
		}
		if !matches(a, ev) {
			return agent.Turn{}, fmt.Errorf("replay: step %d: the recorded raw response does not match the recorded action", ev.Step)
		}
		turn.Actions[i] = a
	}
	return turn, nil
}

// compare checks the observations of history that were not compared yet
// against the recorded ones, in order.
func (r *Replay) compare(history agent.History) error {
	for i := r.checked; i < history.Len(); i++ {
		it := history.At(i)
		if it.Observation == nil {
			continue
		}
		obs := it.Observation
		if r.seen >= len(r.obs) {
			return fmt.Errorf("%w at step %d: the %s call has an observation the recorded run does not have", ErrDiverged, r.next, obs.ToolName)
		}
		rec := r.obs[r.seen]
		r.seen++
		recTool := deref(rec.ToolName)
		if !trace.Names(recTool, obs.ToolName) {
			return fmt.Errorf("%w at step %d: the observation is from tool %s, the recorded one from %s", ErrDiverged, rec.Step, obs.ToolName, recTool)
		}
		if rec.IsError != nil && *rec.IsError != obs.IsError {
			verb := "failed"
			if !obs.IsError {
				verb = "succeeded"
			}
			return fmt.Errorf("%w at step %d: the %s call %s, unlike in the recorded run", ErrDiverged, rec.Step, obs.ToolName, verb)
		}
		if got := trace.Summary(obs.Content); rec.Output != nil && *rec.Output != got {
			return fmt.Errorf("%w at step %d: the %s observation differs from the recorded one (recorded %s, replayed %s)", ErrDiverged, rec.Step, obs.ToolName, *rec.Output, got)
		}
	}
	r.checked = history.Len()
	return nil
}

// matches reports whether a is the action the event recorded.
func matches(a agent.Action, ev *gen.TraceEvent) bool {
	if ev.ActionType == nil {
		return true
	}
	switch *ev.ActionType {
	case gen.ActionTypeToolCall:
		return a.ToolCall != nil && (ev.ToolName == nil || trace.Names(*ev.ToolName, a.ToolCall.ToolName)) &&
			(ev.CallId == nil || a.ToolCall.CallId != nil && trace.Names(*ev.CallId, *a.ToolCall.CallId))
	case gen.ActionTypeFinish:
		return a.Finish != nil && (ev.Output == nil || *ev.Output == trace.Summary(a.Finish.Answer))
	}
	return false
}
