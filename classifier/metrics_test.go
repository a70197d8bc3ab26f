package classifier

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"

	"github.com/toolgate/toolgate/fakellm"
)

func newMetricsClassifier(t *testing.T, cfg Config, m *Metrics) *Classifier {
	t.Helper()
	c, err := New(cfg, map[string]Rules{"default": testRules}, zap.NewNop(), WithMetrics(m))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newTestMetrics(t *testing.T) (*Metrics, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	return m, reg
}

// requests reads toolgate_classifier_requests_total for one series.
func requests(m *Metrics, backend, outcome string) float64 {
	return testutil.ToFloat64(m.requests.WithLabelValues(backend, outcome))
}

// histogramCount is the number of observations of one histogram series.
func histogramCount(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) uint64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, l := range m.GetLabel() {
				if labels[l.GetName()] != l.GetValue() {
					continue next
				}
			}
			return m.GetHistogram().GetSampleCount()
		}
	}
	return 0
}

func TestMetricsCountVerdictsAndCacheHits(t *testing.T) {
	fake := fakellm.Start(t, blockOn("drop table"))
	m, reg := newTestMetrics(t)
	c := newMetricsClassifier(t, testConfig(fake.URL()), m)

	for _, cmd := range []string{"psql -c 'drop table users'", "go build ./...", "go test ./...", "go build ./..."} {
		if _, err := c.Classify(t.Context(), input("Bash", cmd, "")); err != nil {
			t.Fatal(err)
		}
	}
	// The repeated build is a cache hit: three upstream calls, one hit.
	if got := requests(m, "primary", outcomeBlock); got != 1 {
		t.Errorf("block = %v, want 1", got)
	}
	if got := requests(m, "primary", outcomeAllow); got != 2 {
		t.Errorf("allow = %v, want 2", got)
	}
	if got := testutil.ToFloat64(m.cacheHits); got != 1 {
		t.Errorf("cache hits = %v, want 1", got)
	}
	if got := histogramCount(t, reg, "toolgate_classifier_duration_seconds", map[string]string{"backend": "primary"}); got != 3 {
		t.Errorf("duration observations = %d, want 3", got)
	}
	if got := histogramCount(t, reg, "toolgate_classifier_queue_wait_seconds", nil); got != 3 {
		t.Errorf("queue wait observations = %d, want 3 (one per classification that reached the pool)", got)
	}
	if got := testutil.ToFloat64(m.inflight.WithLabelValues("primary")); got != 0 {
		t.Errorf("inflight = %v after the calls, want 0", got)
	}
}

func TestMetricsOutcomeOfEachFault(t *testing.T) {
	want := map[fakellm.Fault]string{
		fakellm.FaultRateLimit:        outcomeRateLimited,
		fakellm.FaultServerError:      outcomeServerError,
		fakellm.FaultBadRequest:       outcomeRefused,
		fakellm.FaultHang:             outcomeTimeout,
		fakellm.FaultReset:            outcomeTransport,
		fakellm.FaultNoToolCall:       outcomeBadAnswer,
		fakellm.FaultMalformed:        outcomeBadAnswer,
		fakellm.FaultWrongSchema:      outcomeBadAnswer,
		fakellm.FaultSeveralToolCalls: outcomeBadAnswer,
		fakellm.FaultNullBody:         outcomeBadAnswer,
		fakellm.FaultOversized:        outcomeBadAnswer,
		fakellm.FaultGzipBomb:         outcomeBadAnswer,
		fakellm.FaultSlowDrip:         outcomeTimeout,
	}
	for _, api := range apis {
		for _, fault := range fakellm.Faults {
			t.Run(api+"/"+string(fault), func(t *testing.T) {
				outcome, ok := want[fault]
				if !ok {
					t.Fatalf("no expected outcome for fault %q: add it to the table", fault)
				}
				// On the fake clock of a bubble, a loaded machine cannot turn
				// a fault into a timeout, nor does a timeout take real time.
				synctest.Test(t, func(t *testing.T) {
					fake, hc := startMemFake(t, fakellm.Always(fakellm.Reply{Fault: fault, RetryAfter: -1}))
					cfg := apiConfig(api, fake.URL())
					cfg.Timeout = 500 * time.Millisecond
					m, _ := newTestMetrics(t)
					c := newMemClassifier(t, cfg, hc, WithMetrics(m))
					if _, err := c.Classify(t.Context(), input("Bash", "make deploy", "")); err == nil {
						t.Fatal("a fault gave a verdict")
					}
					if got := requests(m, "primary", outcome); got != 1 {
						t.Errorf("%s = %v, want 1", outcome, got)
					}
					if got := testutil.CollectAndCount(m.requests); got != 1 {
						t.Errorf("%d requests series, want only primary/%s", got, outcome)
					}
					if got := testutil.ToFloat64(m.inflight.WithLabelValues("primary")); got != 0 {
						t.Errorf("inflight = %v after the call, want 0", got)
					}
				})
			})
		}
	}
}

func TestMetricsInflightAndPoolOutcomes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		var once sync.Once
		open := func() { once.Do(func() { close(gate) }) }
		fake, hc := startMemFake(t, func(r *fakellm.Request) fakellm.Reply {
			<-gate
			return fakellm.Reply{}
		})
		t.Cleanup(open) // before the fake's cleanup, which waits for the handler
		cfg := testConfig(fake.URL())
		cfg.Backends[0].MaxConcurrent = 1
		cfg.QueueTimeout = 100 * time.Millisecond
		m, reg := newTestMetrics(t)
		c := newMemClassifier(t, cfg, hc, WithMetrics(m))

		held := make(chan error, 1)
		go func() {
			_, err := c.Classify(context.Background(), input("Bash", "held", ""))
			held <- err
		}()
		synctest.Wait() // the held call waits at the backend
		inflight := m.inflight.WithLabelValues("primary")
		if got := testutil.ToFloat64(inflight); got != 1 {
			t.Fatalf("inflight = %v while a call waits at the backend, want 1", got)
		}

		// The only slot is taken: a second classification waits out the queue
		// time and is counted as saturated, with no backend.
		if _, err := c.Classify(t.Context(), input("Bash", "second", "")); err == nil {
			t.Fatal("saturated pool gave a verdict")
		}
		if got := requests(m, "", outcomeSaturated); got != 1 {
			t.Errorf("saturated = %v, want 1", got)
		}
		open()
		if err := <-held; err != nil {
			t.Fatal(err)
		}
		if got := testutil.ToFloat64(inflight); got != 0 {
			t.Errorf("inflight = %v after the call, want 0", got)
		}
		if got := requests(m, "primary", outcomeAllow); got != 1 {
			t.Errorf("allow = %v, want 1", got)
		}
		if got := histogramCount(t, reg, "toolgate_classifier_queue_wait_seconds", nil); got != 2 {
			t.Errorf("queue wait observations = %d, want 2", got)
		}
	})
}

func TestMetricsBreakerOpen(t *testing.T) {
	// A retry of a 5xx waits 200ms: on the fake clock of a bubble.
	synctest.Test(t, func(t *testing.T) {
		fake, hc := startMemFake(t, fakellm.Always(fakellm.Reply{Fault: fakellm.FaultServerError, RetryAfter: -1}))
		cfg := testConfig(fake.URL())
		cfg.Breaker = BreakerConfig{Failures: 1, Cooldown: time.Hour}
		m, _ := newTestMetrics(t)
		c := newMemClassifier(t, cfg, hc, WithMetrics(m))
		for _, cmd := range []string{"one", "two"} {
			if _, err := c.Classify(t.Context(), input("Bash", cmd, "")); err == nil {
				t.Fatal("a failing backend gave a verdict")
			}
		}
		if got := requests(m, "primary", outcomeServerError); got != 1 {
			t.Errorf("server_error = %v, want 1 (the call that opened the breaker)", got)
		}
		if got := requests(m, "", outcomeBreakerOpen); got != 1 {
			t.Errorf("breaker_open = %v, want 1", got)
		}
	})
}

// A hot reload builds a new classifier: the metrics are made once and
// shared, since a registry refuses the same metric twice.
func TestMetricsSharedAcrossClassifiers(t *testing.T) {
	fake := fakellm.Start(t, nil)
	m, reg := newTestMetrics(t)
	if _, err := NewMetrics(reg); err == nil {
		t.Fatal("registering the classifier metrics twice on one registry succeeded")
	}
	for _, cmd := range []string{"first", "second"} {
		c := newMetricsClassifier(t, testConfig(fake.URL()), m)
		if _, err := c.Classify(t.Context(), input("Bash", cmd, "")); err != nil {
			t.Fatal(err)
		}
	}
	if got := requests(m, "primary", outcomeAllow); got != 2 {
		t.Errorf("allow = %v, want 2 across both classifiers", got)
	}
}

// Without metrics (tests, eval) the classifier records nothing and works.
func TestNoMetrics(t *testing.T) {
	fake := fakellm.Start(t, nil)
	c := newMetricsClassifier(t, testConfig(fake.URL()), nil)
	if _, err := c.Classify(t.Context(), input("Bash", "x", "")); err != nil {
		t.Fatal(err)
	}
}

// The tokens each backend reported are counted by direction, for what a
// day of classification costs. Anthropic's cache writes and reads are
// input tokens too.
func TestMetricsTokens(t *testing.T) {
	for _, tc := range []struct {
		api     string
		reply   fakellm.Reply
		in, out float64 // per upstream call
	}{
		{APIChat, fakellm.Reply{InputTokens: 1000, OutputTokens: 20}, 1000, 20},
		{APIResponses, fakellm.Reply{InputTokens: 1000, OutputTokens: 20}, 1000, 20},
		{APIAnthropic, fakellm.Reply{InputTokens: 1000, OutputTokens: 20}, 1000, 20},
		{APIAnthropic, fakellm.Reply{InputTokens: 100, CacheCreationTokens: 900, CacheReadTokens: 50, OutputTokens: 20}, 1050, 20},
	} {
		t.Run(tc.api, func(t *testing.T) {
			fake := fakellm.Start(t, fakellm.Always(tc.reply))
			m, _ := newTestMetrics(t)
			c := newMetricsClassifier(t, apiConfig(tc.api, fake.URL()), m)
			for _, cmd := range []string{"go build ./...", "go test ./...", "go build ./..."} {
				v, err := c.Classify(t.Context(), input("Bash", cmd, ""))
				if err != nil {
					t.Fatal(err)
				}
				if d := v.Details; !v.Cached && (float64(d.InputTokens) != tc.in || float64(d.OutputTokens) != tc.out) {
					t.Errorf("details: %d in, %d out; want %v, %v", d.InputTokens, d.OutputTokens, tc.in, tc.out)
				}
			}
			// Two calls reached the backend; the repeat was a cache hit.
			for dir, want := range map[string]float64{"input": 2 * tc.in, "output": 2 * tc.out} {
				if got := testutil.ToFloat64(m.tokens.WithLabelValues("primary", dir)); got != want {
					t.Errorf("%s tokens = %v, want %v", dir, got, want)
				}
			}
		})
	}
}
