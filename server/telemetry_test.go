package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/internal/contract"
	"github.com/specloop/specloop/runner"
	"github.com/specloop/specloop/sdk"
	"github.com/specloop/specloop/server"
	"github.com/specloop/specloop/telemetry"
	"github.com/specloop/specloop/telemetry/telemetrytest"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// scrapeMetrics gets GET /metrics with the token and parses it.
func (ts *testServer) scrapeMetrics() telemetrytest.Samples {
	ts.t.Helper()
	status, h, body := ts.do(http.MethodGet, "/metrics", "", nil)
	if status != http.StatusOK {
		ts.t.Fatalf("GET /metrics: %d %s", status, body)
	}
	if ct := h.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		ts.t.Errorf("GET /metrics: Content-Type %q, want the text format", ct)
	}
	s, err := telemetrytest.Parse(bytes.NewReader(body))
	if err != nil {
		ts.t.Fatal(err)
	}
	return s
}

// TestMetricsEndpoint: after a scripted run (with a call to a tool that
// does not exist) and a run whose model fails, GET /metrics has their
// counters; a running run and an open event stream show in the gauges; the
// label values are the spec's operationIds and enums and the tools runs
// offer, never a path, a run id or a name the model made up.
func TestMetricsEndpoint(t *testing.T) {
	t.Parallel()
	m, err := telemetry.NewMetrics()
	if err != nil {
		t.Fatal(err)
	}
	g := newGate()
	ts := newTestServer(t, server.Config{Config: runner.Config{Telemetry: &telemetry.Telemetry{Metrics: m}, Models: g.models}})
	defer ts.close()

	hallucinated := gen.CreateRunRequest{Task: gen.Task{Prompt: "Compute."}, Model: sdk.Script(
		`{"type":"tool_call","tool_name":"rm_rf_everything_9f8e7d","arguments":{}}`,
		calcResponses[0], calcResponses[1])}
	if run := ts.wait(ts.create(hallucinated).Id); run.Result.ExitReason != gen.ExitReasonFinished {
		t.Fatalf("the scripted run ended %s", run.Result.ExitReason)
	}
	// The script runs out after one response: the model fails.
	failing := gen.CreateRunRequest{Task: gen.Task{Prompt: "Fail."}, Model: sdk.Script(calcResponses[0])}
	if run := ts.wait(ts.create(failing).Id); run.Result.ExitReason != gen.ExitReasonModelError {
		t.Fatalf("the failing run ended %s", run.Result.ExitReason)
	}
	blocked := ts.create(blockRequest("BLOCK metrics"))
	g.waitEntered(t, "BLOCK metrics")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.http.URL+"/v1/runs/"+blocked.Id+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	stream, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()

	got := ts.scrapeMetrics()
	for k, v := range map[string]float64{
		`specloop_runs_total{exit_reason="finished"}`:                         1,
		`specloop_runs_total{exit_reason="model_error"}`:                      1,
		`specloop_runs{status="running"}`:                                     1,
		`specloop_runs{status="queued"}`:                                      0,
		`specloop_sse_streams_open`:                                           1,
		`specloop_run_steps_count`:                                            2,
		`specloop_tool_calls_total{outcome="ok",tool="calculator"}`:           2,
		`specloop_tool_calls_total{outcome="unknown_tool",tool="other"}`:      1,
		`specloop_model_calls_total{outcome="ok",provider="script"}`:          4,
		`specloop_model_calls_total{outcome="model_error",provider="script"}`: 1,
		`specloop_http_requests_total{operation="createRun",status="202"}`:    3,
		`specloop_http_request_duration_seconds_count{operation="createRun"}`: 3,
	} {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	ops := []string{"other"}
	for _, item := range contract.MustSpec().Paths.Map() {
		for _, op := range item.Operations() {
			ops = append(ops, op.OperationID)
		}
	}
	for _, op := range got.LabelValues("specloop_http_requests_total", "operation") {
		if !slices.Contains(ops, op) {
			t.Errorf("operation label %q is not an operationId of the spec", op)
		}
	}
	for key := range got {
		if strings.Contains(key, "rm_rf") || strings.Contains(key, blocked.Id) || strings.Contains(key, "/v1/") {
			t.Errorf("an unbounded label value: %s", key)
		}
	}
	cancel()
	g.release()
	ts.wait(blocked.Id)
}

// TestMetricsNeedToken: GET /metrics is behind the token, and answers 404
// on a server that keeps no metrics.
func TestMetricsNeedToken(t *testing.T) {
	t.Parallel()
	m, err := telemetry.NewMetrics()
	if err != nil {
		t.Fatal(err)
	}
	ts := newTestServer(t, server.Config{Config: runner.Config{Telemetry: &telemetry.Telemetry{Metrics: m}}})
	defer ts.close()
	if status, _, body := ts.do(http.MethodGet, "/metrics", "", nil, "Authorization", ""); status != http.StatusUnauthorized || bytes.Contains(body, []byte("specloop_")) {
		t.Errorf("GET /metrics without the token: %d %s", status, body)
	}
	none := newTestServer(t, server.Config{})
	defer none.close()
	if status, _, body := none.do(http.MethodGet, "/metrics", "", nil); status != http.StatusNotFound {
		t.Errorf("GET /metrics without metrics: %d %s", status, body)
	}
}

// TestRunSpanParent: the traceparent of the request that creates a run
// becomes the parent of the run's invoke_agent span.
func TestRunSpanParent(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	ts := newTestServer(t, server.Config{Config: runner.Config{Telemetry: &telemetry.Telemetry{Tracer: tp.Tracer(telemetry.TracerName)}}})
	defer ts.close()
	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	body := bytes.NewReader(ctJSON(calcRequest()))
	status, _, data := ts.do(http.MethodPost, "/v1/runs", "application/json", body, "traceparent", "00-"+traceID+"-"+parentID+"-01")
	if status != http.StatusAccepted {
		t.Fatalf("create: %d %s", status, data)
	}
	var run gen.Run
	if err := json.Unmarshal(data, &run); err != nil {
		t.Fatal(err)
	}
	ts.wait(run.Id)
	var names []string
	for _, s := range exp.GetSpans() {
		names = append(names, s.Name)
		if s.SpanContext.TraceID().String() != traceID {
			t.Errorf("%s is in trace %s, want %s", s.Name, s.SpanContext.TraceID(), traceID)
		}
		if s.Name == "invoke_agent" && s.Parent.SpanID().String() != parentID {
			t.Errorf("invoke_agent's parent is %s, want %s", s.Parent.SpanID(), parentID)
		}
	}
	want := []string{"chat", "execute_tool calculator", "chat", "invoke_agent"}
	if !slices.Equal(names, want) {
		t.Errorf("spans %v, want %v", names, want)
	}
}

// TestMetricsWaitingRuns: a run whose tool call waits for an approval is
// counted in specloop_runs under the spec's waiting status, not as running.
func TestMetricsWaitingRuns(t *testing.T) {
	t.Parallel()
	m, err := telemetry.NewMetrics()
	if err != nil {
		t.Fatal(err)
	}
	ts := newTestServer(t, server.Config{Config: runner.Config{Telemetry: &telemetry.Telemetry{Metrics: m}}})
	defer ts.close()
	run := ts.create(approvalRequest(writeCall("w1", "a.txt", "a"), doneAnswer))
	ts.pending(run.Id)
	got := ts.scrapeMetrics()
	for k, v := range map[string]float64{
		`specloop_runs{status="waiting_for_approval"}`: 1,
		`specloop_runs{status="running"}`:              0,
	} {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	if status, body := ts.decide(run.Id, "w1", "approve", ""); status != http.StatusOK {
		t.Fatalf("approve: %d %s", status, body)
	}
	if r := ts.wait(run.Id); r.Result.ExitReason != gen.ExitReasonFinished {
		t.Errorf("the approved run ended %s", r.Result.ExitReason)
	}
}
