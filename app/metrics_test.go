package app

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"go.uber.org/zap"
)

// scrape fetches /metrics from addr.
func scrape(t *testing.T, addr string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s\n%s", resp.Status, body)
	}
	return string(body)
}

func TestStartMetricsStops(t *testing.T) {
	m, err := newMetrics()
	if err != nil {
		t.Fatal(err)
	}
	if a, stop, err := startMetrics("", m.reg, zap.NewNop()); a != nil || err != nil {
		t.Fatalf("empty address: %v %v, want nothing served", a, err)
	} else {
		stop()
	}
	a, stop, err := startMetrics("127.0.0.1:0", m.reg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if body := scrape(t, a.String()); !strings.Contains(body, "toolgate_policy_reloads_total") {
		t.Fatalf("exposition lacks the reload counter:\n%s", body)
	}
	stop()
	if _, err := http.Get("http://" + a.String() + "/metrics"); err == nil {
		t.Fatal("the listener still answers after stop")
	}
}
