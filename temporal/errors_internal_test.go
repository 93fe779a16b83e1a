package temporal

import (
	"errors"
	"fmt"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/model"
)

// A model error crosses the activity boundary typed: after the SDK's own
// conversion to a failure and back, the workflow's error has the text of
// the model's, finds the *model.ProviderError (without the provider's
// message) and matches agent.ErrContextLength when the model's did.
func TestModelErrorCrossesTheActivityBoundary(t *testing.T) {
	t.Parallel()
	sdkErr := errors.New("POST: 400 Bad Request {\"message\":\"secret prompt\"}")
	tests := []struct {
		name  string
		err   error
		retry bool
	}{
		{"server error", &model.ProviderError{Provider: "openai", Retries: 3, StatusCode: 500, Code: "server_error", Err: sdkErr}, true},
		{"over the window", fmt.Errorf("%w: %w", agent.ErrContextLength, &model.ProviderError{Provider: "anthropic", StatusCode: 400, Code: "invalid_request_error", Err: sdkErr}), false},
		{"over the window, which it names", &agent.ContextLengthError{Window: 8192, Err: &model.ProviderError{Provider: "openai", StatusCode: 400, Code: "context_length_exceeded", Err: sdkErr}}, false},
		{"network", &model.ProviderError{Provider: "openai", Retries: 1, Err: errors.New("dial tcp: connection refused")}, true},
		{"not a provider's", errors.New("script exhausted"), false},
	}
	fc := temporal.GetDefaultFailureConverter()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			back := fc.FailureToError(fc.ErrorToFailure(modelError(tt.err)))
			var app *temporal.ApplicationError
			if !errors.As(back, &app) || app.NonRetryable() == tt.retry {
				t.Fatalf("activity error %v: retryable %v, want %v", back, app != nil && !app.NonRetryable(), tt.retry)
			}
			got := modelCallError(back)
			if got.Error() != tt.err.Error() {
				t.Fatalf("text %q, want the model's %q", got, tt.err)
			}
			if errors.Is(got, agent.ErrContextLength) != errors.Is(tt.err, agent.ErrContextLength) {
				t.Fatalf("%v: ErrContextLength %v, want %v", got, errors.Is(got, agent.ErrContextLength), !errors.Is(got, agent.ErrContextLength))
			}
			var wantCL, cl *agent.ContextLengthError
			if errors.As(tt.err, &wantCL) && (!errors.As(got, &cl) || cl.Window != wantCL.Window) {
				t.Fatalf("%v: ContextLengthError %+v, want the window %d", got, cl, wantCL.Window)
			}
			var want, pe *model.ProviderError
			if errors.As(tt.err, &want) != errors.As(got, &pe) {
				t.Fatalf("%v: ProviderError found %v, want %v", got, pe != nil, want != nil)
			}
			if pe != nil && (pe.Provider != want.Provider || pe.Retries != want.Retries || pe.StatusCode != want.StatusCode || pe.Code != want.Code || pe.Error() != want.Error()) {
				t.Fatalf("ProviderError %+v, want %+v", pe, want)
			}
			if pe != nil && pe.StatusCode != 0 && pe.Err != nil {
				t.Fatalf("the provider's error text crossed the boundary: %v", pe.Err)
			}
		})
	}
}
