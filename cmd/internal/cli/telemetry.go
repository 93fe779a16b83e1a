package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/specloop/specloop/server"
	"github.com/specloop/specloop/telemetry"
)

// TelemetryFlags are the flags of metrics and tracing: --otel and
// --otel-content for `run` and `serve`, --metrics-addr for `serve`.
type TelemetryFlags struct {
	otel        bool
	content     bool
	metricsAddr string
}

func (f *TelemetryFlags) Register(fs *flag.FlagSet, serve bool) {
	fs.BoolVar(&f.otel, "otel", false, "export OpenTelemetry spans of every run to an OTLP/HTTP collector (configured by the standard OTEL_EXPORTER_OTLP_* variables; default http://localhost:4318); on by itself when "+telemetry.EnvEndpoint+" is set")
	fs.BoolVar(&f.content, "otel-content", false, "add tool call arguments and results to the spans; off by default because they carry what the model and the tools wrote")
	if serve {
		fs.StringVar(&f.metricsAddr, "metrics-addr", "", "also serve GET /metrics without a token on this separate address (the API's /metrics always needs the token); it drops sockets idle for 1 s before a request or 10 s between requests, and at its cap of 16 connections a new one closes the one idle the longest")
	}
}

// Telemetry is the telemetry a command opened: the Telemetry to hand to
// wiring or the server (nil when nothing is recorded), and what to stop at
// the end.
type Telemetry struct {
	Tel      *telemetry.Telemetry
	shutdown []func(context.Context) error
}

// Open builds the telemetry the flags ask for; withMetrics adds the
// Prometheus metrics (serve). The error names the flag at fault.
func (f *TelemetryFlags) Open(ctx context.Context, withMetrics bool) (*Telemetry, error) {
	tr := &Telemetry{}
	enabled := telemetry.TracingEnabled(f.otel, os.Getenv)
	if f.content && !enabled {
		return nil, fmt.Errorf("--otel-content needs tracing: add --otel (or set %s)", telemetry.EnvEndpoint)
	}
	if !enabled && !withMetrics {
		return tr, nil
	}
	tr.Tel = &telemetry.Telemetry{Content: f.content}
	if withMetrics {
		m, err := telemetry.NewMetrics()
		if err != nil {
			return nil, err
		}
		tr.Tel.Metrics = m
	}
	if enabled {
		tp, err := telemetry.NewOTLPProvider(ctx)
		if err != nil {
			return nil, fmt.Errorf("--otel: %w", err)
		}
		tr.Tel.Tracer = tp.Tracer(telemetry.TracerName)
		tr.shutdown = append(tr.shutdown, tp.Shutdown)
	}
	return tr, nil
}

// MaxMetricsConns caps the connections of the --metrics-addr listener: a
// scraper needs one or two. At the cap a new connection closes the one
// idle the longest (server.ConnLimit), so sockets that sit open never
// hold a scrape up.
const MaxMetricsConns = 16

// The timeouts of the --metrics-addr listener: a scrape sends its request
// at once and reads a small response, so a socket that is slower than
// this is not a scraper; Prometheus keeps its connection alive between
// scrapes, and reconnects when it was closed.
const (
	metricsReadHeaderTimeout = time.Second
	metricsIdleTimeout       = 10 * time.Second
)

// serveMetrics serves the metrics without a token on addr until close. On
// a loopback address it answers only requests whose Host localHost
// accepts (the API's rule without a token), so a web page that rebinds
// its name to 127.0.0.1 cannot read them.
func (tr *Telemetry) serveMetrics(addr string, localHost func(string) bool, logger *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--metrics-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", tr.Tel.Metrics.Handler())
	var h http.Handler = mux
	if isLoopback(addr) {
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !localHost(r.Host) {
				http.Error(w, "the Host header does not name this server: the metrics listener answers to loopback names and --allowed-host names only", http.StatusForbidden)
				return
			}
			mux.ServeHTTP(w, r)
		})
	}
	limit := server.NewConnLimit(MaxMetricsConns)
	hs := &http.Server{Handler: h, ReadHeaderTimeout: metricsReadHeaderTimeout, ReadTimeout: 5 * time.Second, WriteTimeout: 30 * time.Second,
		IdleTimeout: metricsIdleTimeout, MaxHeaderBytes: 16 << 10, ConnState: limit.ConnState,
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	ln = limit.Listener(ln)
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("the metrics listener stopped", "err", err)
		}
	}()
	if isLoopback(addr) {
		logger.Info("serving GET /metrics without a token", "metrics_addr", ln.Addr().String())
	} else {
		logger.Warn("serving GET /metrics without a token on an address that is not a loopback address: anyone who can reach it reads the server's metrics (runs, tools, errors); firewall it to the scraper", "metrics_addr", ln.Addr().String())
	}
	tr.shutdown = append(tr.shutdown, hs.Shutdown)
	return nil
}

// Close stops the metrics listener and flushes the last spans.
func (tr *Telemetry) Close(ctx context.Context) error {
	var errs []error
	for _, f := range tr.shutdown {
		errs = append(errs, f(ctx))
	}
	return errors.Join(errs...)
}
