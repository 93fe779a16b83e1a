package telemetry

import (
	"context"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// The standard OpenTelemetry environment variables the exporter reads.
const (
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvSDKDisabled    = "OTEL_SDK_DISABLED"
)

// ServiceName is the service.name of specloop's spans, unless
// OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES say otherwise.
const ServiceName = "specloop"

// TracingEnabled reports whether spans should be exported: when asked for
// (a flag), or when the environment names an OTLP endpoint, and
// OTEL_SDK_DISABLED is not true.
func TracingEnabled(asked bool, getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv(EnvSDKDisabled)), "true") {
		return false
	}
	return asked || getenv(EnvEndpoint) != "" || getenv(EnvTracesEndpoint) != ""
}

// NewOTLPProvider returns a tracer provider that batches spans to an OTLP
// HTTP endpoint, configured by the standard OTEL_EXPORTER_OTLP_* variables
// (the default is http://localhost:4318). Shut it down to flush the last
// spans.
func NewOTLPProvider(ctx context.Context) (*sdktrace.TracerProvider, error) {
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("telemetry: otlp exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(ServiceName)),
		resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), nil
}

// TracerName is the instrumentation scope of specloop's spans.
const TracerName = "github.com/specloop/specloop/telemetry"
