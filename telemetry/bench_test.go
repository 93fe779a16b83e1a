package telemetry_test

import (
	"context"
	"testing"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
	"github.com/specloop/specloop/telemetry"
	"github.com/specloop/specloop/tools"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// BenchmarkRun measures what observing a run costs: the scripted run of
// the tests (5 model calls, 3 tool calls, 2 checks) without telemetry,
// with metrics, and with metrics and spans (recorded in memory).
func BenchmarkRun(b *testing.B) {
	rt, err := tools.New(tools.Config{})
	if err != nil {
		b.Fatal(err)
	}
	m, err := telemetry.NewMetrics()
	if err != nil {
		b.Fatal(err)
	}
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	for _, c := range []struct {
		name string
		tel  *telemetry.Telemetry
	}{
		{"none", nil},
		{"metrics", &telemetry.Telemetry{Metrics: m}},
		{"metrics+spans", &telemetry.Telemetry{Metrics: m, Tracer: tp.Tracer(telemetry.TracerName)}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				opts := agent.Options{MaxSteps: 10, RunID: "run-1", Tools: rt, Check: &checks{}}
				if c.tel != nil {
					obs := c.tel.Observe(telemetry.RunInfo{Provider: "openai", Model: "gpt-test"}, nil)
					opts.Trace, opts.Check = obs, obs.Check(opts.Check)
				}
				res, err := agent.Run(context.Background(), gen.Task{Prompt: "Add 2 and 3."}, usageModel{model.NewScript(scriptedRun...)}, opts)
				if err != nil || res.ExitReason != gen.ExitReasonFinished {
					b.Fatalf("%s: %v", res.ExitReason, err)
				}
				exp.Reset()
			}
		})
	}
}
