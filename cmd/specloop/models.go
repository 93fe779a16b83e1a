package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
	"github.com/specloop/specloop/model/anthropic"
	"github.com/specloop/specloop/model/openai"
)

// replayProvider is the --model prefix that replays a recorded trace.
const replayProvider = "replay"

// openModel returns the model the run flags name: --script FILE, or --model
// openai:MODEL, anthropic:MODEL or replay:TRACE_FILE. Provider keys come
// only from the environment; --base-url wins over OPENAI_BASE_URL /
// ANTHROPIC_BASE_URL. A provider is told about specs, the tools the run
// offers. Every error is a usage error.
func openModel(f *runFlags, specs []gen.ToolSpec) (agent.Model, error) {
	if f.script != "" {
		m, err := loadScript(f.script)
		if err != nil {
			return nil, fmt.Errorf("--script: %w", err)
		}
		return m, nil
	}
	provider, name, ok := strings.Cut(f.model, ":")
	if !ok || name == "" {
		return nil, errors.New("--model must be openai:MODEL, anthropic:MODEL or replay:TRACE_FILE")
	}
	switch provider {
	case string(gen.OpenAIModelConfigProviderOpenai):
		m, err := openai.New(openai.Config{Model: name, BaseURL: f.baseURL, Tools: specs}.WithEnv(os.Getenv))
		if err != nil {
			return nil, fmt.Errorf("--model: %w", err)
		}
		return m, nil
	case string(gen.AnthropicModelConfigProviderAnthropic):
		m, err := anthropic.New(anthropic.Config{Model: name, BaseURL: f.baseURL, Tools: specs}.WithEnv(os.Getenv))
		if err != nil {
			return nil, fmt.Errorf("--model: %w", err)
		}
		return m, nil
	case replayProvider:
		if f.baseURL != "" {
			return nil, errors.New("--base-url does not apply to --model replay:TRACE_FILE")
		}
		r, err := model.OpenReplay(name, model.ReplayConfig{})
		if err != nil {
			return nil, fmt.Errorf("--model: %w", err)
		}
		// Left at its default, the step budget is the recorded run's, so
		// the replay ends where the recording did.
		if f.maxSteps == agent.DefaultMaxSteps && r.MaxSteps() > 0 {
			f.maxSteps = r.MaxSteps()
		}
		return r, nil
	}
	return nil, fmt.Errorf("--model: unknown provider %q (want openai, anthropic or replay)", provider)
}
