package classifier

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolgate/toolgate/engine"
)

// The outcome label of toolgate_classifier_requests_total. The set is fixed
// so that the label stays bounded whatever a backend answers.
const (
	outcomeAllow       = "allow"        // the model answered: not blocked
	outcomeBlock       = "block"        // the model answered: blocked
	outcomeRefused     = "refused"      // HTTP 4xx other than 408, 409, 429
	outcomeRateLimited = "rate_limited" // HTTP 429
	outcomeServerError = "server_error" // HTTP 5xx, 408, 409
	outcomeTimeout     = "timeout"      // an attempt or the classifier deadline ran out
	outcomeCanceled    = "canceled"     // the caller went away
	outcomeTransport   = "transport"    // connection refused, reset, TLS...
	outcomeBadAnswer   = "bad_answer"   // not a verdict: a malformed, oversized or compressed body, no tool call, arguments off the schema
	outcomeOffCategory = "off_category" // a well-formed allow in a category the policy does not allow in
	// outcomeError is anything else: a panic in the call or, with an empty
	// backend, one recovered elsewhere in the classification.
	outcomeError = "error"
	// Pool outcomes, with an empty backend label: no backend was called.
	outcomeSaturated   = "saturated"    // every usable backend stayed busy for the queue time
	outcomeBreakerOpen = "breaker_open" // no backend's breaker let the call through
)

// Metrics are the classifier's Prometheus metrics. Make them once per
// process and give the same value to every classifier (WithMetrics): a hot
// reload builds a new classifier, and a registry takes each metric once.
// The backend label holds configured backend names, so it stays bounded.
type Metrics struct {
	requests  *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	inflight  *prometheus.GaugeVec
	queueWait prometheus.Histogram
	cacheHits prometheus.Counter
	tokens    *prometheus.CounterVec
	// dumpFailures counts dump records not written.
	dumpFailures prometheus.Counter
	// decisions count verdicts by the category they name: names of the
	// policies' categories, or "unknown", so the label stays bounded.
	decisions *prometheus.CounterVec
}

// NewMetrics makes the classifier metrics and registers them on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolgate_classifier_requests_total",
			Help: "Classifier calls by backend and outcome; calls the pool could not place on any backend have an empty backend.",
		}, []string{"backend", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "toolgate_classifier_duration_seconds",
			Help:    "Time of one classifier call on a backend, retries included.",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"backend"}),
		inflight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "toolgate_classifier_inflight",
			Help: "Classifier calls running on a backend.",
		}, []string{"backend"}),
		queueWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "toolgate_classifier_queue_wait_seconds",
			Help:    "Time one classification waited for a free backend slot, failovers included.",
			Buckets: []float64{.0001, .001, .01, .05, .1, .25, .5, 1, 2.5, 5},
		}),
		cacheHits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "toolgate_cache_hits_total",
			Help: "Classifications answered from the verdict cache.",
		}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolgate_classifier_tokens_total",
			Help: "Tokens the backends reported for classifier calls, by backend and direction (input: the prompt, output: the answer, cached_input: the part of input read from the provider's prompt cache); failed calls count what they reported.",
		}, []string{"backend", "direction"}),
		dumpFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "toolgate_classifier_dump_write_failures_total",
			Help: "Classifier dump records (classifier.dump_file) that could not be written: the file system failed or did not keep up.",
		}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolgate_classifier_decisions_total",
			Help: "Classifier verdicts (cached ones included) by the policy category they name (unknown: a block naming none of the policy's) and decision.",
		}, []string{"category", "decision"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.inflight, m.queueWait, m.cacheHits, m.tokens, m.dumpFailures, m.decisions} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("classifier metrics: %w", err)
		}
	}
	return m, nil
}

// WithMetrics makes the classifier record into m; nil records nothing.
func WithMetrics(m *Metrics) Option { return func(o *options) { o.metrics = m } }

// The methods below do nothing on a nil *Metrics, so the classifier calls
// them unconditionally.

// dumpFailed counts n dump records not written.
func (m *Metrics) dumpFailed(n int) {
	if m != nil {
		m.dumpFailures.Add(float64(n))
	}
}

// decided counts one verdict.
func (m *Metrics) decided(category string, d engine.Decision) {
	if m != nil {
		m.decisions.WithLabelValues(category, d.String()).Inc()
	}
}

func (m *Metrics) cacheHit() {
	if m != nil {
		m.cacheHits.Inc()
	}
}

// backendCall wraps one call on a backend: it counts the call in flight
// until the returned function records its error and duration.
func (m *Metrics) backendCall(name string) func(ctx context.Context, o outcome, err error) {
	if m == nil {
		return func(context.Context, outcome, error) {}
	}
	g := m.inflight.WithLabelValues(name)
	g.Inc()
	start := time.Now()
	return func(ctx context.Context, o outcome, err error) {
		g.Dec()
		m.duration.WithLabelValues(name).Observe(time.Since(start).Seconds())
		m.requests.WithLabelValues(name, callOutcome(ctx, o, err)).Inc()
		// A backend's own token counts, never negative: a counter must
		// not go down, whatever an answer claims.
		m.tokens.WithLabelValues(name, "input").Add(float64(max(o.tokens.in, 0)))
		m.tokens.WithLabelValues(name, "output").Add(float64(max(o.tokens.out, 0)))
		m.tokens.WithLabelValues(name, "cached_input").Add(float64(max(o.tokens.cached, 0)))
	}
}

// poolResult records what the pool did for one classification: the time it
// spent waiting rather than calling backends, and, when it called none, why.
func (m *Metrics) poolResult(err error, called bool, wait time.Duration) {
	if m == nil {
		return
	}
	m.queueWait.Observe(wait.Seconds())
	if called {
		return // the calls were counted under their backends
	}
	switch {
	case err == nil:
		return
	case errors.Is(err, ErrSaturated):
		m.requests.WithLabelValues("", outcomeSaturated).Inc()
	case errors.Is(err, ErrNoBackend):
		m.requests.WithLabelValues("", outcomeBreakerOpen).Inc()
	case errors.Is(err, context.DeadlineExceeded):
		m.requests.WithLabelValues("", outcomeTimeout).Inc()
	case errors.Is(err, context.Canceled):
		m.requests.WithLabelValues("", outcomeCanceled).Inc()
	default:
		m.requests.WithLabelValues("", outcomeError).Inc()
	}
}

// panicked counts a panic recovered outside any backend call; one inside
// a backend call is counted under its backend by backendCall's record.
func (m *Metrics) panicked() {
	if m != nil {
		m.requests.WithLabelValues("", outcomeError).Inc()
	}
}

// callOutcome names the outcome of one backend call; ctx is the call's.
func callOutcome(ctx context.Context, o outcome, err error) string {
	if err == nil {
		if o.Block {
			return outcomeBlock
		}
		return outcomeAllow
	}
	if errors.Is(err, ErrRequestRefused) {
		return outcomeRefused
	}
	if errors.Is(err, ErrUnusableAnswer) {
		return outcomeOffCategory
	}
	// An error answer of either SDK.
	if st, ok := statusOf(err); ok {
		if st.code == http.StatusTooManyRequests {
			return outcomeRateLimited
		}
		return outcomeServerError
	}
	switch {
	case isBadAnswer(err):
		return outcomeBadAnswer
	case errors.Is(ctx.Err(), context.Canceled):
		return outcomeCanceled
	case ctx.Err() != nil, errors.Is(err, context.DeadlineExceeded):
		return outcomeTimeout
	}
	if _, ok := errors.AsType[*attemptError](err); ok {
		return outcomeTransport
	}
	return outcomeError
}

// errCallDidNotReturn is recorded for a backend call that left its goroutine
// (runtime.Goexit) without returning; a panic is recorded as errInternal.
var errCallDidNotReturn = errors.New("the backend call did not return")
