package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/cmd/internal/cli"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
	"github.com/specloop/specloop/sdk"
	"github.com/specloop/specloop/trace"
	"github.com/specloop/specloop/transcript"
)

// The --model prefixes that run a recorded run again: replay answers
// from a transcript (nothing is executed), verify re-executes the tools of
// a trace recorded with --record-raw and compares their results.
const (
	replayProvider = "replay"
	verifyProvider = "verify"
)

// modelUsage says what --model takes.
const modelUsage = "--model must be openai:MODEL, anthropic:MODEL, replay:RUN_ID|FILE or verify:TRACE_FILE"

// openModel returns the model the run flags name: --script FILE, or --model
// openai:MODEL, anthropic:MODEL, replay:RUN_ID|FILE or verify:TRACE_FILE.
// Provider keys come only from the environment; --base-url wins over
// OPENAI_BASE_URL / ANTHROPIC_BASE_URL. Every error is a usage error.
func openModel(f *runFlags) (agent.Model, error) {
	if provider, name, _ := strings.Cut(f.model, ":"); name != "" && f.script == "" {
		switch provider {
		case replayProvider:
			return openTranscriptReplay(f, name)
		case verifyProvider:
			return openVerify(f, name)
		}
	}
	if f.script != "" {
		// The lines themselves: the spec's ModelConfig (what --remote
		// sends) would carry them through JSON, an encoding, a merge and a
		// decoding of the whole script, only to give them back.
		lines, err := readScriptLines(f.script)
		if err != nil {
			return nil, fmt.Errorf("--script: %w", err)
		}
		return model.NewScript(lines...), nil
	}
	mc, err := modelConfig(f)
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

// modelConfig returns the spec's model configuration the run flags name:
// --script FILE's responses, or the provider model of --model and
// --context-window. It is what --remote sends (a server offers a provider
// with its own keys) and what a local run builds a provider's model from.
func modelConfig(f *runFlags) (gen.ModelConfig, error) {
	var mc gen.ModelConfig
	if f.script != "" {
		lines, err := readScriptLines(f.script)
		if err != nil {
			return mc, fmt.Errorf("--script: %w", err)
		}
		return sdk.Script(lines...), nil
	}
	provider, name, ok := strings.Cut(f.model, ":")
	switch {
	case !ok || name == "":
		return mc, errors.New(modelUsage)
	case provider == replayProvider || provider == verifyProvider:
		return mc, fmt.Errorf("--model: provider %q is not available with --remote", provider)
	}
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
		return mc, fmt.Errorf("--model: unknown provider %q (want openai, anthropic, replay or verify)", provider)
	}
	if err != nil {
		return mc, fmt.Errorf("--model: %w", err)
	}
	return mc, nil
}

// given is a flag and whether the command line set it.
type given struct {
	flag string
	set  bool
}

// refuse returns the error of the first of flags that was set, which does
// not apply to what: a replay has no provider to configure, a remote run's
// server decides.
func refuse(what string, flags ...given) error {
	for _, g := range flags {
		if g.set {
			return fmt.Errorf("%s %s", g.flag, what)
		}
	}
	return nil
}

// replayFlags refuses the flags that configure a provider, which a
// replay has none of.
func replayFlags(f *runFlags, spelling string) error {
	return refuse("does not apply to --model "+spelling, given{"--base-url", f.baseURL != ""}, given{"--context-window", f.contextWindow != 0}, given{"--system-file", f.systemFile != ""})
}

// openVerify returns the model of --model verify:TRACE_FILE: the recorded
// responses of a trace, the tools executed again and their results
// compared with the recorded ones.
func openVerify(f *runFlags, name string) (agent.Model, error) {
	if err := replayFlags(f, "verify:TRACE_FILE"); err != nil {
		return nil, err
	}
	r, err := model.OpenReplay(name, model.ReplayConfig{})
	if err != nil {
		return nil, fmt.Errorf("--model: %w", err)
	}
	// Left at its default, the step budget is the recorded run's, so the
	// replay ends where the recording did.
	if f.maxSteps == 0 && r.MaxSteps() > 0 {
		f.maxSteps = r.MaxSteps()
	}
	return r, nil
}

// transcriptReplay is the model of --model replay:RUN_ID|FILE: the
// recorded run's turns, with its observations, checks and approvals in
// place of the run's tools, check and approver (see wire).
type transcriptReplay struct {
	agent.Model
	r *transcript.Replay
}

// openTranscriptReplay returns the model of --model replay:RUN_ID|FILE:
// RUN_ID a run of specloop run (its transcript in the state directory,
// as specloop show finds it), FILE a transcript. A trace is refused with
// the spelling that replays one.
func openTranscriptReplay(f *runFlags, name string) (agent.Model, error) {
	if err := replayFlags(f, "replay:RUN_ID|FILE"); err != nil {
		return nil, err
	}
	path, err := transcriptOf(name)
	if err != nil {
		return nil, fmt.Errorf("--model: replay: %w", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--model: replay: %w", err)
	}
	log, err := transcript.Read(bytes.NewReader(data))
	if err != nil {
		if tl, terr := trace.Read(bytes.NewReader(data)); terr == nil && len(tl.Events) > 0 {
			return nil, fmt.Errorf("--model: replay: %s is a trace, not a transcript; --model verify:%s runs a trace recorded with --record-raw again, executing its tools", path, path)
		}
		return nil, fmt.Errorf("--model: replay: %s: %w", path, err)
	}
	r, err := transcript.NewReplay(log)
	if err != nil {
		return nil, fmt.Errorf("--model: replay: %s: %w", path, err)
	}
	// Left at its default, the step budget is the recorded run's: the
	// replay ends where the recording did (for a run that was killed,
	// after its last complete step).
	if f.maxSteps == 0 {
		if res := r.Result(); res != nil {
			f.maxSteps = max(res.StepsUsed, 1)
		} else {
			f.maxSteps = max(r.CompleteSteps(), 1)
		}
	}
	return transcriptReplay{r.Model(), r}, nil
}

// wire makes opts, a run's options, the replay's (Replay.Wire).
func (tr transcriptReplay) wire(opts *agent.Options) { tr.r.Wire(opts) }
