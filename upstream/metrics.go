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
	// The policy watch's, registered by RegisterWatch: only a server
	// that takes its policies from the centre has them.
	watchConnected prometheus.Gauge
	policyReceived prometheus.Gauge
	// The decision records' shipping, registered by RegisterRecords.
	recordsDropped   *prometheus.CounterVec
	recordsShipped   prometheus.Counter
	recordsNew       prometheus.Counter
	recordsFailed    prometheus.Counter
	recordsSpoolSize prometheus.Gauge
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

// RegisterWatch makes and registers the policy watch's metrics, for a
// local server whose policies come from the centre.
func (m *Metrics) RegisterWatch(reg prometheus.Registerer) error {
	m.watchConnected = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "toolgate_upstream_policy_watch_connected",
		Help: "1 while the policy watch to the upstream toolgate is up (a set was received on it), else 0.",
	})
	m.policyReceived = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "toolgate_upstream_policy_received_timestamp_seconds",
		Help: "Unix time at which the upstream last sent (or confirmed, on connecting) the policy set in force; the state directory's time for a kept copy; 0 for the built-in policy.",
	})
	for _, c := range []prometheus.Collector{m.watchConnected, m.policyReceived} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

func (m *Metrics) connected(up bool) {
	if m == nil || m.watchConnected == nil {
		return
	}
	if up {
		m.watchConnected.Set(1)
	} else {
		m.watchConnected.Set(0)
	}
}

func (m *Metrics) received(at time.Time) {
	if m == nil || m.policyReceived == nil || at.IsZero() {
		return
	}
	m.policyReceived.Set(float64(at.UnixNano()) / 1e9)
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

// RegisterRecords makes and registers the metrics of shipping decision
// records, for a local server that ships them.
func (m *Metrics) RegisterRecords(reg prometheus.Registerer) error {
	m.recordsDropped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "toolgate_upstream_records_dropped_total",
		Help: "Decision records that will never reach the upstream, by reason: spool_full (the spool's cap dropped its oldest), buffer_full (the spool's disk did not keep up), spool_error (the disk refused the write), corrupt (a spooled line that does not parse), refused (the upstream refused the batch).",
	}, []string{"reason"})
	for _, r := range []string{dropCap, dropBuffer, dropSpoolError, dropCorrupt, dropRefused} {
		m.recordsDropped.WithLabelValues(r)
	}
	m.recordsShipped = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "toolgate_upstream_records_shipped_total",
		Help: "Decision records the upstream acknowledged (resent ones included).",
	})
	m.recordsNew = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "toolgate_upstream_records_accepted_total",
		Help: "Decision records the upstream acknowledged as new (not a resend of a stored one).",
	})
	m.recordsFailed = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "toolgate_upstream_records_ship_failures_total",
		Help: "ShipRecords calls that failed (unreachable, no store, overload); the batch is sent again.",
	})
	m.recordsSpoolSize = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "toolgate_upstream_records_spool_bytes",
		Help: "Bytes of decision records in the spool on disk, not yet acknowledged (or acknowledged in a segment still in use).",
	})
	for _, c := range []prometheus.Collector{m.recordsDropped, m.recordsShipped, m.recordsNew, m.recordsFailed, m.recordsSpoolSize} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

func (m *Metrics) droppedRecords(reason string, n int) {
	if m == nil || m.recordsDropped == nil {
		return
	}
	m.recordsDropped.WithLabelValues(reason).Add(float64(n))
}

func (m *Metrics) shipped(n, accepted int) {
	if m == nil || m.recordsShipped == nil {
		return
	}
	m.recordsShipped.Add(float64(n))
	m.recordsNew.Add(float64(accepted))
}

func (m *Metrics) shipFailed() {
	if m == nil || m.recordsFailed == nil {
		return
	}
	m.recordsFailed.Inc()
}

func (m *Metrics) spooled(n int64) {
	if m == nil || m.recordsSpoolSize == nil {
		return
	}
	m.recordsSpoolSize.Set(float64(n))
}
