package telemetry

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"github.com/specloop/specloop/gen"
)

// Metrics are a process's Prometheus metrics, in a metrics.Set of their
// own (never the library's default one, so two servers in a process keep
// theirs apart). Create them with NewMetrics; the zero value is not
// usable. Every method is safe for concurrent use.
//
// They are github.com/VictoriaMetrics/metrics, not client_golang: its
// package init and procfs' cost some 1,500 allocations in every specloop
// command, this library's about 160.
type Metrics struct {
	set         *metrics.Set
	help        *strings.Replacer // adds the help texts to the library's "# HELP name" lines
	runDuration *metrics.PrometheusHistogram
	runSteps    *metrics.PrometheusHistogram

	mu         sync.Mutex
	toolLabels map[string]bool // the tools not built in that have a label of their own
}

// The metric families.
const (
	famRuns           = "specloop_runs_total"
	famRunStatuses    = "specloop_runs"
	famRunDuration    = "specloop_run_duration_seconds"
	famRunSteps       = "specloop_run_steps"
	famToolCalls      = "specloop_tool_calls_total"
	famChecks         = "specloop_completion_checks_total"
	famModelCalls     = "specloop_model_calls_total"
	famTokens         = "specloop_model_tokens_total"
	famSandboxDenials = "specloop_sandbox_denials_total"
	famStreams        = "specloop_sse_streams_open"
	famHTTPRequests   = "specloop_http_requests_total"
	famHTTPDuration   = "specloop_http_request_duration_seconds"
)

// families are the help texts of the metric families. The library writes
// "# HELP name" with no text; WriteText puts these in.
var families = [...]struct{ name, help string }{
	{famRuns, "Runs that ended, by exit reason (the spec's ExitReason)."},
	{famRunStatuses, "Runs not finished yet, by status (the spec's RunStatus)."},
	{famRunDuration, "How long runs took, from run_started to run_finished."},
	{famRunSteps, "Steps (model calls) runs used."},
	{famToolCalls, "Tool calls, by tool (other for a name the run does not offer, and for tools beyond the caps on label values) and outcome (ok, the spec's ErrorCode, or error)."},
	{famChecks, "Completion checks, by result (passed, failed, or error when the check could not run)."},
	{famModelCalls, "Model calls, by provider (the spec's ModelConfig provider) and outcome (ok, invalid_model_output, model_error)."},
	{famTokens, "Tokens the model providers reported, by provider and kind (input, output)."},
	{famSandboxDenials, "Tool calls the workspace's confinement refused, by error code (the spec's x-sandbox-denials)."},
	{famStreams, "Event streams (GET /v1/runs/{run_id}/events) open."},
	{famHTTPRequests, "HTTP requests, by operation (the spec's operationId, other for anything else) and status code."},
	{famHTTPDuration, "How long HTTP requests took to answer, by operation (an event stream lasts as long as it is open)."},
}

// The values of the result label of specloop_completion_checks_total.
const (
	checkPassed = "passed"
	checkFailed = "failed"
	// checkError is a check that could not be run at all.
	checkError = "error"
)

// NewMetrics creates the metrics, with the Go runtime and process metrics,
// in a new set. The label values it accepts come from the embedded spec.
func NewMetrics() (*Metrics, error) {
	// The library writes # TYPE and # HELP lines only when told to, for
	// the whole process.
	metrics.ExposeMetadata(true)
	set := metrics.NewSet()
	var help []string
	for _, f := range families {
		help = append(help, "# HELP "+f.name+"\n", "# HELP "+f.name+" "+f.help+"\n")
	}
	m := &Metrics{set: set, help: strings.NewReplacer(help...), toolLabels: map[string]bool{},
		runDuration: set.NewPrometheusHistogramExt(famRunDuration, []float64{0.1, 0.5, 1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600}),
		runSteps:    set.NewPrometheusHistogramExt(famRunSteps, []float64{1, 2, 3, 5, 10, 20, 50, 100, 200, 500, 1000})}
	// The series of the spec's enums exist from the start, at zero.
	for _, r := range gen.ExitReasonValues() {
		m.counter(famRuns, "exit_reason", string(r))
	}
	for _, c := range gen.SandboxDenials() {
		m.counter(famSandboxDenials, "code", string(c))
	}
	for _, r := range []string{checkPassed, checkFailed, checkError} {
		m.counter(famChecks, "result", r)
	}
	return m, nil
}

// labelEscaper escapes a label value for the text format.
var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// series is the name of family's series with labels, given as name,
// value pairs: family{name="value",...}.
func series(family string, labels ...string) string {
	pairs := make([]string, 0, len(labels)/2)
	for i := 0; i+1 < len(labels); i += 2 {
		pairs = append(pairs, labels[i]+`="`+labelEscaper.Replace(labels[i+1])+`"`)
	}
	return family + "{" + strings.Join(pairs, ",") + "}"
}

// counter is the counter of family's series with labels (name, value
// pairs), created at zero the first time.
func (m *Metrics) counter(family string, labels ...string) *metrics.Counter {
	return m.set.GetOrCreateCounter(series(family, labels...))
}

// gauge registers the gauge series name, computed by f when scraped; a
// series registered already (a second server on the same Metrics) is an
// error.
func (m *Metrics) gauge(name string, f func() float64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if slices.Contains(m.set.ListMetricNames(), name) {
		return fmt.Errorf("telemetry: the gauge %s is registered already", name)
	}
	m.set.NewGauge(name, f)
	return nil
}

// Handler serves the metrics in the Prometheus text format
// (TextContentType).
func (m *Metrics) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", TextContentType)
		_ = m.WriteText(w) // it fails only when the scraper's connection does: nobody to tell
	})
}

// TextContentType is the media type WriteText writes: the Prometheus text
// format, version 0.0.4.
const TextContentType = "text/plain; version=0.0.4; charset=utf-8"

// WriteText writes the metrics, the Go runtime's (go_*) and the process's
// (process_*) in the Prometheus text format (TextContentType).
func (m *Metrics) WriteText(w io.Writer) error {
	var buf bytes.Buffer
	m.set.WritePrometheus(&buf)
	metrics.WriteGoMetrics(&buf)
	metrics.WriteProcMetrics(&buf)
	metrics.WriteFDMetrics(&buf)
	if _, err := m.help.WriteString(w, buf.String()); err != nil {
		return fmt.Errorf("telemetry: write the metrics: %w", err)
	}
	return nil
}

// HTTPRequest counts a request for the operation (an operationId of the
// spec; anything else, such as "" for a path the spec does not have, is
// counted as other) answered with status after d.
func (m *Metrics) HTTPRequest(operation string, status int, d time.Duration) {
	op := label(specNames().operations, operation)
	m.counter(famHTTPRequests, "operation", op, "status", strconv.Itoa(status)).Inc()
	m.set.GetOrCreatePrometheusHistogram(series(famHTTPDuration, "operation", op)).Update(d.Seconds())
}

// RunStatuses registers specloop_runs{status}: the runs in each status of
// the spec's RunStatus enum but finished (queued, running, and any status
// the spec adds, such as one for runs waiting for an approval), counted by
// count when scraped (once for each status). count returns the number of
// runs in each status; it must be safe to call from any goroutine.
func (m *Metrics) RunStatuses(count func() map[gen.RunStatus]int) error {
	for _, s := range gen.RunStatusValues() {
		if s == gen.RunStatusFinished {
			continue
		}
		if err := m.gauge(series(famRunStatuses, "status", string(s)), func() float64 { return float64(count()[s]) }); err != nil {
			return err
		}
	}
	return nil
}

// OpenStreams registers specloop_sse_streams_open, the event streams open
// when scraped, as count returns it.
func (m *Metrics) OpenStreams(count func() int) error {
	return m.gauge(famStreams, func() float64 { return float64(count()) })
}

// RunEnded counts a run that ended without running (cancelled while
// queued, say), from its run_finished event. Runs observed with
// Telemetry.Observe are counted by their observer.
func (m *Metrics) RunEnded(ev *gen.TraceEvent) {
	if ev.EventType != gen.TraceEventTypeRunFinished || ev.ExitReason == nil {
		return
	}
	m.counter(famRuns, "exit_reason", label(gen.ExitReasonValues(), *ev.ExitReason)).Inc()
	if ev.DurationMs != nil {
		m.runDuration.Update(*ev.DurationMs / 1e3)
	}
	if ev.StepsUsed != nil {
		m.runSteps.Update(float64(*ev.StepsUsed))
	}
}

// admitTool reports whether a tool that is not built in may have a label
// of its own: it has one already, or the process has fewer than
// MaxToolLabels.
func (m *Metrics) admitTool(name string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.toolLabels[name] {
		return true
	}
	if len(m.toolLabels) >= MaxToolLabels {
		return false
	}
	m.toolLabels[name] = true
	return true
}
