package adapt

import (
	"context"
	"errors"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
)

// fail turns the error of a call that failed after retries into what Post
// returns: a *ProviderError naming the provider (the loop ends the run with
// model_error), within an *agent.ContextLengthError with the window the
// provider named when it refused the request as over the context window
// (the loop then compacts and retries).
func (e *Endpoint) fail(err error, retries int) error {
	pe := &ProviderError{Provider: e.Provider, Retries: retries, Err: err}
	var apiErr *APIError
	switch {
	case errors.As(err, &apiErr):
		var overWindow bool
		pe.StatusCode = apiErr.StatusCode
		pe.Code, overWindow = e.Classify(apiErr)
		if overWindow { // errors.As still finds pe
			return &agent.ContextLengthError{Window: apiErr.Window, Err: pe}
		}
	case errors.Is(err, context.DeadlineExceeded):
		pe.Timeout = e.Timeout
	}
	return pe
}

// ToUsage converts token counts to the spec's Usage, clamping negative
// counts (a misbehaving server) to zero.
func ToUsage(input, output int64) *gen.Usage {
	return &gen.Usage{InputTokens: max(input, 0), OutputTokens: max(output, 0)}
}
