package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/cmd/internal/cli"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
)

// replayProvider is the --model prefix that replays a recorded trace.
const replayProvider = "replay"

// openModel returns the model the run flags name: --script FILE, or --model
// openai:MODEL, anthropic:MODEL or replay:TRACE_FILE. Provider keys come
// only from the environment; --base-url wins over OPENAI_BASE_URL /
// ANTHROPIC_BASE_URL. Every error is a usage error.
func openModel(f *runFlags) (agent.Model, error) {
	if f.script != "" {
		lines, err := readScriptLines(f.script)
		if err != nil {
			return nil, fmt.Errorf("--script: %w", err)
		}
		return model.NewScript(lines...), nil
	}
	provider, name, ok := strings.Cut(f.model, ":")
	if !ok || name == "" {
		return nil, errors.New("--model must be openai:MODEL, anthropic:MODEL or replay:TRACE_FILE")
	}
	if provider == replayProvider {
		return openReplay(f, name)
	}
	mc, err := providerConfig(f)
	if err != nil {
		return nil, err
	}
	system, err := cli.ReadSystemFile(f.systemFile)
	if err != nil {
		return nil, fmt.Errorf("--system-file: %w", err)
	}
	m, err := model.FromConfig(mc, model.Options{System: system, BaseURL: f.baseURL})
	if err != nil {
		return nil, fmt.Errorf("--model: %w", err)
	}
	return m, nil
}

// providerConfig returns the spec's model configuration of a provider
// model that --model and --context-window name: what a local run builds
// its adapter from and what --remote sends.
func providerConfig(f *runFlags) (gen.ModelConfig, error) {
	var mc gen.ModelConfig
	provider, name, _ := strings.Cut(f.model, ":")
	var window *int
	if f.contextWindow > 0 {
		window = &f.contextWindow
	}
	var err error
	switch provider {
	case string(gen.OpenAIModelConfigProviderOpenai):
		err = mc.FromOpenAIModelConfig(gen.OpenAIModelConfig{Provider: gen.OpenAIModelConfigProviderOpenai, Model: name, ContextWindow: window})
	case string(gen.AnthropicModelConfigProviderAnthropic):
		err = mc.FromAnthropicModelConfig(gen.AnthropicModelConfig{Provider: gen.AnthropicModelConfigProviderAnthropic, Model: name, ContextWindow: window})
	default:
		return mc, fmt.Errorf("--model: unknown provider %q (want openai, anthropic or replay)", provider)
	}
	if err != nil {
		return mc, fmt.Errorf("--model: %w", err)
	}
	return mc, nil
}

// openReplay returns the replay model of --model replay:TRACE_FILE.
func openReplay(f *runFlags, name string) (agent.Model, error) {
	for _, bad := range []struct {
		set  bool
		flag string
	}{{f.baseURL != "", "--base-url"}, {f.contextWindow != 0, "--context-window"}, {f.systemFile != "", "--system-file"}} {
		if bad.set {
			return nil, fmt.Errorf("%s does not apply to --model replay:TRACE_FILE", bad.flag)
		}
	}
	r, err := model.OpenReplay(name, model.ReplayConfig{})
	if err != nil {
		return nil, fmt.Errorf("--model: %w", err)
	}
	// Left at its default, the step budget is the recorded run's, so the
	// replay ends where the recording did.
	if f.maxSteps == agent.DefaultMaxSteps && r.MaxSteps() > 0 {
		f.maxSteps = r.MaxSteps()
	}
	return r, nil
}
