package telemetry_test

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/telemetry"
	"github.com/specloop/specloop/telemetry/telemetrytest"
)

func scrape(t *testing.T, m *telemetry.Metrics) telemetrytest.Samples {
	t.Helper()
	s, err := telemetrytest.Gather(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestMetricsOfRuns: the counters after the scripted run and a run whose
// model fails, read back from the text exposition.
func TestMetricsOfRuns(t *testing.T) {
	m, err := telemetry.NewMetrics()
	if err != nil {
		t.Fatal(err)
	}
	tel := &telemetry.Telemetry{Metrics: m}
	runScripted(t, tel, telemetry.RunInfo{Provider: "openai", Model: "gpt-test"})
	runFailing(t, tel, telemetry.RunInfo{Provider: "made-up-provider"})
	got := scrape(t, m)
	want := map[string]float64{
		`specloop_runs_total{exit_reason="finished"}`:                                  1,
		`specloop_runs_total{exit_reason="model_error"}`:                               1,
		`specloop_runs_total{exit_reason="cancelled"}`:                                 0,
		`specloop_run_steps_count`:                                                     2,
		`specloop_run_steps_sum`:                                                       7,
		`specloop_run_duration_seconds_count`:                                          2,
		`specloop_tool_calls_total{outcome="ok",tool="calculator"}`:                    2,
		`specloop_tool_calls_total{outcome="division_by_zero",tool="calculator"}`:      1,
		`specloop_tool_calls_total{outcome="unknown_tool",tool="other"}`:               1,
		`specloop_completion_checks_total{result="failed"}`:                            1,
		`specloop_completion_checks_total{result="passed"}`:                            1,
		`specloop_completion_checks_total{result="error"}`:                             0,
		`specloop_model_calls_total{outcome="ok",provider="openai"}`:                   4,
		`specloop_model_calls_total{outcome="invalid_model_output",provider="openai"}`: 1,
		`specloop_model_calls_total{outcome="ok",provider="other"}`:                    1,
		`specloop_model_calls_total{outcome="model_error",provider="other"}`:           1,
		`specloop_model_tokens_total{kind="input",provider="openai"}`:                  50,
		`specloop_model_tokens_total{kind="output",provider="openai"}`:                 25,
		`specloop_sandbox_denials_total{code="outside_workspace"}`:                     0,
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	// Nothing the model wrote became a label value.
	if tools := got.LabelValues("specloop_tool_calls_total", "tool"); !slices.Equal(tools, []string{"calculator", "other"}) {
		t.Errorf("tool labels %v, want [calculator other]", tools)
	}
	for _, p := range got.LabelValues("specloop_model_calls_total", "provider") {
		if p == "made-up-provider" {
			t.Error("an unknown provider name became a label value")
		}
	}
}

// TestMetricsSandboxDenials: a tool call the confinement refuses counts as
// a sandbox denial by its code; other failures do not.
func TestMetricsSandboxDenials(t *testing.T) {
	m, err := telemetry.NewMetrics()
	if err != nil {
		t.Fatal(err)
	}
	run := (&telemetry.Telemetry{Metrics: m}).Observe(telemetry.RunInfo{Provider: "script"}, nil)
	emit := func(ev gen.TraceEvent) {
		ev.RunId = "r"
		if err := run.Emit(&ev); err != nil {
			t.Fatal(err)
		}
	}
	tool, yes := "read_file", true
	emit(gen.TraceEvent{EventType: gen.TraceEventTypeRunStarted, ToolNames: &[]string{tool}})
	for _, code := range []gen.ErrorCode{gen.ErrorCodeOutsideWorkspace, gen.ErrorCodeProtectedPath, gen.ErrorCodeNotFound} {
		emit(gen.TraceEvent{EventType: gen.TraceEventTypeObservation, ToolName: &tool, IsError: &yes, ErrorCode: &code})
	}
	got := scrape(t, m)
	for k, v := range map[string]float64{
		`specloop_sandbox_denials_total{code="outside_workspace"}`:        1,
		`specloop_sandbox_denials_total{code="protected_path"}`:           1,
		`specloop_tool_calls_total{outcome="not_found",tool="read_file"}`: 1,
	} {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if codes := got.LabelValues("specloop_sandbox_denials_total", "code"); slices.Contains(codes, "not_found") {
		t.Errorf("not_found counted as a sandbox denial: %v", codes)
	}
}

// runOffering observes a run that offers tools (the built-in calculator
// first) and calls each once, as a run of a hostile MCP server's tools
// would.
func runOffering(t *testing.T, tel *telemetry.Telemetry, runID string, tools []string) {
	t.Helper()
	run := tel.Observe(telemetry.RunInfo{Provider: "script"}, nil)
	emit := func(ev gen.TraceEvent) {
		ev.RunId = runID
		if err := run.Emit(&ev); err != nil {
			t.Fatal(err)
		}
	}
	offered := append([]string{"calculator"}, tools...)
	emit(gen.TraceEvent{EventType: gen.TraceEventTypeRunStarted, ToolNames: &offered})
	for _, name := range offered {
		emit(gen.TraceEvent{EventType: gen.TraceEventTypeObservation, ToolName: &name})
	}
	reason := gen.ExitReasonFinished
	emit(gen.TraceEvent{EventType: gen.TraceEventTypeRunFinished, ExitReason: &reason})
}

// mcpTools are n tool names of the MCP server srv: srv__tool0, ...
func mcpTools(srv string, n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s__tool%d", srv, i)
	}
	return names
}

// A hostile MCP server's tool names cannot add series without bound: 20
// runs offered 50 distinct names each (1,000 in all) add at most
// MaxToolLabels tool label values to the process, and a run gives its own
// label to at most MaxRunToolLabels of them; the rest count as other, and
// every call is still counted.
func TestToolLabelsBounded(t *testing.T) {
	m, err := telemetry.NewMetrics()
	if err != nil {
		t.Fatal(err)
	}
	tel := &telemetry.Telemetry{Metrics: m}
	const runs, perRun = 20, 50
	for r := range runs {
		runOffering(t, tel, fmt.Sprintf("run-%d", r), mcpTools(fmt.Sprintf("evil%d", r), perRun))
	}
	got := scrape(t, m)
	labels := got.LabelValues("specloop_tool_calls_total", "tool")
	if len(labels) > telemetry.MaxToolLabels+2 { // + calculator and other
		t.Fatalf("%d runs of %d MCP tools made %d tool label values, want at most %d", runs, perRun, len(labels), telemetry.MaxToolLabels+2)
	}
	if !slices.Contains(labels, "calculator") || !slices.Contains(labels, "other") || !slices.Contains(labels, "evil0__tool0") {
		t.Fatalf("tool labels %v: the built-in tool, other, or the first MCP tool is missing", labels)
	}
	total := 0.0
	for k, v := range got {
		if strings.HasPrefix(k, "specloop_tool_calls_total{") {
			total += v
		}
	}
	if want := float64(runs * (perRun + 1)); total != want {
		t.Fatalf("%v tool calls counted, want %v", total, want)
	}

	// One run of many tools: at most MaxRunToolLabels get their own
	// label, the built-in ones besides.
	m, _ = telemetry.NewMetrics()
	runOffering(t, &telemetry.Telemetry{Metrics: m}, "run-big", mcpTools("big", telemetry.MaxRunToolLabels+10))
	labels = scrape(t, m).LabelValues("specloop_tool_calls_total", "tool")
	if len(labels) != telemetry.MaxRunToolLabels+2 || !slices.Contains(labels, "calculator") {
		t.Fatalf("a run of %d MCP tools made the tool labels %v, want %d of them, calculator and other", telemetry.MaxRunToolLabels+10, labels, telemetry.MaxRunToolLabels)
	}
}

// TestMetricFamilies: the scrape is served as Prometheus text and expfmt
// parses it, with every family docs/observability.md lists under its type
// and help text, the histograms with their buckets, and the Go runtime's
// and the process's metrics beside them. Dashboards rely on all of it.
func TestMetricFamilies(t *testing.T) {
	m, err := telemetry.NewMetrics()
	if err != nil {
		t.Fatal(err)
	}
	runScripted(t, &telemetry.Telemetry{Metrics: m}, telemetry.RunInfo{Provider: "openai", Model: "gpt-test"})
	m.HTTPRequest("getMetrics", 200, time.Millisecond)
	if err := m.RunStatuses(func() map[gen.RunStatus]int { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := m.OpenStreams(func() int { return 0 }); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if ct, want := rec.Header().Get("Content-Type"), string(expfmt.NewFormat(expfmt.TypeTextPlain)); ct != want || telemetry.TextContentType != want {
		t.Errorf("the metrics are served as %q (TextContentType %q), want the text format's %q", ct, telemetry.TextContentType, want)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("the scrape is not Prometheus text: %v", err)
	}
	counter, gauge, histogram := dto.MetricType_COUNTER, dto.MetricType_GAUGE, dto.MetricType_HISTOGRAM
	for name, typ := range map[string]dto.MetricType{
		"specloop_runs_total": counter, "specloop_runs": gauge, "specloop_run_duration_seconds": histogram,
		"specloop_run_steps": histogram, "specloop_tool_calls_total": counter, "specloop_completion_checks_total": counter,
		"specloop_model_calls_total": counter, "specloop_model_tokens_total": counter, "specloop_sandbox_denials_total": counter,
		"specloop_sse_streams_open": gauge, "specloop_http_requests_total": counter, "specloop_http_request_duration_seconds": histogram,
		"go_goroutines": gauge, "go_memstats_alloc_bytes": gauge, "go_gc_duration_seconds": dto.MetricType_SUMMARY,
	} {
		f, ok := fams[name]
		if !ok {
			t.Errorf("the scrape has no %s", name)
			continue
		}
		if f.GetType() != typ {
			t.Errorf("%s is a %s, want a %s", name, f.GetType(), typ)
		}
		if strings.HasPrefix(name, "specloop_") && f.GetHelp() == "" {
			t.Errorf("%s has no help text", name)
		}
	}
	for name, want := range map[string][]float64{
		"specloop_run_duration_seconds":          {0.1, 0.5, 1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600},
		"specloop_run_steps":                     {1, 2, 3, 5, 10, 20, 50, 100, 200, 500, 1000},
		"specloop_http_request_duration_seconds": {.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	} {
		var got []float64
		for _, b := range fams[name].GetMetric()[0].GetHistogram().GetBucket() {
			got = append(got, b.GetUpperBound())
		}
		if !slices.Equal(got, append(want, math.Inf(1))) {
			t.Errorf("%s has the buckets %v, want %v and +Inf", name, got, want)
		}
	}
	if _, ok := fams["process_resident_memory_bytes"]; !ok && runtime.GOOS == "linux" {
		t.Error("the scrape has no process metrics")
	}
}

// TestMetricsApart: two Metrics in one process (two servers, tests) count
// apart, and a second server on the same Metrics gets an error for its
// gauges, not a panic.
func TestMetricsApart(t *testing.T) {
	a, err := telemetry.NewMetrics()
	if err != nil {
		t.Fatal(err)
	}
	b, err := telemetry.NewMetrics()
	if err != nil {
		t.Fatal(err)
	}
	a.HTTPRequest("getMetrics", 200, time.Millisecond)
	const key = `specloop_http_requests_total{operation="getMetrics",status="200"}`
	if got := scrape(t, a)[key]; got != 1 {
		t.Errorf("%s = %v in the Metrics that counted it, want 1", key, got)
	}
	if got, ok := scrape(t, b)[key]; ok {
		t.Errorf("%s = %v in the other Metrics, want no series", key, got)
	}
	for _, m := range []*telemetry.Metrics{a, b} {
		if err := m.RunStatuses(func() map[gen.RunStatus]int { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.RunStatuses(func() map[gen.RunStatus]int { return nil }); err == nil {
		t.Error("specloop_runs registered twice on one Metrics")
	}
	if err := a.OpenStreams(func() int { return 0 }); err != nil {
		t.Fatal(err)
	}
	if err := a.OpenStreams(func() int { return 0 }); err == nil {
		t.Error("specloop_sse_streams_open registered twice on one Metrics")
	}
}
