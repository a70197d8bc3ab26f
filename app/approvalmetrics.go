package app

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolgate/toolgate/approvals"
	"github.com/toolgate/toolgate/approvals/webhook"
)

// approvalMetrics exports a centre's approval queue: what its waiting
// checks saw (counted on this replica), the approvals pending in the
// store (shared by the replicas), and the webhook's messages.
type approvalMetrics struct {
	q  *approvals.Queue
	wh *webhook.Notifier // nil: none

	queued, outcomes, pending, webhookMsgs *prometheus.Desc
}

// pendingScrapeTimeout bounds the store query a scrape makes.
const pendingScrapeTimeout = 2 * time.Second

func newApprovalMetrics(q *approvals.Queue, wh *webhook.Notifier) *approvalMetrics {
	return &approvalMetrics{q: q, wh: wh,
		queued: prometheus.NewDesc("toolgate_approvals_queued_total", "Unattended questions queued for an approver on this replica.", nil, nil),
		outcomes: prometheus.NewDesc("toolgate_approvals_outcomes_total",
			"How the checks that waited for an approver on this replica ended: allowed, denied (an approver's answer), learned (a rule an earlier answer taught), expired (the approval's deadline, the policy's outcome), call_deadline (the caller's own deadline came first; the approval stays pending), failed (the store; denied), full (not queued, denied: the queue at approvals.max_pending or max_pending_per_origin, as many checks waiting on one approval as allowed, or a call an approver cannot be shown whole).",
			[]string{"outcome"}, nil),
		pending: prometheus.NewDesc("toolgate_approvals_pending", "Approvals waiting for an answer in the store, all replicas'.", nil, nil),
		webhookMsgs: prometheus.NewDesc("toolgate_approvals_webhook_messages_total",
			"Webhook messages announcing new approvals, by result: sent, failed (after retries), dropped (queue full or shutting down).", []string{"result"}, nil),
	}
}

func (m *approvalMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.queued
	ch <- m.outcomes
	ch <- m.pending
	ch <- m.webhookMsgs
}

func (m *approvalMetrics) Collect(ch chan<- prometheus.Metric) {
	s := m.q.Stats()
	ch <- prometheus.MustNewConstMetric(m.queued, prometheus.CounterValue, float64(s.Queued))
	for outcome, n := range map[string]int64{"allowed": s.Allowed, "denied": s.Denied, "learned": s.Learned, "expired": s.TimedOut,
		"call_deadline": s.CallDeadline, "failed": s.Failed, "full": s.Full} {
		ch <- prometheus.MustNewConstMetric(m.outcomes, prometheus.CounterValue, float64(n), outcome)
	}
	ctx, cancel := context.WithTimeout(context.Background(), pendingScrapeTimeout)
	defer cancel()
	// A store that does not answer leaves the gauge out, rather than
	// fail the whole scrape.
	if n, err := m.q.Pending(ctx); err == nil {
		ch <- prometheus.MustNewConstMetric(m.pending, prometheus.GaugeValue, float64(n))
	}
	if m.wh != nil {
		w := m.wh.Stats()
		ch <- prometheus.MustNewConstMetric(m.webhookMsgs, prometheus.CounterValue, float64(w.Sent), "sent")
		ch <- prometheus.MustNewConstMetric(m.webhookMsgs, prometheus.CounterValue, float64(w.Failed), "failed")
		ch <- prometheus.MustNewConstMetric(m.webhookMsgs, prometheus.CounterValue, float64(w.Dropped), "dropped")
	}
}
