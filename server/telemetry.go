package server

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/specloop/specloop/gen"
	"github.com/specloop/specloop/telemetry"
	"github.com/specloop/specloop/wiring"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// The server's telemetry (Config.Telemetry): GET /metrics, the metrics of
// HTTP requests, run statuses and event streams, and the W3C trace context
// of the request that creates a run, which becomes the parent of the run's
// span. The runs themselves are observed through wiring (see
// instrumentRun).

var errNoMetrics = &problemError{status: http.StatusNotFound, detail: "this server keeps no metrics"}

// useTelemetry registers the server's gauges with the metrics and puts the
// request middleware outermost on e, so that it sees every answer.
func (s *Server) useTelemetry(e *echo.Echo) error {
	tel := s.cfg.Telemetry
	if tel == nil {
		return nil
	}
	ops := map[string]string{} // "METHOD /echo/path" → operationId
	for _, op := range gen.Operations() {
		ops[op.Method+" "+echoPath(op.Path)] = op.OperationID
	}
	if m := tel.Metrics; m != nil {
		if err := m.RunStatuses(s.runStatuses); err != nil {
			return fmt.Errorf("server: metrics: %w", err)
		}
		if err := m.OpenStreams(s.streams.open); err != nil {
			return fmt.Errorf("server: metrics: %w", err)
		}
	}
	e.Use(s.telemetryMiddleware(ops))
	return nil
}

// telemetryMiddleware counts each request by operation (ops maps echo's
// routes to operationIds) and status, and reads the W3C trace context
// (traceparent, tracestate) of requests when the server exports spans.
func (s *Server) telemetryMiddleware(ops map[string]string) echo.MiddlewareFunc {
	tel := s.cfg.Telemetry
	var prop propagation.TraceContext
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if tel.Tracer != nil {
				req := c.Request()
				c.SetRequest(req.WithContext(prop.Extract(req.Context(), propagation.HeaderCarrier(req.Header))))
			}
			t0 := time.Now()
			if err := next(c); err != nil {
				c.Error(err)
			}
			if tel.Metrics != nil {
				tel.Metrics.HTTPRequest(ops[c.Request().Method+" "+c.Path()], c.Response().Status, time.Since(t0))
			}
			return nil
		}
	}
}

// runStatuses counts the runs by status, for the specloop_runs gauge.
func (s *Server) runStatuses() map[gen.RunStatus]int {
	n := map[gen.RunStatus]int{}
	s.runs.mu.RLock()
	defer s.runs.mu.RUnlock()
	for _, r := range s.runs.sorted {
		n[r.status]++
	}
	return n
}

// open is the number of event streams open.
func (st *streamSlots) open() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.total
}

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
func (s *Server) instrumentRun(cfg *wiring.Config, j *job) {
	cfg.Telemetry, cfg.TelemetryRun = s.cfg.Telemetry, j.telemetry
}

// runEnded counts a run that ended without its loop (cancelled while
// queued).
func (s *Server) runEnded(ev *gen.TraceEvent) {
	if tel := s.cfg.Telemetry; tel != nil && tel.Metrics != nil {
		tel.Metrics.RunEnded(ev)
	}
}

// GetMetrics returns the metrics in the Prometheus text format.
func (s *Server) GetMetrics(context.Context, gen.GetMetricsRequestObject) (gen.GetMetricsResponseObject, error) {
	tel := s.cfg.Telemetry
	if tel == nil || tel.Metrics == nil {
		return nil, errNoMetrics
	}
	var buf bytes.Buffer
	if err := tel.Metrics.WriteText(&buf); err != nil {
		return nil, err
	}
	return metricsResponse{buf.Bytes()}, nil
}

// metricsResponse is the exposition with its exact media type (the
// generated 200 response would say text/plain without the format version).
type metricsResponse struct{ body []byte }

func (r metricsResponse) VisitGetMetricsResponse(w http.ResponseWriter) error {
	w.Header().Set("Content-Type", telemetry.TextContentType)
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(r.body); err != nil {
		return fmt.Errorf("write the metrics: %w", err)
	}
	return nil
}
