package adapt

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/specloop/specloop/gen"
)

// Attempts counts the HTTP attempts of one provider call, through an SDK
// middleware installed for that call.
type Attempts struct{ n atomic.Int32 }

// Middleware counts one attempt and passes the request on. Its signature is
// the SDKs' option.Middleware.
func (a *Attempts) Middleware(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	a.n.Add(1)
	return next(req)
}

// Retries is the number of attempts after the first.
func (a *Attempts) Retries() int { return max(int(a.n.Load())-1, 0) }

// Status extracts the HTTP status and the provider's error code from an SDK
// error, or 0 when err carries no response, and whether the provider
// refused the request as over the model's context window.
type Status func(err error) (code int, providerCode string, overWindow bool)

// Fail turns the error of a provider call made with ctx into what
// Next returns: ctx's error when the run was cancelled (the loop then
// ends the run as cancelled), otherwise a *model.ProviderError naming the
// provider (the loop ends the run with model_error), which wraps
// agent.ErrContextLength as well when the provider refused the request as
// over the context window (the loop then compacts and retries).
func Fail(ctx context.Context, provider string, err error, a *Attempts, timeout time.Duration, status Status) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", provider, context.Cause(ctx))
	}
	pe := &ProviderError{Provider: provider, Retries: a.Retries(), Err: err}
	if code, providerCode, overWindow := status(err); code != 0 {
		pe.StatusCode, pe.Code = code, providerCode
		if overWindow {
			return OverWindow(pe)
		}
	} else if errors.Is(err, context.DeadlineExceeded) {
		pe.Timeout = timeout
	}
	return pe
}

// ToUsage converts token counts to the spec's Usage, clamping negative
// counts (a misbehaving server) to zero.
func ToUsage(input, output int64) *gen.Usage {
	return &gen.Usage{InputTokens: max(input, 0), OutputTokens: max(output, 0)}
}
