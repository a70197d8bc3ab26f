package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/toolgate/toolgate/classifier"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/server"
)

// serveMetrics holds every metric of one serve process on a registry of its
// own. They are made once: the classifiers a reload builds record into
// the same classifier metrics.
type serveMetrics struct {
	reg        *prometheus.Registry
	server     *server.Metrics
	classifier *classifier.Metrics
	reloads    *prometheus.CounterVec // result: success or failure
}

func newMetrics() (*serveMetrics, error) {
	m := &serveMetrics{reg: prometheus.NewRegistry()}
	m.reloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "toolgate_policy_reloads_total",
		Help: "Config reloads by result: success (swapped in) or failure (refused; the running config stays).",
	}, []string{"result"})
	// Both results from the start, so that a rate() of failures works
	// before the first one.
	m.reloads.WithLabelValues("success")
	m.reloads.WithLabelValues("failure")
	if err := m.reg.Register(m.reloads); err != nil {
		return nil, err
	}

	if err := m.reg.Register(collectors.NewGoCollector()); err != nil {
		return nil, err
	}
	if err := m.reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, err
	}
	var err error
	if m.server, err = server.NewMetrics(m.reg); err != nil {
		return nil, err
	}
	if m.classifier, err = classifier.NewMetrics(m.reg); err != nil {
		return nil, err
	}
	return m, nil
}

// breakerStates reports, at each scrape, the breaker state of every
// backend of the classifier serving now (a reload may replace it): 1 for
// the state it is in, 0 for the others, so that alerts can test
// state="open" directly.
type breakerStates struct {
	current func() *classifier.Classifier
	desc    *prometheus.Desc
}

func newBreakerStates(current func() *classifier.Classifier) *breakerStates {
	return &breakerStates{current: current, desc: prometheus.NewDesc("toolgate_classifier_breaker_state",
		"Each classifier backend's circuit breaker: 1 for the state it is in (closed, open or half-open), 0 for the others.",
		[]string{"backend", "state"}, nil)}
}

func (b *breakerStates) Describe(ch chan<- *prometheus.Desc) { ch <- b.desc }

func (b *breakerStates) Collect(ch chan<- prometheus.Metric) {
	c := b.current()
	if c == nil {
		return
	}
	for _, m := range c.Pool().States() {
		for _, state := range []string{"closed", "open", "half-open"} {
			v := 0.0
			if m.Breaker == state {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(b.desc, prometheus.GaugeValue, v, m.Name, state)
		}
	}
}

// poolMetrics reports the file-system workers at each scrape: how many
// there are, how many run a check, how many are stuck in a call that
// outlived its check's deadline, and the checks answered without their
// file-system work (it timed out, or no worker was free). Stuck workers
// that stay mean a mount that does not answer.
type poolMetrics struct {
	pool                          *engine.Pool
	size, busy, stuck, unanswered *prometheus.Desc
}

func newPoolMetrics(p *engine.Pool) *poolMetrics {
	return &poolMetrics{pool: p,
		size:  prometheus.NewDesc("toolgate_fs_workers", "File-system workers (engine.fs_workers): the most checks whose file-system work runs at once.", nil, nil),
		busy:  prometheus.NewDesc("toolgate_fs_workers_busy", "File-system workers running a check's file-system work, stuck ones included.", nil, nil),
		stuck: prometheus.NewDesc("toolgate_fs_workers_stuck", "File-system workers held by a call that outlived its check's deadline (engine.fs_timeout): a file system that does not answer.", nil, nil),
		unanswered: prometheus.NewDesc("toolgate_fs_unanswered_total",
			"Checks answered ASK without their file-system work, by reason: timeout (engine.fs_timeout passed) or busy (no worker free).", []string{"reason"}, nil),
	}
}

func (m *poolMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.size
	ch <- m.busy
	ch <- m.stuck
	ch <- m.unanswered
}

func (m *poolMetrics) Collect(ch chan<- prometheus.Metric) {
	s := m.pool.Stats()
	ch <- prometheus.MustNewConstMetric(m.size, prometheus.GaugeValue, float64(s.Size))
	ch <- prometheus.MustNewConstMetric(m.busy, prometheus.GaugeValue, float64(s.Busy))
	ch <- prometheus.MustNewConstMetric(m.stuck, prometheus.GaugeValue, float64(s.Stuck))
	ch <- prometheus.MustNewConstMetric(m.unanswered, prometheus.CounterValue, float64(s.Timeouts), "timeout")
	ch <- prometheus.MustNewConstMetric(m.unanswered, prometheus.CounterValue, float64(s.Full), "busy")
}

// metricsShutdownTimeout bounds the wait for scrapes in progress at exit.
const metricsShutdownTimeout = 5 * time.Second

// startMetrics serves /metrics from reg over HTTP on addr, with the
// health endpoints (see healthRoutes); an empty addr serves nothing. It
// returns the bound address (nil when off) and a stop function that shuts
// the listener down, waiting a bounded time for scrapes in progress.
func startMetrics(addr string, reg *prometheus.Registry, ready func() bool, log *zap.Logger) (net.Addr, func(), error) {
	if addr == "" {
		return nil, func() {}, nil
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("metrics listener (server.metrics_listen, --metrics-listen ADDR|off): %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog: zap.NewStdLog(log.With(zap.String("component", "metrics"))),
		// Counts its own errors on reg; bounds concurrent scrapes.
		Registry:            reg,
		MaxRequestsInFlight: 4,
		Timeout:             10 * time.Second,
	}))
	healthRoutes(mux, ready)
	hs := &http.Server{
		Handler:           mux,
		MaxHeaderBytes:    16 << 10,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       time.Minute,
		ErrorLog:          zap.NewStdLog(log.With(zap.String("component", "metrics"))),
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := hs.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics listener stopped", zap.Error(err))
		}
	}()
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), metricsShutdownTimeout)
		defer cancel()
		if err := hs.Shutdown(ctx); err != nil {
			_ = hs.Close()
		}
		<-done
	}
	return lis.Addr(), stop, nil
}

// healthRoutes adds the HTTP health endpoints, for probes that cannot
// speak gRPC over TLS (the kubelet's gRPC probes have no TLS): GET
// /healthz answers 200 while the process serves HTTP at all (liveness: a
// draining server is alive, and must not be restarted); GET /readyz
// answers 200 only while ready() (the gRPC health service says SERVING),
// 503 while starting and from the start of a drain. They read no body,
// say nothing but their state, and are not logged (health checks never
// are).
func healthRoutes(mux *http.ServeMux, ready func() bool) {
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeHealth(w, http.StatusOK, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if ready != nil && ready() {
			writeHealth(w, http.StatusOK, "ok")
			return
		}
		writeHealth(w, http.StatusServiceUnavailable, "not serving")
	})
}

func writeHealth(w http.ResponseWriter, code int, text string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, text+"\n")
}

// addrString names a listener's address in logs; nil means off.
func addrString(a net.Addr) string {
	if a == nil {
		return "off"
	}
	return a.String()
}

// countReload records the result of a reload; nil counts nothing.
func countReload(c *prometheus.CounterVec, err error) {
	if c == nil {
		return
	}
	if err != nil {
		c.WithLabelValues("failure").Inc()
		return
	}
	c.WithLabelValues("success").Inc()
}
