package runner

import (
	"fmt"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
	"github.com/specloop/specloop/model/anthropic"
	"github.com/specloop/specloop/model/openai"
)

// ModelFactory builds the model of one run from the run's model
// configuration and the tools the run offers. It is called while the run is
// created, so an error rejects the request with a 400 whose detail is the
// error's text: it must not contain secrets. Each call must return a new
// model: a model belongs to one run.
type ModelFactory func(cfg gen.ModelConfig, tools []gen.ToolSpec) (agent.Model, error)

// DefaultModels is the ModelFactory of a server whose Config has none:
// script runs replay their responses; openai and anthropic runs use
// model/openai and model/anthropic with the key and base URL from the
// server's environment (OPENAI_API_KEY and OPENAI_BASE_URL,
// ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL), never from the request. A
// provider whose key is missing is "not available on this server" (400).
func DefaultModels(cfg gen.ModelConfig, tools []gen.ToolSpec) (agent.Model, error) {
	return ModelsWithSystem("")(cfg, tools)
}

// ModelsWithSystem is DefaultModels with system as the system prompt of
// openai and anthropic runs; "" means the adapters' default prompt.
func ModelsWithSystem(system string) ModelFactory {
	return func(cfg gen.ModelConfig, tools []gen.ToolSpec) (agent.Model, error) {
		v, err := cfg.ValueByDiscriminator()
		if err != nil {
			return nil, fmt.Errorf("the model configuration is invalid")
		}
		switch mc := v.(type) {
		case gen.ScriptModelConfig:
			return model.NewScript(mc.Responses...), nil
		case gen.OpenAIModelConfig:
			c := openai.ConfigFromSpec(mc, tools)
			c.System = system
			m, err := openai.NewFromEnv(c)
			if err != nil {
				return nil, &unavailableError{provider: string(mc.Provider), err: err}
			}
			return m, nil
		case gen.AnthropicModelConfig:
			c := anthropic.ConfigFromSpec(mc, tools)
			c.System = system
			m, err := anthropic.NewFromEnv(c)
			if err != nil {
				return nil, &unavailableError{provider: string(mc.Provider), err: err}
			}
			return m, nil
		}
		return nil, fmt.Errorf("the model configuration is invalid")
	}
}

// unavailableError is a provider this server cannot offer.
type unavailableError struct {
	provider string
	err      error
}

func (e *unavailableError) Error() string {
	msg := "provider " + e.provider + " is not available on this server"
	if e.err != nil {
		msg += ": " + e.err.Error()
	}
	return msg
}

func (e *unavailableError) Unwrap() error { return e.err }
