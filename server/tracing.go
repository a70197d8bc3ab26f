package server

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc/filters"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
)

// TracingConfig turns on OpenTelemetry tracing of RPCs, exported over
// OTLP/HTTP. Off unless an endpoint is set.
type TracingConfig struct {
	// OTLPEndpoint is the collector's OTLP/HTTP base URL, for example
	// http://otel-collector:4318 (spans go to /v1/traces), or a full
	// traces URL with its path.
	OTLPEndpoint string `yaml:"otlp_endpoint"`
	// SampleRatio is the share of new traces recorded, 0 to 1; a caller's
	// sampling decision is always followed.
	SampleRatio float64 `yaml:"sample_ratio"`
}

func (c TracingConfig) validate() error {
	if c.OTLPEndpoint == "" {
		return nil
	}
	u, err := url.Parse(c.OTLPEndpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("server.tracing.otlp_endpoint: %q is not an http(s) URL", c.OTLPEndpoint)
	}
	if c.SampleRatio < 0 || c.SampleRatio > 1 {
		return fmt.Errorf("server.tracing.sample_ratio: want 0 to 1, got %g", c.SampleRatio)
	}
	return nil
}

// WithTracerProvider traces RPCs with tp instead of one built from
// server.tracing (tests, or a process that already has a provider).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) { o.tracer = tp }
}

// NewTracerProvider builds the OTLP/HTTP exporting provider of
// server.tracing, for a runtime that traces the classifier with the same
// provider as the server (WithTracerProvider); its owner shuts it down.
func NewTracerProvider(c TracingConfig, version string) (*sdktrace.TracerProvider, error) {
	// A base URL gets the standard traces path, as OTEL_EXPORTER_OTLP_ENDPOINT
	// does; a URL with a path is used as it is.
	u, err := url.Parse(c.OTLPEndpoint)
	if err != nil {
		return nil, fmt.Errorf("server.tracing.otlp_endpoint: %w", err)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/traces"
	}
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(u.String()))
	if err != nil {
		return nil, fmt.Errorf("server.tracing: %w", err)
	}
	res := resource.NewSchemaless(attribute.String("service.name", "toolgate"), attribute.String("service.version", version))
	return sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(c.SampleRatio))),
	), nil
}

// tracingOption is the stats handler that traces every RPC but health
// checks. It continues W3C trace context from callers, sets no globals
// and records no OpenTelemetry metrics (Prometheus has those).
func tracingOption(tp trace.TracerProvider) grpc.ServerOption {
	return grpc.StatsHandler(otelgrpc.NewServerHandler(
		otelgrpc.WithTracerProvider(tp),
		otelgrpc.WithMeterProvider(noop.NewMeterProvider()),
		otelgrpc.WithPropagators(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})),
		otelgrpc.WithFilter(filters.Not(filters.HealthCheck())),
	))
}

// ShutdownTracing flushes spans still buffered.
func ShutdownTracing(ctx context.Context, tp *sdktrace.TracerProvider) error {
	if tp == nil {
		return nil
	}
	err := tp.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("flushing traces: %w", err)
	}
	return err
}
