package runner

import (
	"errors"
	"fmt"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
)

// ModelFactory builds the model of one run from the run's model
// configuration (the run's tools come with each request). It is called
// while the run is created, so an error rejects the request with a 400
// whose detail is the error's text: it must not contain secrets. Each call
// must return a new model: a model belongs to one run.
type ModelFactory func(cfg gen.ModelConfig) (agent.Model, error)

// DefaultModels is the ModelFactory of a server whose Config has none:
// model.FromConfig, with the key and base URL from the server's
// environment (OPENAI_API_KEY and OPENAI_BASE_URL, ANTHROPIC_API_KEY and
// ANTHROPIC_BASE_URL), never from the request. A provider whose key is
// missing is "not available on this server" (400).
func DefaultModels(cfg gen.ModelConfig) (agent.Model, error) { return ModelsWithSystem("")(cfg) }

// ModelsWithSystem is DefaultModels with system as the system prompt of
// openai and anthropic runs; "" means the adapters' default prompt.
func ModelsWithSystem(system string) ModelFactory {
	return func(cfg gen.ModelConfig) (agent.Model, error) {
		m, err := model.FromConfig(cfg, model.Options{System: system})
		if err != nil && !errors.Is(err, model.ErrInvalidConfig) {
			provider, _ := cfg.Discriminator()
			return nil, fmt.Errorf("provider %s is not available on this server: %w", provider, err)
		}
		return m, err
	}
}
