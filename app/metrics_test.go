package app

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/toolgate/toolgate/classifier"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/fakellm"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
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
	if a, stop, err := startMetrics("", m.reg, nil, zap.NewNop()); a != nil || err != nil {
		t.Fatalf("empty address: %v %v, want nothing served", a, err)
	} else {
		stop()
	}
	a, stop, err := startMetrics("127.0.0.1:0", m.reg, nil, zap.NewNop())
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

// get returns the status and body of GET url.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
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
	return resp.StatusCode, string(body)
}

// The health routes answer what ready says, GET only, with a short
// uncached text.
func TestHealthRoutes(t *testing.T) {
	var ready atomic.Bool
	mux := http.NewServeMux()
	healthRoutes(mux, ready.Load)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for _, tc := range []struct {
		ready  bool
		method string
		path   string
		want   int
	}{
		{false, http.MethodGet, "/healthz", http.StatusOK},
		{false, http.MethodGet, "/readyz", http.StatusServiceUnavailable},
		{true, http.MethodGet, "/healthz", http.StatusOK},
		{true, http.MethodGet, "/readyz", http.StatusOK},
		{true, http.MethodHead, "/readyz", http.StatusOK},
		{true, http.MethodPost, "/readyz", http.StatusMethodNotAllowed},
		{true, http.MethodGet, "/readyz/x", http.StatusNotFound},
	} {
		ready.Store(tc.ready)
		req, err := http.NewRequestWithContext(t.Context(), tc.method, srv.URL+tc.path, strings.NewReader("ignored"))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("ready %v: %s %s: %s, want %d", tc.ready, tc.method, tc.path, resp.Status, tc.want)
		}
		if tc.want == http.StatusOK && resp.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("%s %s: Cache-Control %q, want no-store", tc.method, tc.path, resp.Header.Get("Cache-Control"))
		}
	}
	// No ready function yet (the server is not built): not ready.
	mux = http.NewServeMux()
	healthRoutes(mux, nil)
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("no ready function: %d, want 503", rec.Code)
	}
}

// The metrics listener's /readyz follows the gRPC health service: 503
// while the App is built but not serving, 200 while it serves, and 503
// from the moment it drains, while a check in flight holds the drain
// open; /healthz is 200 throughout, so a draining pod is not restarted.
func TestReadyzFollowsServing(t *testing.T) {
	release := make(chan struct{})
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	fake := fakellm.Start(t, func(*fakellm.Request) fakellm.Reply { <-release; return fakellm.Reply{} })
	t.Cleanup(unblock) // before the fake closes
	dir := t.TempDir()
	path := configFile(t, dir, "server:\n  listen: 127.0.0.1:0\n  metrics_listen: 127.0.0.1:0\n  shutdown_timeout: 30s\n"+
		"classifier:\n  timeout: 30s\n  backends:\n    - {name: fake, base_url: \""+fake.URL()+"\", model: m}\n"+policyNoRules)
	a, err := New(loadConfig(t, path))
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + a.MetricsAddr().String()
	status := func(p string) int { code, _ := get(t, base+p); return code }

	if c := status("/readyz"); c != http.StatusServiceUnavailable {
		t.Errorf("built, not serving: /readyz %d, want 503", c)
	}
	if c := status("/healthz"); c != http.StatusOK {
		t.Errorf("built, not serving: /healthz %d, want 200", c)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	waitFor(t, "/readyz 200 while serving", func() bool { return status("/readyz") == http.StatusOK })

	conn, err := grpc.NewClient(a.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	in, err := structpb.NewStruct(map[string]any{"command": "make build"})
	if err != nil {
		t.Fatal(err)
	}
	answered := make(chan *pb.CheckResponse, 1)
	go func() {
		resp, err := pb.NewPermissionServiceClient(conn).Check(context.Background(),
			&pb.CheckRequest{Tool: &pb.ToolCall{Name: "Bash", Input: in}, WorkingDirectory: dir})
		if err != nil {
			t.Errorf("the check in flight: %v", err)
		}
		answered <- resp
	}()
	waitFor(t, "the check at the classifier", func() bool { return fake.Count() == 1 })

	cancel() // drain: the check in flight holds it open
	waitFor(t, "/readyz 503 while draining", func() bool { return status("/readyz") == http.StatusServiceUnavailable })
	if c := status("/healthz"); c != http.StatusOK {
		t.Errorf("draining: /healthz %d, want 200", c)
	}
	unblock()
	if resp := <-answered; resp.GetSource() != pb.DecisionSource_DECISION_SOURCE_CLASSIFIER {
		t.Errorf("the check in flight: %v, want the classifier's answer", resp)
	}
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}
