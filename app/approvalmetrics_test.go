package app

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/toolgate/toolgate/approvals"
	"github.com/toolgate/toolgate/approvals/store"
	"github.com/toolgate/toolgate/engine"
)

// TestApprovalMetrics: the queue's counters and the store's pending
// approvals are exported; a store that fails leaves the gauge out and
// the scrape whole.
func TestApprovalMetrics(t *testing.T) {
	st, err := store.OpenSQLite(t.Context(), filepath.Join(t.TempDir(), "a.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	q := approvals.New(st, approvals.Options{})
	reg := prometheus.NewRegistry()
	if err := reg.Register(newApprovalMetrics(q, nil)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, _ = q.Approve(ctx, &engine.ApprovalInput{Request: &engine.Request{Tool: engine.ToolCall{Name: "Bash", Input: map[string]any{"command": "make deploy"}}, WorkingDirectory: "/w", Unattended: true},
		Asked: engine.Result{Decision: engine.Ask, Source: engine.SourceRule}, Timeout: time.Hour})
	want := `
# HELP toolgate_approvals_pending Approvals waiting for an answer in the store, all replicas'.
# TYPE toolgate_approvals_pending gauge
toolgate_approvals_pending 1
# HELP toolgate_approvals_queued_total Unattended questions queued for an approver on this replica.
# TYPE toolgate_approvals_queued_total counter
toolgate_approvals_queued_total 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "toolgate_approvals_pending", "toolgate_approvals_queued_total"); err != nil {
		t.Error(err)
	}
	if got := testutil.ToFloat64(outcome(t, reg, "call_deadline")); got != 1 {
		t.Errorf("call_deadline outcomes %v, want 1", got)
	}
	st.Close()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("a closed store failed the scrape: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "toolgate_approvals_pending" {
			t.Error("the pending gauge was exported from a closed store")
		}
	}
}

// outcome is a collector of the one outcome series named.
func outcome(t *testing.T, reg *prometheus.Registry, name string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "toolgate_approvals_outcomes_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == name {
				g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "x"})
				g.Set(m.GetCounter().GetValue())
				return g
			}
		}
	}
	t.Fatalf("no outcome %s", name)
	return nil
}
