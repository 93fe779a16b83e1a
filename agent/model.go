package agent

import (
	"context"
	"errors"

	"github.com/specloop/specloop/gen"
)

// Model proposes the next action of a run from the task and the history so
// far. Implementations must not keep the history's items beyond the call
// unless they copy them; the History itself is safe to keep.
//
// NextAction returns an *InvalidOutputError when the model answered with
// something that is not a valid action (the loop turns it into feedback) and
// any other error when the model could not be asked (the run ends with
// model_error, or cancelled when ctx is done).
type Model interface {
	NextAction(ctx context.Context, task gen.Task, history History) (Action, error)
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
