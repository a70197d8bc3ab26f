package app

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"

	"github.com/toolgate/toolgate/classifier"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/fakellm"
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

// The breaker state of the classifier serving now, one series per backend
// and state, follows the breaker: closed while the backend answers, open
// once failures trip it.
func TestBreakerStates(t *testing.T) {
	var fail atomic.Bool
	fake := fakellm.Start(t, func(*fakellm.Request) fakellm.Reply {
		if fail.Load() {
			return fakellm.Reply{Fault: fakellm.FaultServerError, RetryAfter: -1}
		}
		return fakellm.Reply{}
	})
	cfg := classifier.DefaultConfig()
	cfg.Backends = []classifier.BackendConfig{{Name: "primary", BaseURL: fake.URL(), Model: "m", APIKeyEnv: "TOOLGATE_TEST_NO_KEY"}}
	cfg.Breaker.Failures = 2
	cfg.WithBackendDefaults()
	c, err := classifier.New(cfg, nil, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(newBreakerStates(func() *classifier.Classifier { return c }))
	want := func(state string) {
		t.Helper()
		exp := "# HELP toolgate_classifier_breaker_state Each classifier backend's circuit breaker: 1 for the state it is in (closed, open or half-open), 0 for the others.\n" +
			"# TYPE toolgate_classifier_breaker_state gauge\n"
		for _, s := range []string{"closed", "half-open", "open"} {
			v := 0
			if s == state {
				v = 1
			}
			exp += fmt.Sprintf("toolgate_classifier_breaker_state{backend=\"primary\",state=%q} %d\n", s, v)
		}
		if err := testutil.GatherAndCompare(reg, strings.NewReader(exp), "toolgate_classifier_breaker_state"); err != nil {
			t.Errorf("want %s: %v", state, err)
		}
	}
	classify := func(cmd string) {
		_, _ = c.Classify(t.Context(), &engine.ClassifyInput{Request: &engine.Request{
			Tool: engine.ToolCall{Name: "Bash", Input: map[string]any{"command": cmd}}, WorkingDirectory: "/w"}, Kind: engine.KindShell, Policy: "default"})
	}
	classify("make a")
	want("closed")
	fail.Store(true)
	for i := range 4 {
		classify(fmt.Sprintf("make b%d", i))
	}
	want("open")
	// Without a classifier there is nothing to report.
	empty := prometheus.NewRegistry()
	empty.MustRegister(newBreakerStates(func() *classifier.Classifier { return nil }))
	if n, err := testutil.GatherAndCount(empty); err != nil || n != 0 {
		t.Errorf("no classifier: %d series, %v", n, err)
	}
}

// The file-system workers are reported at each scrape: how many there are,
// how many are busy and stuck, and the checks answered without them.
func TestPoolMetrics(t *testing.T) {
	pool := engine.NewPool(3)
	defer pool.Close()
	want := `
# HELP toolgate_fs_unanswered_total Checks answered ASK without their file-system work, by reason: timeout (engine.fs_timeout passed) or busy (no worker free).
# TYPE toolgate_fs_unanswered_total counter
toolgate_fs_unanswered_total{reason="busy"} 0
toolgate_fs_unanswered_total{reason="timeout"} 0
# HELP toolgate_fs_workers File-system workers (engine.fs_workers): the most checks whose file-system work runs at once.
# TYPE toolgate_fs_workers gauge
toolgate_fs_workers 3
# HELP toolgate_fs_workers_busy File-system workers running a check's file-system work, stuck ones included.
# TYPE toolgate_fs_workers_busy gauge
toolgate_fs_workers_busy 0
# HELP toolgate_fs_workers_stuck File-system workers held by a call that outlived its check's deadline (engine.fs_timeout): a file system that does not answer.
# TYPE toolgate_fs_workers_stuck gauge
toolgate_fs_workers_stuck 0
`
	if err := testutil.CollectAndCompare(newPoolMetrics(pool), strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
}
