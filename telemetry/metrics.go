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
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
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
	vocab       *vocabulary
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
	v := specVocabulary()
	set := metrics.NewSet()
	var help []string
	for _, f := range families {
		help = append(help, "# HELP "+f.name+"\n", "# HELP "+f.name+" "+f.help+"\n")
	}
	m := &Metrics{set: set, vocab: v, help: strings.NewReplacer(help...), toolLabels: map[string]bool{},
		runDuration: set.NewPrometheusHistogramExt(famRunDuration, []float64{0.1, 0.5, 1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600}),
		runSteps:    set.NewPrometheusHistogramExt(famRunSteps, []float64{1, 2, 3, 5, 10, 20, 50, 100, 200, 500, 1000})}
	// The series of the spec's enums exist from the start, at zero.
	for _, r := range v.exitReasons {
		m.counter(famRuns, "exit_reason", string(r))
	}
	for _, c := range v.denials {
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
	if len(labels) == 0 {
		return family
	}
	var b strings.Builder
	b.Grow(128)
	b.WriteString(family)
	sep := byte('{')
	for i := 0; i+1 < len(labels); i += 2 {
		b.WriteByte(sep)
		b.WriteString(labels[i])
		b.WriteString(`="`)
		b.WriteString(labelEscaper.Replace(labels[i+1]))
		b.WriteByte('"')
		sep = ','
	}
	b.WriteByte('}')
	return b.String()
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
	op := label(m.vocab.operations, operation)
	m.counter(famHTTPRequests, "operation", op, "status", strconv.Itoa(status)).Inc()
	m.set.GetOrCreatePrometheusHistogram(series(famHTTPDuration, "operation", op)).Update(d.Seconds())
}

// RunStatuses registers specloop_runs{status}: the runs in each status of
// the spec's RunStatus enum but finished (queued, running, and any status
// the spec adds, such as one for runs waiting for an approval), counted by
// count when scraped (once for each status). count returns the number of
// runs in each status; it must be safe to call from any goroutine.
func (m *Metrics) RunStatuses(count func() map[gen.RunStatus]int) error {
	for _, s := range m.vocab.statuses {
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
	m.counter(famRuns, "exit_reason", label(m.vocab.exitReasons, *ev.ExitReason)).Inc()
	if ev.DurationMs != nil {
		m.runDuration.Update(*ev.DurationMs / 1e3)
	}
	if ev.StepsUsed != nil {
		m.runSteps.Update(float64(*ev.StepsUsed))
	}
}

// runMetrics are the metrics of one run's events.
type runMetrics struct {
	m        *Metrics
	provider string
	tools    map[string]string // a tool's label in this run, once chosen
	own      int               // the tools not built in with a label of their own
}

func (m *Metrics) forRun(provider string) *runMetrics {
	return &runMetrics{m: m, provider: label(m.vocab.providers, provider), tools: map[string]string{}}
}

// toolLabel is the metric label of a tool the run offers (other already
// stands for any other): its name for a built-in tool; for another, its
// name while the run has given fewer than MaxRunToolLabels such names a
// label and the process has it or fewer than MaxToolLabels; other then.
func (r *runMetrics) toolLabel(name string) string {
	if name == labelOther || r.m.vocab.isBuiltin(name) {
		return name
	}
	if l, ok := r.tools[name]; ok {
		return l
	}
	l := labelOther
	if r.own < MaxRunToolLabels && r.m.admitTool(name) {
		l = name
		r.own++
	}
	r.tools[name] = l
	return l
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

// event counts what ev says happened; tool is the label of its tool among
// the tools the run offers.
func (r *runMetrics) event(ev *gen.TraceEvent, tool string) {
	m := r.m
	switch ev.EventType {
	case gen.TraceEventTypeModelAction:
		if ev.ModelDurationMs != nil { // the turn's first action: one model call
			m.counter(famModelCalls, "provider", r.provider, "outcome", outcomeOK).Inc()
			r.usage(ev.Usage)
		}
	case gen.TraceEventTypeModelFeedback:
		if ev.FeedbackKind != nil && *ev.FeedbackKind == gen.FeedbackKindInvalidModelOutput {
			m.counter(famModelCalls, "provider", r.provider, "outcome", string(gen.FeedbackKindInvalidModelOutput)).Inc()
			r.usage(ev.Usage)
		}
	case gen.TraceEventTypeObservation:
		isErr := ev.IsError != nil && *ev.IsError
		m.counter(famToolCalls, "tool", r.toolLabel(tool), "outcome", m.vocab.toolOutcome(isErr, ev.ErrorCode)).Inc()
		if isErr && m.vocab.denied(ev.ErrorCode) {
			m.counter(famSandboxDenials, "code", string(*ev.ErrorCode)).Inc()
		}
	case gen.TraceEventTypeRunFinished:
		if ev.ExitReason != nil && *ev.ExitReason == gen.ExitReasonModelError {
			m.counter(famModelCalls, "provider", r.provider, "outcome", string(gen.ExitReasonModelError)).Inc()
		}
		m.RunEnded(ev)
	}
}

// check counts a completion check's result.
func (r *runMetrics) check(res string) { r.m.counter(famChecks, "result", res).Inc() }

func (r *runMetrics) usage(u *gen.Usage) {
	if u == nil {
		return
	}
	r.m.counter(famTokens, "provider", r.provider, "kind", semconv.GenAITokenTypeInput.Value.AsString()).AddInt64(u.InputTokens)
	r.m.counter(famTokens, "provider", r.provider, "kind", semconv.GenAITokenTypeOutput.Value.AsString()).AddInt64(u.OutputTokens)
}
