package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/specloop/specloop/gen"
)

// Model proposes the next action of a run from the task and the history so
// far (a model that may propose several at once is also a TurnModel). Implementations must not keep the history's items beyond the call
// unless they copy them; the History itself is safe to keep.
//
// NextAction returns an *InvalidOutputError when the model answered with
// something that is not a valid action (the loop turns it into feedback) and
// any other error when the model could not be asked (the run ends with
// model_error, or cancelled when ctx is done).
type Model interface {
	NextAction(ctx context.Context, task gen.Task, history History) (Action, error)
}

// TurnModel is an optional ability of a Model: a model whose reply may hold
// several actions (parallel tool calls). Run asks a Model that is also a
// TurnModel for turns with NextTurn and never calls its NextAction; any
// other Model makes one-action turns. The errors are NextAction's.
//
// A turn must hold between 1 and MaxTurnActions actions, each with
// exactly one of ToolCall and Finish set, and a Finish may only be its
// last action; a model that breaks this ends the run with internal_error
// (output the model itself got wrong is an *InvalidOutputError instead).
type TurnModel interface {
	NextTurn(ctx context.Context, task gen.Task, history History) (Turn, error)
}

// Turn is one model call's proposal: the actions of the spec's Turn, which
// the loop runs in order within one step, each tool call with its own
// Observation.
type Turn struct {
	Actions []Action
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
}

func (e *InvalidOutputError) Error() string { return "invalid model output: " + e.Message }

// IsInvalidOutput reports whether err is (or wraps) an *InvalidOutputError.
func IsInvalidOutput(err error) bool {
	var e *InvalidOutputError
	return errors.As(err, &e)
}
