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

// registerGauges registers the server's gauges with the metrics.
func (s *Server) registerGauges() error {
	if tel := s.cfg.Telemetry; tel != nil && tel.Metrics != nil {
		if err := tel.Metrics.RunStatuses(s.rn.Statuses); err != nil {
			return fmt.Errorf("server: metrics: %w", err)
		}
		if err := tel.Metrics.OpenStreams(s.streams.open); err != nil {
			return fmt.Errorf("server: metrics: %w", err)
		}
	}
	return nil
}

// observe, the outermost middleware, sees every answer: it logs each
// request at debug level (method, route, status and duration; never
// headers, query strings or bodies), counts it by operation and status
// with metrics, and reads the W3C trace context (traceparent, tracestate)
// of requests when the server exports spans.
func (s *Server) observe(next echo.HandlerFunc) echo.HandlerFunc {
	tel := s.cfg.Telemetry
	var prop propagation.TraceContext
	return func(c echo.Context) error {
		if tel != nil && tel.Tracer != nil {
			req := c.Request()
			c.SetRequest(req.WithContext(prop.Extract(req.Context(), propagation.HeaderCarrier(req.Header))))
		}
		t0 := time.Now()
		if err := next(c); err != nil {
			c.Error(err)
		}
		s.log.Debug("request", "method", c.Request().Method, "route", c.Path(), "status", c.Response().Status, "duration", time.Since(t0))
		if tel != nil && tel.Metrics != nil {
			tel.Metrics.HTTPRequest(operations()[route(c)].OperationID, c.Response().Status, time.Since(t0))
		}
		return nil
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
