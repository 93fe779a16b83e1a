package openai_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
	"github.com/specloop/specloop/model/openai"
)

// A provider failure reaches the caller of agent.Run (and agent.Answer)
// as a *model.ProviderError, so a program can branch on the HTTP status.
func TestRunReturnsProviderError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status  int
		file    string
		retries int
		code    string
	}{
		{http.StatusTooManyRequests, "error_429.json", 1, "rate_limit_exceeded"},
		{http.StatusInternalServerError, "error_500.json", 0, "server_error"},
	}
	for _, tt := range tests {
		t.Run(http.StatusText(tt.status), func(t *testing.T) {
			t.Parallel()
			fail := reply{status: tt.status, header: map[string]string{"Retry-After": "0"}, body: testdata(t, tt.file)}
			s := newServer(t, fail, fail)
			retries := tt.retries
			if retries == 0 {
				retries = -1 // none; 0 is the default
			}
			m := newModel(t, s, func(c *openai.Config) { c.MaxRetries = retries })
			res, _, err := runTask(t, m, agent.Options{})
			var pe *model.ProviderError
			if !errors.As(err, &pe) {
				t.Fatalf("errors.As(%v, *model.ProviderError) is false", err)
			}
			if res.ExitReason != gen.ExitReasonModelError || pe.Provider != "openai" || pe.StatusCode != tt.status || pe.Retries != tt.retries || pe.Code != tt.code {
				t.Fatalf("result %s, provider error %+v; want model_error, status %d after %d retries, code %s", res.ExitReason, pe, tt.status, tt.retries, tt.code)
			}
			if res.Error == nil || !strings.Contains(*res.Error, pe.Error()) {
				t.Fatalf("the result's error %v does not say what the provider error says (%q)", res.Error, pe.Error())
			}

			s = newServer(t, fail, fail)
			_, err = agent.Answer(t.Context(), "Compute 12 x 7.", newModel(t, s, func(c *openai.Config) { c.MaxRetries = -1 }), agent.Options{})
			if !errors.Is(err, agent.ErrModel) || !errors.As(err, &pe) || pe.StatusCode != tt.status {
				t.Fatalf("Answer error %v, want ErrModel wrapping the provider error", err)
			}
		})
	}
}
