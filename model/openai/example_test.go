package openai_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
	"github.com/specloop/specloop/model/openai"
)

// A provider failure ends the run with model_error, and the error Run
// returns is, through its chain, a *model.ProviderError: a program can
// branch on the HTTP status.
func Example_providerError() {
	// A provider that is always rate limited.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprint(w, `{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`)
	}))
	defer srv.Close()
	m, err := openai.New(openai.Config{Model: "gpt-4o-mini", BaseURL: srv.URL, MaxRetries: -1})
	if err != nil {
		panic(err)
	}

	res, err := agent.Run(context.Background(), gen.Task{Prompt: "Compute 12 x 7."}, m, agent.Options{})
	var pe *model.ProviderError
	if errors.As(err, &pe) {
		fmt.Println(res.ExitReason, pe.Provider, pe.StatusCode, pe.Code)
		if pe.StatusCode == http.StatusTooManyRequests {
			fmt.Println("rate limited: try again later")
		}
	}
	// Output:
	// model_error openai 429 rate_limit_exceeded
	// rate limited: try again later
}
