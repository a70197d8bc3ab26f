package upstream

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The result label of toolgate_upstream_requests_total; a fixed set.
const (
	resultOK        = "ok"         // the centre answered (its classifier may have failed: that is its answer)
	resultError     = "error"      // the call failed: unreachable, refused, deadline, overload
	resultBadAnswer = "bad_answer" // an answer that is not a classification
	resultCanceled  = "canceled"   // the check went away first
)

// The result label of toolgate_upstream_policy_updates_total.
const (
	policyApplied = "applied" // in force
	policyRefused = "refused" // did not verify or compile; the one in force stays
)

// Metrics are a local server's metrics of its upstream. Make them once per
// process.
type Metrics struct {
	requests *prometheus.CounterVec
	duration prometheus.Histogram
	policies *prometheus.CounterVec
}

// NewMetrics makes the upstream metrics and registers them on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolgate_upstream_requests_total",
			Help: "Classify calls to the upstream toolgate by result: ok (answered), error (unreachable, refused, timed out), bad_answer, canceled.",
		}, []string{"result"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "toolgate_upstream_request_duration_seconds",
			Help:    "Time of one Classify call to the upstream toolgate, the centre's classification included.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}),
		policies: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolgate_upstream_policy_updates_total",
			Help: "Policy sets received from the upstream toolgate by result: applied, or refused (it did not verify or compile; the set in force stays).",
		}, []string{"result"}),
	}
	m.policies.WithLabelValues(policyApplied)
	m.policies.WithLabelValues(policyRefused)
	// Every result from the start, so that a rate() works before the
	// first of each.
	for _, r := range []string{resultOK, resultError, resultBadAnswer, resultCanceled} {
		m.requests.WithLabelValues(r)
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.policies} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *Metrics) observe(result string, d time.Duration) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(result).Inc()
	m.duration.Observe(d.Seconds())
}

func (m *Metrics) policy(result string) {
	if m == nil {
		return
	}
	m.policies.WithLabelValues(result).Inc()
}
