package runner

import (
	"context"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/telemetry"
	"github.com/specloop/specloop/wiring"
	"go.opentelemetry.io/otel/trace"
)

// runTelemetryInfo is the type of job.telemetry.
type runTelemetryInfo = telemetry.RunInfo

// runTelemetry is what the telemetry of a run created by a request knows
// besides its events: the model (provider and name) and the request's
// trace context.
func runTelemetry(ctx context.Context, mc gen.ModelConfig) telemetry.RunInfo {
	info := telemetry.RunInfo{Parent: trace.SpanContextFromContext(ctx)}
	info.Provider, _ = mc.Discriminator()
	v, _ := mc.ValueByDiscriminator()
	switch m := v.(type) {
	case gen.OpenAIModelConfig:
		info.Model = m.Model
	case gen.AnthropicModelConfig:
		info.Model = m.Model
	}
	return info
}

// instrumentRun makes the setup of job j's run observe it.
func (s *Runner) instrumentRun(cfg *wiring.Config, j *job) {
	cfg.Telemetry, cfg.TelemetryRun = s.cfg.Telemetry, j.telemetry
}

// runEnded counts a run that ended without its loop (cancelled while
// queued).
func (s *Runner) runEnded(ev *gen.TraceEvent) {
	if tel := s.cfg.Telemetry; tel != nil && tel.Metrics != nil {
		tel.Metrics.RunEnded(ev)
	}
}
