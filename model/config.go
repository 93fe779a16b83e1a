package model

import (
	"cmp"
	"errors"
	"net/http"
	"os"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model/anthropic"
	"github.com/specloop/specloop/model/internal/adapt"
	"github.com/specloop/specloop/model/openai"
)

// ErrInvalidConfig is FromConfig's error for a configuration that is none
// of the spec's model configurations.
var ErrInvalidConfig = errors.New("the model configuration is invalid")

// Options are what FromConfig takes from the program rather than from the
// run's configuration. The zero value is the defaults.
type Options struct {
	// System is the system prompt of openai and anthropic models; empty
	// means the adapters' default prompt for code tasks.
	System string
	// BaseURL is a provider's base URL; empty means the one of the
	// environment (OPENAI_BASE_URL, ANTHROPIC_BASE_URL), else the
	// provider's own API.
	BaseURL string
	// Getenv reads the provider's API key and base URL; nil means
	// os.Getenv. The key only ever comes from the environment.
	Getenv func(string) string
	// HTTPClient makes the provider requests; nil means a default client.
	HTTPClient *http.Client
}

// FromConfig returns the model of a run's model configuration (the spec's
// ModelConfig): a Script of the responses, or the openai or anthropic
// adapter. The run's tools come with each request (agent.Request.Tools),
// so a run builds its model once. An error other than ErrInvalidConfig is
// the adapter's (a missing API key, say); no error holds a secret.
func FromConfig(cfg gen.ModelConfig, opts Options) (agent.Model, error) {
	v, err := cfg.ValueByDiscriminator()
	if err != nil {
		return nil, ErrInvalidConfig
	}
	switch mc := v.(type) {
	case gen.ScriptModelConfig:
		return NewScript(mc.Responses...), nil
	case gen.OpenAIModelConfig:
		c := opts.config(openai.EnvAPIKey, openai.EnvBaseURL, mc.Model, mc.Temperature, mc.MaxOutputTokens, mc.ContextWindow)
		return orNil(openai.New(c))
	case gen.AnthropicModelConfig:
		c := opts.config(anthropic.EnvAPIKey, anthropic.EnvBaseURL, mc.Model, mc.Temperature, mc.MaxOutputTokens, mc.ContextWindow)
		return orNil(anthropic.New(c))
	}
	return nil, ErrInvalidConfig
}

// config is a provider adapter's configuration of the model name, the
// sampling settings and the window, with o's settings and the API key from
// the environment variable keyVar; the base URL, unless o has one, from
// urlVar.
func (o Options) config(keyVar, urlVar, name string, temp *float64, maxOut, window *int) adapt.Config {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	return adapt.Config{
		Model: name, Temperature: temp, MaxOutputTokens: int64(deref(maxOut)), ContextWindow: deref(window),
		APIKey: getenv(keyVar), BaseURL: cmp.Or(o.BaseURL, getenv(urlVar)), System: o.System, HTTPClient: o.HTTPClient,
	}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// orNil returns m as an agent.Model, or a nil one with err.
func orNil[M agent.Model](m M, err error) (agent.Model, error) {
	if err != nil {
		return nil, err
	}
	return m, nil
}
