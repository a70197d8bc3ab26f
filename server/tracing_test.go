package server

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	"github.com/toolgate/toolgate/engine"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

func TestTracingSpans(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	eng, _ := engine.New(engine.Config{})
	srv, err := New(DefaultConfig(), eng, zap.NewNop(), WithTracerProvider(tp))
	if err != nil {
		t.Fatal(err)
	}
	env := serveEnv(t, srv)

	// A caller's trace context is continued.
	parent := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5, 6}, TraceFlags: trace.FlagsSampled,
	})
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(trace.ContextWithSpanContext(context.Background(), parent), carrier)
	ctx := metadata.AppendToOutgoingContext(t.Context(), "traceparent", carrier["traceparent"])
	if _, err := env.client.Check(ctx, readReq(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := healthpb.NewHealthClient(env.conn).Check(t.Context(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	env.stop(t)
	spans := exp.GetSpans()
	if len(spans) != 2 {
		var names []string
		for _, s := range spans {
			names = append(names, s.Name)
		}
		t.Fatalf("spans %v, want the check's and the Check RPC's, none for health", names)
	}
	// The check's span ends first, under the RPC's.
	check, rpc := spans[0], spans[1]
	if rpc.Name != pb.PermissionService_Check_FullMethodName[1:] || rpc.SpanKind != trace.SpanKindServer || rpc.Parent.TraceID() != parent.TraceID() {
		t.Errorf("span %s kind %v parent %v", rpc.Name, rpc.SpanKind, rpc.Parent.TraceID())
	}
	if check.Name != checkSpanName || check.Parent.SpanID() != rpc.SpanContext.SpanID() {
		t.Errorf("span %s parent %v, want %s under the RPC's", check.Name, check.Parent.SpanID(), checkSpanName)
	}
	attrs := attribute.NewSet(check.Attributes...)
	for k, want := range map[string]string{"toolgate.decision": "allow", "toolgate.source": "safe_tool", "toolgate.tool_kind": "read"} {
		if v, _ := attrs.Value(attribute.Key(k)); v.AsString() != want {
			t.Errorf("check span %s = %q, want %q", k, v.AsString(), want)
		}
	}
}

// With server.tracing.otlp_endpoint, spans reach the collector by the time
// Shutdown returns.
func TestTracingOTLPExport(t *testing.T) {
	var posts atomic.Int32
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Method == http.MethodPost && r.URL.Path == "/v1/traces" && len(body) > 0 {
			posts.Add(1)
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	cfg := DefaultConfig()
	cfg.Tracing = TracingConfig{OTLPEndpoint: collector.URL, SampleRatio: 1}
	eng, _ := engine.New(engine.Config{})
	srv, err := New(cfg, eng, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	env := serveEnv(t, srv)
	if _, err := env.client.Check(t.Context(), readReq(t)); err != nil {
		t.Fatal(err)
	}
	env.stop(t)
	if posts.Load() == 0 {
		t.Fatal("no spans reached the collector")
	}
}

func TestTracingConfigValidation(t *testing.T) {
	for _, tc := range []TracingConfig{
		{OTLPEndpoint: "otel-collector:4318", SampleRatio: 1},
		{OTLPEndpoint: "http://c:4318", SampleRatio: 1.5},
	} {
		c := DefaultConfig()
		c.Tracing = tc
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "server.tracing") {
			t.Errorf("%+v: %v", tc, err)
		}
	}
}
