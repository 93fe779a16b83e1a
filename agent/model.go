package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/specloop/specloop/gen"
)

// Model proposes the next turn of a run. The loop calls Next once per
// step with a Request holding the task, the history so far and the tools
// the run offers; an adapter renders the tools from the request (they are
// the same slice for every request of a run, so it may cache what it
// derives from them). Implementations must not keep the history's items
// beyond the call unless they copy them; the History itself is safe to
// keep.
//
// Next returns an *InvalidOutputError when the model answered with
// something that is not a valid turn (the loop turns it into feedback) and
// any other error when the model could not be asked (the run ends with
// model_error, or cancelled when ctx is done). A turn must hold between 1
// and MaxTurnActions actions, each with exactly one of ToolCall and
// Finish set, and a Finish may only be its last action; a model that
// breaks this ends the run with internal_error.
//
// A model that proposes one action at a time is a OneAction.
type Model interface {
	Next(ctx context.Context, req *Request) (Turn, error)
}

// Request is what a model is asked: the run's task, its history so far and
// the tools it offers (the tool runtime's Specs, the same slice for every
// request of a run; nil when the run has no tools).
type Request struct {
	Task    gen.Task
	History History
	Tools   []gen.ToolSpec
	// Summarize asks for a summary of History instead of a turn, for
	// compaction (see Compaction): the model answers with Turn.Summary
	// set and no actions, calling no tool. The loop asks it only of a
	// ContextSizer, and of a model whose error wrapped ErrContextLength:
	// such a model must answer it.
	Summarize bool
	// OnText, when set, is called with each piece of the model's text as
	// it arrives (an adapter that streams its reply; the loop passes it
	// on to Options.Live), never with tool arguments or a summary; nil
	// means nobody listens. The assembled
	// reply is what counts: a reply cut off and asked for again starts
	// its text again, and the turn Next returns is the one to act on.
	OnText func(delta string)
}

// OneAction is a Model that proposes one action per call, as the seed's
// models do: its turns hold the one action, with the action's Usage.
type OneAction func(ctx context.Context, req *Request) (Action, error)

// Next calls f and returns its action as a one-action turn.
func (f OneAction) Next(ctx context.Context, req *Request) (Turn, error) {
	a, err := f(ctx, req)
	if err != nil {
		return Turn{}, err
	}
	return Turn{Actions: []Action{a}, Usage: a.Usage}, nil
}

// Turn is one model call's proposal: the actions of the spec's Turn, which
// the loop runs in order within one step, each tool call with its own
// Observation; or, for a Request with Summarize set, the summary.
type Turn struct {
	Actions []Action
	// Summary is the answer to a Request with Summarize set.
	Summary string
	// Usage is the token usage of the model call, when the provider
	// reports it; the actions' own Usage is ignored.
	Usage *gen.Usage
}

// MaxTurnActions is the most actions a turn may hold: the maxItems of the
// spec's Turn.actions.
const MaxTurnActions = gen.MaxItemsTurnActions

// checkTurn returns why t is not a well-formed turn, or nil.
func checkTurn(t *Turn) error {
	n := len(t.Actions)
	switch {
	case n == 0:
		return errors.New("the model returned a turn without actions")
	case n > MaxTurnActions:
		return fmt.Errorf("the model returned a turn of %d actions, more than %d", n, MaxTurnActions)
	}
	for i := range t.Actions {
		a := &t.Actions[i]
		if (a.ToolCall == nil) == (a.Finish == nil) {
			return fmt.Errorf("the model returned an action (%d of %d) without exactly one of a tool call and a finish", i+1, n)
		}
		if a.Finish != nil && i != n-1 {
			return fmt.Errorf("the model returned a finish (action %d of %d) that is not the last action of its turn", i+1, n)
		}
	}
	return nil
}

// Action is what a model proposed: exactly one of ToolCall and Finish is set.
type Action struct {
	ToolCall *gen.ToolCall
	Finish   *gen.Finish
	// Usage is the token usage of the model call, when the provider reports it.
	Usage *gen.Usage
	// Raw is the model's output in the wire form of an Action, recorded in the
	// trace only when raw recording is on.
	Raw string
}

// InvalidOutputError is model output that is not a valid Action. Message says
// what is wrong and where (a JSON pointer), never repeating the output.
type InvalidOutputError struct {
	Message string
	// Raw is the output that failed to parse, recorded only when raw
	// recording is on.
	Raw string
	// Usage is the token usage of the call, when known.
	Usage *gen.Usage
	// Text is the reply's text when the reply was text and no action at
	// all (not a malformed action): in a follow-up run (Options.FollowUp)
	// it is the model's message to the person, which ends the turn.
	Text string
}

func (e *InvalidOutputError) Error() string { return "invalid model output: " + e.Message }

// IsInvalidOutput reports whether err is (or wraps) an *InvalidOutputError.
func IsInvalidOutput(err error) bool {
	var e *InvalidOutputError
	return errors.As(err, &e)
}
