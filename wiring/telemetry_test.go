package wiring_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/specloop/specloop/agent"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/model"
	"github.com/specloop/specloop/telemetry"
	"github.com/specloop/specloop/telemetry/telemetrytest"
	"github.com/specloop/specloop/wiring"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestOpenWithTelemetry: with Telemetry set, the run is observed (its
// check counted, its tool call's span carries the content asked for), and
// the wrapped runtime and check keep their abilities: the run still gets
// its patch and its sandbox, and the trace still gets every event.
func TestOpenWithTelemetry(t *testing.T) {
	m, err := telemetry.NewMetrics()
	if err != nil {
		t.Fatal(err)
	}
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	var traceBuf bytes.Buffer
	s, err := wiring.Open(wiring.Config{
		Dir: t.TempDir(), Sandbox: none, Check: "true", TraceWriter: &traceBuf,
		Telemetry:    &telemetry.Telemetry{Metrics: m, Tracer: tp.Tracer(telemetry.TracerName), Content: true},
		TelemetryRun: telemetry.RunInfo{Provider: "script"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	script := model.NewScript(
		`{"type":"tool_call","tool_name":"write_file","arguments":{"path":"hello.txt","content":"hello\n"}}`,
		`{"type":"finish","answer":"written"}`)
	res, err := agent.Run(context.Background(), gen.Task{Prompt: "Write hello.txt."}, script, s.Options)
	if err != nil || res.ExitReason != gen.ExitReasonFinished {
		t.Fatalf("run: %s %v", res.ExitReason, err)
	}
	if res.Patch == nil || !strings.Contains(*res.Patch, "+hello") {
		t.Errorf("the run lost its patch: %v", res.Patch)
	}
	if res.Sandbox == nil || res.Sandbox.Backend != "none" {
		t.Errorf("the run lost its sandbox info: %+v", res.Sandbox)
	}
	if n := strings.Count(traceBuf.String(), "\n"); n != 5 {
		t.Errorf("the trace has %d events, want 5", n)
	}
	got, err := telemetrytest.Gather(m)
	if err != nil {
		t.Fatal(err)
	}
	if got[`specloop_completion_checks_total{result="passed"}`] != 1 || got[`specloop_tool_calls_total{outcome="ok",tool="write_file"}`] != 1 {
		t.Errorf("metrics: checks %v, write_file %v", got[`specloop_completion_checks_total{result="passed"}`], got[`specloop_tool_calls_total{outcome="ok",tool="write_file"}`])
	}
	var args string
	for _, sp := range exp.GetSpans() {
		for _, a := range sp.Attributes {
			if a.Key == "gen_ai.tool.call.arguments" {
				args = a.Value.AsString()
			}
		}
	}
	if !strings.Contains(args, "hello.txt") {
		t.Errorf("the tool span's arguments are %q", args)
	}
}
