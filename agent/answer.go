package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/specloop/specloop/gen"
)

// Sentinels for the ways a run can end other than finished; an *ExitError
// matches the one for its exit reason with errors.Is.
var (
	ErrMaxStepsExceeded    = errors.New("step budget exceeded")
	ErrCheckFailed         = errors.New("completion check still failing")
	ErrInvalidModelOutput  = errors.New("invalid model output")
	ErrTokenBudgetExceeded = errors.New("token budget exceeded")
	ErrModel               = errors.New("model failed")
	ErrInternal            = errors.New("internal error")
	ErrCancelled           = errors.New("run cancelled")
	ErrInterrupted         = errors.New("run interrupted")
)

var sentinels = map[gen.ExitReason]error{
	gen.ExitReasonMaxStepsExceeded:      ErrMaxStepsExceeded,
	gen.ExitReasonCheckFailed:           ErrCheckFailed,
	gen.ExitReasonInvalidModelOutput:    ErrInvalidModelOutput,
	gen.ExitReasonTokenBudgetExceeded:   ErrTokenBudgetExceeded,
	gen.ExitReasonModelError:            ErrModel,
	gen.ExitReasonInternalError:         ErrInternal,
	gen.ExitReasonCancelled:             ErrCancelled,
	gen.ExitReasonInterrupted:           ErrInterrupted,
	gen.ExitReasonStuck:                 ErrStuck,
	gen.ExitReasonContextWindowExceeded: ErrContextWindowExceeded,
}

// ExitError is a run that did not finish. Its Result holds the details;
// errors.Is(err, ErrMaxStepsExceeded) and friends tell the reasons apart.
type ExitError struct {
	Result gen.RunResult
	// Cause is the underlying error for internal and model errors (what
	// Run returned), nil otherwise.
	Cause error
}

func (e *ExitError) Error() string {
	msg := fmt.Sprintf("run ended %s after %d steps", e.Result.ExitReason, e.Result.StepsUsed)
	if e.Result.Error != nil {
		msg += ": " + *e.Result.Error
	}
	return msg
}

// Is matches the sentinel of the run's exit reason.
func (e *ExitError) Is(target error) bool { return sentinels[e.Result.ExitReason] == target }

// Unwrap returns the cause, if any.
func (e *ExitError) Unwrap() error { return e.Cause }

// Answer runs the task and returns just the answer, or an *ExitError when
// the run did not finish.
func Answer(ctx context.Context, prompt string, model Model, opts Options) (string, error) {
	res, err := Run(ctx, gen.Task{Prompt: prompt}, model, opts)
	if res.ExitReason == gen.ExitReasonFinished {
		return *res.Answer, nil
	}
	return "", &ExitError{Result: res, Cause: err}
}
