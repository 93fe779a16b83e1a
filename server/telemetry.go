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
	"go.opentelemetry.io/otel/propagation"
)

// The server's telemetry (Config.Telemetry): GET /metrics, the metrics of
// HTTP requests, run statuses and event streams, and the W3C trace context
// of the request that creates a run, which becomes the parent of the run's
// span. The runs themselves are observed by the runner.

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
		if err := m.RunStatuses(s.rn.Statuses); err != nil {
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

// open is the number of event streams open.
func (st *streamSlots) open() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.total
}

// GetMetrics returns the metrics in the Prometheus text format.
func (s api) GetMetrics(context.Context, gen.GetMetricsRequestObject) (gen.GetMetricsResponseObject, error) {
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
