package sdk

import (
	"errors"

	"github.com/specloop/specloop/gen"
)

// ErrModelRequired is returned by CreateRun, before anything is sent, for
// a request whose Model was left unset (or names a provider without a model
// name).
var ErrModelRequired = errors.New("the model is required: set Model to sdk.OpenAI(name), sdk.Anthropic(name) or sdk.Script(responses...)")

// OpenAI is the model configuration of a run on an OpenAI (or
// OpenAI-compatible) model, e.g. sdk.OpenAI("gpt-4o-mini"). The server uses
// its own key and base URL (OPENAI_API_KEY, OPENAI_BASE_URL). For a
// temperature or an output limit, build a gen.OpenAIModelConfig and use
// ModelConfig.FromOpenAIModelConfig.
func OpenAI(model string) gen.ModelConfig {
	var mc gen.ModelConfig
	_ = mc.FromOpenAIModelConfig(gen.OpenAIModelConfig{Provider: gen.OpenAIModelConfigProviderOpenai, Model: model})
	return mc
}

// Anthropic is the model configuration of a run on an Anthropic model, e.g.
// sdk.Anthropic("claude-sonnet-4-5"). The server uses its own key
// (ANTHROPIC_API_KEY).
func Anthropic(model string) gen.ModelConfig {
	var mc gen.ModelConfig
	_ = mc.FromAnthropicModelConfig(gen.AnthropicModelConfig{Provider: gen.AnthropicModelConfigProviderAnthropic, Model: model})
	return mc
}

// Script is the model configuration of a scripted run: the server replays
// responses, one per model call, each parsed like a real model's raw text.
func Script(responses ...string) gen.ModelConfig {
	var mc gen.ModelConfig
	_ = mc.FromScriptModelConfig(gen.ScriptModelConfig{Provider: gen.ScriptModelConfigProviderScript, Responses: responses})
	return mc
}

// checkModel catches the model mistakes a person makes in Go before the
// server sees them: a zero gen.ModelConfig (which encodes as null) and a
// provider without a model name.
func checkModel(mc gen.ModelConfig) error {
	v, err := mc.ValueByDiscriminator()
	if err != nil {
		return ErrModelRequired
	}
	switch m := v.(type) {
	case gen.OpenAIModelConfig:
		if m.Model == "" {
			return ErrModelRequired
		}
	case gen.AnthropicModelConfig:
		if m.Model == "" {
			return ErrModelRequired
		}
	}
	return nil
}
