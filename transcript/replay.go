package transcript

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
)

// ErrDiverged is wrapped by the error of a replay whose run asked for
// something the recorded run did not: another tool, or more steps.
var ErrDiverged = errors.New("the replay diverged from the recorded run")

// Replay is a run recorded in a transcript, to be run again with nothing
// executed: its Model answers each step with the recorded turn (or the
// recorded invalid output), its Tools each call with the recorded
// observation and its Checker each check with the recorded result. A run
// with commands whose output changes from one run to the next (timings,
// "(cached)") replays exactly. What the transcript redacted stays
// redacted.
type Replay struct {
	steps  map[int]step // by step number
	tools  []gen.ToolSpec
	obs    []gen.Observation
	checks []gen.CheckResult

	mu         sync.Mutex
	nextObs    int
	nextCheck  int
	stepsTaken int
}

type step struct {
	actions []agent.Action
	invalid string // the feedback of invalid output, when the step had no actions
	usage   *gen.Usage
}

// NewReplay makes the replay of the run of log (its only run).
func NewReplay(log *Log) (*Replay, error) {
	r := &Replay{steps: map[int]step{}}
	for i := range log.Entries {
		e := &log.Entries[i]
		switch e.EventType {
		case gen.TraceEventTypeRunStarted:
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
			s := r.steps[e.Step]
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
			r.steps[e.Step] = s
		case gen.TraceEventTypeModelFeedback:
			if f := e.Feedback; f != nil && f.Kind == gen.FeedbackKindInvalidModelOutput {
				s := r.steps[e.Step]
				s.invalid = f.Message
				r.steps[e.Step] = s
			}
		case gen.TraceEventTypeObservation:
			if e.Observation != nil {
				r.obs = append(r.obs, *e.Observation)
			}
		case gen.TraceEventTypeFinishRejected:
			if e.Check != nil {
				r.checks = append(r.checks, *e.Check)
			}
		case gen.TraceEventTypeRunFinished:
			if e.Result != nil && e.Result.Check != nil && e.Result.Check.Passed {
				r.checks = append(r.checks, *e.Result.Check)
			}
		}
	}
	if len(r.steps) == 0 {
		return nil, errors.New("transcript: the run has no model turns to replay")
	}
	return r, nil
}

// Model answers the loop's requests with the recorded turns.
func (r *Replay) Model() agent.Model { return replayModel{r} }

// Tools answers the loop's tool calls with the recorded observations.
func (r *Replay) Tools() agent.ToolRuntime { return replayTools{r} }

// Checker answers the completion checks with the recorded results; nil
// when the recorded run had none.
func (r *Replay) Checker() agent.Checker {
	if len(r.checks) == 0 {
		return nil
	}
	return replayChecker{r}
}

type replayModel struct{ r *Replay }

func (m replayModel) Next(_ context.Context, req *agent.Request) (agent.Turn, error) {
	if req.Summarize {
		return agent.Turn{}, nil // a replay keeps the recorded history: it never needs a summary
	}
	r := m.r
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stepsTaken++
	s, ok := r.steps[r.stepsTaken]
	switch {
	case !ok:
		return agent.Turn{}, fmt.Errorf("%w: step %d was never recorded", ErrDiverged, r.stepsTaken)
	case len(s.actions) == 0:
		return agent.Turn{}, &agent.InvalidOutputError{Message: s.invalid, Usage: s.usage}
	}
	return agent.Turn{Actions: s.actions, Usage: s.usage}, nil
}

type replayTools struct{ r *Replay }

func (t replayTools) Specs() []gen.ToolSpec { return t.r.tools }

func (t replayTools) Call(_ context.Context, call *gen.ToolCall) (gen.Observation, error) {
	r := t.r
	r.mu.Lock()
	defer r.mu.Unlock()
	// The next recorded observation of this call: those the loop made
	// without calling a tool (an unknown tool's) are passed over.
	for i := r.nextObs; i < len(r.obs); i++ {
		o := r.obs[i]
		if o.ToolName != call.ToolName || o.CallId != nil && call.CallId != nil && *o.CallId != *call.CallId {
			continue
		}
		r.nextObs = i + 1
		o.CallId = call.CallId
		return o, nil
	}
	return gen.Observation{}, fmt.Errorf("%w: a call of %s that was not recorded", ErrDiverged, call.ToolName)
}

type replayChecker struct{ r *Replay }

func (c replayChecker) Check(context.Context) (gen.CheckResult, error) {
	r := c.r
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.nextCheck >= len(r.checks) {
		return gen.CheckResult{}, fmt.Errorf("%w: a check after the last recorded one", ErrDiverged)
	}
	r.nextCheck++
	return r.checks[r.nextCheck-1], nil
}
