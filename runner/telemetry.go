package runner

import (
	"context"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/telemetry"
	"go.opentelemetry.io/otel/trace"
)

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
