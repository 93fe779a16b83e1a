package main

import (
	"context"
	"strings"
	"time"

	"github.com/specloop/specloop/cmd/internal/cli"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/telemetry"
)

// flushTimeout bounds the flush of a local run's last spans.
const flushTimeout = 10 * time.Second

// closeAfterRun flushes a local run's spans, within flushTimeout even when
// the run was cancelled; a failure is reported, and the run's exit status
// stays.
func closeAfterRun(ctx context.Context, env *cli.Env, tr *cli.Telemetry) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
	defer cancel()
	if err := tr.Close(ctx); err != nil {
		env.Errorf("run: --otel: %v", err)
	}
}

// runInfo names a local run's model for its telemetry: the provider of
// --model PROVIDER:NAME (script for --script).
func runInfo(f *runFlags) telemetry.RunInfo {
	if f.script != "" {
		return telemetry.RunInfo{Provider: string(gen.ScriptModelConfigProviderScript)}
	}
	provider, name, _ := strings.Cut(f.model, ":")
	if provider == replayProvider || provider == verifyProvider {
		return telemetry.RunInfo{Provider: provider}
	}
	return telemetry.RunInfo{Provider: provider, Model: name}
}
