package telemetry

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
	"github.com/specloop/specloop/gen"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// Metrics are a process's Prometheus metrics, in a registry of their own
// (never the global default one). Create them with NewMetrics; the zero
// value is not usable. Every method is safe for concurrent use.
type Metrics struct {
	reg   *prometheus.Registry
	vocab *vocabulary

	runs           *prometheus.CounterVec
	runDuration    prometheus.Histogram
	runSteps       prometheus.Histogram
	toolCalls      *prometheus.CounterVec
	checks         *prometheus.CounterVec
	modelCalls     *prometheus.CounterVec
	tokens         *prometheus.CounterVec
	sandboxDenials *prometheus.CounterVec
	httpRequests   *prometheus.CounterVec
	httpDuration   *prometheus.HistogramVec

	toolMu     sync.Mutex
	toolLabels map[string]bool // the tools not built in that have a label of their own
}

// The values of the result label of specloop_completion_checks_total.
const (
	checkPassed = "passed"
	checkFailed = "failed"
	// checkError is a check that could not be run at all.
	checkError = "error"
)

// NewMetrics creates the metrics, with the Go runtime and process
// collectors, in a new registry. The label values it accepts come from the
// embedded spec.
func NewMetrics() (*Metrics, error) {
	v := specVocabulary()
	m := &Metrics{reg: prometheus.NewRegistry(), vocab: v, toolLabels: map[string]bool{}}
	m.runs = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "specloop_runs_total",
		Help: "Runs that ended, by exit reason (the spec's ExitReason)."}, []string{"exit_reason"})
	m.runDuration = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "specloop_run_duration_seconds",
		Help:    "How long runs took, from run_started to run_finished.",
		Buckets: []float64{0.1, 0.5, 1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600}})
	m.runSteps = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "specloop_run_steps",
		Help:    "Steps (model calls) runs used.",
		Buckets: []float64{1, 2, 3, 5, 10, 20, 50, 100, 200, 500, 1000}})
	m.toolCalls = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "specloop_tool_calls_total",
		Help: "Tool calls, by tool (other for a name the run does not offer, and for tools beyond the caps on label values) and outcome (ok, the spec's ErrorCode, or error)."},
		[]string{"tool", "outcome"})
	m.checks = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "specloop_completion_checks_total",
		Help: "Completion checks, by result (passed, failed, or error when the check could not run)."}, []string{"result"})
	m.modelCalls = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "specloop_model_calls_total",
		Help: "Model calls, by provider (the spec's ModelConfig provider) and outcome (ok, invalid_model_output, model_error)."},
		[]string{"provider", "outcome"})
	m.tokens = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "specloop_model_tokens_total",
		Help: "Tokens the model providers reported, by provider and kind (input, output)."}, []string{"provider", "kind"})
	m.sandboxDenials = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "specloop_sandbox_denials_total",
		Help: "Tool calls the workspace's confinement refused, by error code (the spec's x-sandbox-denials)."}, []string{"code"})
	m.httpRequests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "specloop_http_requests_total",
		Help: "HTTP requests, by operation (the spec's operationId, other for anything else) and status code."},
		[]string{"operation", "status"})
	m.httpDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "specloop_http_request_duration_seconds",
		Help: "How long HTTP requests took to answer, by operation (an event stream lasts as long as it is open).", Buckets: prometheus.DefBuckets},
		[]string{"operation"})
	m.reg.MustRegister(m.runs, m.runDuration, m.runSteps, m.toolCalls, m.checks, m.modelCalls, m.tokens,
		m.sandboxDenials, m.httpRequests, m.httpDuration,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// The series of the spec's enums exist from the start, at zero.
	for _, r := range v.exitReasons {
		m.runs.WithLabelValues(string(r))
	}
	for _, c := range v.denials {
		m.sandboxDenials.WithLabelValues(string(c))
	}
	for _, r := range []string{checkPassed, checkFailed, checkError} {
		m.checks.WithLabelValues(r)
	}
	return m, nil
}

// Registry returns the registry the metrics are in, for adding more.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in the exposition format the scraper asks
// for (the Prometheus text format by default).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// TextContentType is the media type WriteText writes.
var TextContentType = string(expfmt.NewFormat(expfmt.TypeTextPlain))

// WriteText writes the metrics in the Prometheus text format
// (TextContentType).
func (m *Metrics) WriteText(w io.Writer) error {
	mfs, err := m.reg.Gather()
	if err != nil {
		return fmt.Errorf("telemetry: gather metrics: %w", err)
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return fmt.Errorf("telemetry: encode metrics: %w", err)
		}
	}
	return nil
}

// HTTPRequest counts a request for the operation (an operationId of the
// spec; anything else, such as "" for a path the spec does not have, is
// counted as other) answered with status after d.
func (m *Metrics) HTTPRequest(operation string, status int, d time.Duration) {
	op := label(m.vocab.operations, operation)
	m.httpRequests.WithLabelValues(op, strconv.Itoa(status)).Inc()
	m.httpDuration.WithLabelValues(op).Observe(d.Seconds())
}

// RunStatuses registers specloop_runs{status}: the runs in each status of
// the spec's RunStatus enum but finished (queued, running, and any status
// the spec adds, such as one for runs waiting for an approval), counted by
// count when scraped. count returns the number of runs in each status; it
// must be safe to call from any goroutine.
func (m *Metrics) RunStatuses(count func() map[gen.RunStatus]int) error {
	live := slices.DeleteFunc(slices.Clone(m.vocab.statuses), func(s gen.RunStatus) bool { return s == gen.RunStatusFinished })
	return m.reg.Register(&statusCollector{live: live, count: count,
		desc: prometheus.NewDesc("specloop_runs", "Runs not finished yet, by status (the spec's RunStatus).", []string{"status"}, nil)})
}

// OpenStreams registers specloop_sse_streams_open, the event streams open
// when scraped, as count returns it.
func (m *Metrics) OpenStreams(count func() int) error {
	return m.reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "specloop_sse_streams_open",
		Help: "Event streams (GET /v1/runs/{run_id}/events) open."}, func() float64 { return float64(count()) }))
}

type statusCollector struct {
	desc  *prometheus.Desc
	live  []gen.RunStatus
	count func() map[gen.RunStatus]int
}

func (c *statusCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *statusCollector) Collect(ch chan<- prometheus.Metric) {
	n := c.count()
	for _, s := range c.live {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n[s]), string(s))
	}
}

// RunEnded counts a run that ended without running (cancelled while
// queued, say), from its run_finished event. Runs observed with
// Telemetry.Observe are counted by their observer.
func (m *Metrics) RunEnded(ev *gen.TraceEvent) {
	if ev.EventType != gen.TraceEventTypeRunFinished || ev.ExitReason == nil {
		return
	}
	m.runs.WithLabelValues(label(m.vocab.exitReasons, *ev.ExitReason)).Inc()
	if ev.DurationMs != nil {
		m.runDuration.Observe(*ev.DurationMs / 1e3)
	}
	if ev.StepsUsed != nil {
		m.runSteps.Observe(float64(*ev.StepsUsed))
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
	m.toolMu.Lock()
	defer m.toolMu.Unlock()
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
			m.modelCalls.WithLabelValues(r.provider, outcomeOK).Inc()
			r.usage(ev.Usage)
		}
	case gen.TraceEventTypeModelFeedback:
		if ev.FeedbackKind != nil && *ev.FeedbackKind == gen.FeedbackKindInvalidModelOutput {
			m.modelCalls.WithLabelValues(r.provider, string(gen.FeedbackKindInvalidModelOutput)).Inc()
			r.usage(ev.Usage)
		}
	case gen.TraceEventTypeObservation:
		isErr := ev.IsError != nil && *ev.IsError
		m.toolCalls.WithLabelValues(r.toolLabel(tool), m.vocab.toolOutcome(isErr, ev.ErrorCode)).Inc()
		if isErr && m.vocab.denied(ev.ErrorCode) {
			m.sandboxDenials.WithLabelValues(string(*ev.ErrorCode)).Inc()
		}
	case gen.TraceEventTypeRunFinished:
		if ev.ExitReason != nil && *ev.ExitReason == gen.ExitReasonModelError {
			m.modelCalls.WithLabelValues(r.provider, string(gen.ExitReasonModelError)).Inc()
		}
		m.RunEnded(ev)
	}
}

// check counts a completion check's result.
func (r *runMetrics) check(res string) { r.m.checks.WithLabelValues(res).Inc() }

func (r *runMetrics) usage(u *gen.Usage) {
	if u == nil {
		return
	}
	r.m.tokens.WithLabelValues(r.provider, semconv.GenAITokenTypeInput.Value.AsString()).Add(float64(u.InputTokens))
	r.m.tokens.WithLabelValues(r.provider, semconv.GenAITokenTypeOutput.Value.AsString()).Add(float64(u.OutputTokens))
}
