package server

import (
	"fmt"
	"strings"
	"time"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolgate/toolgate/engine"
)

// Metrics are the server's Prometheus metrics: decisions and the standard
// gRPC server metrics. Every label is drawn from a bounded set: decisions
// and sources are enums, tool kinds the engine's vocabulary; never session
// ids or tool names.
type Metrics struct {
	decisions *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	grpc      *grpcprom.ServerMetrics
	// auditFailures counts decision records the audit file did not take.
	auditFailures prometheus.Counter
}

// decisionBuckets span local decisions (tens of microseconds) up to
// classifier calls (seconds).
var decisionBuckets = []float64{
	.000025, .00005, .0001, .00025, .0005, .001, .0025, .005, .01,
	.025, .05, .1, .25, .5, 1, 2.5, 5, 10,
}

// NewMetrics makes the server metrics and registers them on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolgate_decisions_total",
			Help: "Decisions by verdict, deciding stage and tool kind.",
		}, []string{"decision", "source", "tool_kind"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "toolgate_decision_duration_seconds",
			Help:    "Time to decide one check, by deciding stage.",
			Buckets: decisionBuckets,
		}, []string{"source"}),
		auditFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "toolgate_audit_write_failures_total",
			Help: "Decision records that could not be written to the audit file: decisions made but not audited.",
		}),
		grpc: grpcprom.NewServerMetrics(grpcprom.WithServerHandlingTimeHistogram(
			grpcprom.WithHistogramBuckets(decisionBuckets),
		)),
	}
	for _, c := range []prometheus.Collector{m.decisions, m.duration, m.auditFailures, m.grpc} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("server metrics: %w", err)
		}
	}
	return m, nil
}

// decided counts one decision; a nil m counts nothing.
func (m *Metrics) decided(res engine.Result, latency time.Duration) {
	if m == nil {
		return
	}
	src := sourceLabel(res.Source)
	m.decisions.WithLabelValues(res.Decision.String(), src, kindLabel(res.Kind)).Inc()
	m.duration.WithLabelValues(src).Observe(latency.Seconds())
}

// auditFailed counts n audit records not written; a nil m counts
// nothing.
func (m *Metrics) auditFailed(n int) {
	if m != nil {
		m.auditFailures.Add(float64(n))
	}
}

// sourceLabel is the source's name; a value outside the enum is "other".
func sourceLabel(s engine.Source) string {
	name := s.String()
	if strings.HasPrefix(name, "source(") {
		return "other"
	}
	return name
}

// kindLabel keeps the engine's kinds and maps anything else to "other".
func kindLabel(k engine.Kind) string {
	if k == engine.KindUnknown {
		return string(k)
	}
	if _, err := engine.ParseKind(string(k)); err != nil {
		return "other"
	}
	return string(k)
}

// WithMetrics makes the server count decisions and RPCs into m.
func WithMetrics(m *Metrics) Option { return func(o *options) { o.metrics = m } }
