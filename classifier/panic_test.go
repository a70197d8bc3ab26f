package classifier

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/fakellm"
)

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// jsonResponse is a 200 answer to r with body.
func jsonResponse(r *http.Request, body io.ReadCloser) *http.Response {
	return &http.Response{
		StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/json"}}, Body: body, ContentLength: -1, Request: r,
	}
}

// newObservedClassifier is a classifier whose logs are kept, with metrics
// and an HTTP client over rt.
func newObservedClassifier(t *testing.T, cfg Config, rt http.RoundTripper) (*Classifier, *Metrics, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zapcore.InfoLevel)
	m, _ := newTestMetrics(t)
	opts := []Option{WithMetrics(m)}
	if rt != nil {
		opts = append(opts, WithHTTPClient(&http.Client{Transport: rt}))
	}
	c, err := New(cfg, map[string]Rules{"default": testRules}, zap.New(core), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c, m, logs
}

// checkPanicLogged checks one error log of a recovered panic, with where
// and a stack that reaches the panic's origin.
func checkPanicLogged(t *testing.T, logs *observer.ObservedLogs, where, origin string) {
	t.Helper()
	got := logs.FilterMessageSnippet("panic recovered").AllUntimed()
	if len(got) != 1 {
		t.Fatalf("%d panic logs, want 1: %v", len(got), logs.AllUntimed())
	}
	m := got[0].ContextMap()
	if got[0].Level != zapcore.ErrorLevel || m["where"] != where || !strings.Contains(m["stack"].(string), origin) {
		t.Errorf("panic log %v at %s: want where %q and a stack through %s", m, got[0].Level, where, origin)
	}
}

// TestPanicInBackendCallFailsClosed: a panic in a backend call (here in
// the HTTP client) fails that check closed, without failing over; it is
// logged, counted once under the backend and against its breaker, and the
// classifier keeps answering.
func TestPanicInBackendCallFailsClosed(t *testing.T) {
	primary := fakellm.Start(t, nil)
	secondary := fakellm.Start(t, nil)
	pu, _ := url.Parse(primary.URL())
	var panicking atomic.Bool
	panicking.Store(true)
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.URL.Host == pu.Host && panicking.Load() {
			panic("transport bug")
		}
		return http.DefaultTransport.RoundTrip(r)
	})
	cfg := testConfig(primary.URL(), secondary.URL())
	cfg.Breaker.Failures = 2
	c, m, logs := newObservedClassifier(t, cfg, rt)
	eng, err := engine.New(engine.Config{Classifier: c})
	if err != nil {
		t.Fatal(err)
	}

	res, err := eng.Check(t.Context(), &engine.Request{Tool: engine.ToolCall{Name: "Bash", Input: map[string]any{"command": "make deploy"}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Decision != engine.Deny || res.Source != engine.SourceClassifierUnavailable || !strings.Contains(res.Reason, "internal error in the classifier (backend primary)") {
		t.Fatalf("got %s/%s %q, want deny/classifier_unavailable for an internal error", res.Decision, res.Source, res.Reason)
	}
	if n := secondary.Count(); n != 0 {
		t.Errorf("the secondary was asked %d times: a panic must not fail over", n)
	}
	checkPanicLogged(t, logs, "backend primary", "TestPanicInBackendCallFailsClosed")
	if got := requests(m, "primary", outcomeError); got != 1 {
		t.Errorf("primary/error = %v, want 1", got)
	}
	if got := requests(m, "", outcomeError); got != 0 {
		t.Errorf("/error = %v, want 0: the panic is counted once, under its backend", got)
	}
	if s := c.Pool().States()[0]; s.InFlight != 0 || s.Breaker != "closed" {
		t.Errorf("primary after one panic: %+v", s)
	}

	// A second panic opens the primary's breaker (failures: 2), so the
	// next call goes to the secondary.
	if _, err := c.Classify(t.Context(), input("Bash", "make deploy 2", "")); !errors.Is(err, errInternal) {
		t.Fatalf("second panic: %v", err)
	}
	if s := c.Pool().States()[0]; s.Breaker != "open" {
		t.Errorf("primary after two panics: %+v, want its breaker open", s)
	}
	if v, err := c.Classify(t.Context(), input("Bash", "go build ./...", "")); err != nil || v.Decision != engine.Allow || v.Details.Backend != "secondary" {
		t.Fatalf("after the panics: %+v %v, want an allow from the secondary", v, err)
	}
}

// TestPanicReachesEveryCoalescedWaiter: a backend call shared by several
// identical checks panics on the coalescing goroutine; every waiter gets
// the error and none hangs (synctest would report a goroutine left
// blocked).
func TestPanicReachesEveryCoalescedWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var calls atomic.Int32
		rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			calls.Add(1)
			<-release
			var answer map[string]any
			_ = answer["choices"].([]any) // a nil-interface assertion: panics
			return nil, errors.New("unreachable")
		})
		c, m, logs := newObservedClassifier(t, testConfig("http://classifier.test/v1"), rt)
		const waiters = 5
		errs := make([]error, waiters)
		var wg sync.WaitGroup
		for i := range waiters {
			wg.Go(func() { _, errs[i] = c.Classify(t.Context(), input("Bash", "make deploy", "")) })
		}
		synctest.Wait() // all waiting on the one call, blocked in the transport
		if n := calls.Load(); n != 1 {
			t.Fatalf("%d upstream calls, want 1 shared by %d waiters", n, waiters)
		}
		close(release)
		wg.Wait()
		for i, err := range errs {
			var ce *engine.ClassifierError
			if !errors.As(err, &ce) || !errors.Is(err, errInternal) {
				t.Errorf("waiter %d: %v, want a ClassifierError for an internal error", i, err)
			}
		}
		checkPanicLogged(t, logs, "backend primary", "TestPanicReachesEveryCoalescedWaiter")
		if got := requests(m, "primary", outcomeError); got != 1 {
			t.Errorf("primary/error = %v, want 1", got)
		}
		if s := c.Pool().States()[0]; s.InFlight != 0 {
			t.Errorf("slot not released: %+v", s)
		}
	})
}

// TestPanicInCoalescingOutsideBackendCall: a panic on the coalescing
// goroutine outside any backend call (here in the pool, while waiting for
// a slot) reaches every waiter as an error, is counted with no backend,
// and leaves the pool serving the call that held the slot.
func TestPanicInCoalescingOutsideBackendCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			<-release
			return jsonResponse(r, io.NopCloser(strings.NewReader(chatAnswer("tool_calls", args(false))))), nil
		})
		cfg := testConfig("http://classifier.test/v1")
		cfg.Backends[0].MaxConcurrent = 1
		c, m, logs := newObservedClassifier(t, cfg, rt)

		var held error
		var wg sync.WaitGroup
		wg.Go(func() { _, held = c.Classify(t.Context(), input("Bash", "go build ./...", "")) })
		synctest.Wait() // it holds the only slot
		boom := make(chan struct{})
		var waits atomic.Int32
		c.pool.onWait = func() {
			waits.Add(1)
			<-boom
			panic("pool bug")
		}

		const waiters = 3
		errs := make([]error, waiters)
		var waiting sync.WaitGroup
		for i := range waiters {
			waiting.Go(func() { _, errs[i] = c.Classify(t.Context(), input("Bash", "make deploy", "")) })
		}
		synctest.Wait() // all joined the one call, which waits for a slot
		if n := waits.Load(); n != 1 {
			t.Fatalf("%d calls waiting for a slot, want 1 shared by %d waiters", n, waiters)
		}
		close(boom)
		waiting.Wait()
		for i, err := range errs {
			if !errors.Is(err, errInternal) {
				t.Errorf("waiter %d: %v, want an internal error", i, err)
			}
		}
		checkPanicLogged(t, logs, "classification", "TestPanicInCoalescingOutsideBackendCall")
		if got := requests(m, "", outcomeError); got != 1 {
			t.Errorf("/error = %v, want 1", got)
		}

		c.pool.onWait = nil
		close(release)
		wg.Wait()
		if held != nil {
			t.Errorf("the call holding the slot: %v", held)
		}
		if v, err := c.Classify(t.Context(), input("Bash", "make deploy", "")); err != nil || v.Decision != engine.Allow {
			t.Errorf("after the panic: %+v %v", v, err)
		}
	})
}

// TestPanicInClassifyFailsClosed: a panic in Classify itself, outside the
// coalesced call, is recovered the same way; a missing request is an
// error, not a panic.
func TestPanicInClassifyFailsClosed(t *testing.T) {
	fake := fakellm.Start(t, nil)
	c, m, logs := newObservedClassifier(t, testConfig(fake.URL()), nil)
	for _, in := range []*engine.ClassifyInput{nil, {}} {
		if _, err := c.Classify(t.Context(), in); !errors.Is(err, errNoRequest) {
			t.Errorf("%+v: %v, want errNoRequest", in, err)
		}
	}
	c.sessions = nil // corrupt state: the session lookup panics
	_, err := c.Classify(t.Context(), input("Bash", "make deploy", "session-1"))
	var ce *engine.ClassifierError
	if !errors.As(err, &ce) || !errors.Is(err, errInternal) || ce.Reason == "" {
		t.Fatalf("got %v, want a ClassifierError for an internal error", err)
	}
	checkPanicLogged(t, logs, "classify", "TestPanicInClassifyFailsClosed")
	if got := requests(m, "", outcomeError); got != 1 {
		t.Errorf("/error = %v, want 1", got)
	}
}

// dripBody hands out data a byte every interval (never, if 0) and ignores
// every context: only Close ends a read early.
type dripBody struct {
	data     []byte
	interval time.Duration
	closed   chan struct{}
	once     sync.Once
}

func newDripBody(data string, interval time.Duration) *dripBody {
	return &dripBody{data: []byte(data), interval: interval, closed: make(chan struct{})}
}

func (d *dripBody) Read(p []byte) (int, error) {
	var tick <-chan time.Time // nil: a stalled body
	if d.interval > 0 {
		tick = time.After(d.interval)
	}
	select {
	case <-d.closed:
		return 0, errors.New("read on a closed body")
	case <-tick:
	}
	if len(d.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:1], d.data)
	d.data = d.data[n:]
	return n, nil
}

func (d *dripBody) Close() error {
	d.once.Do(func() { close(d.closed) })
	return nil
}

func (d *dripBody) isClosed() bool {
	select {
	case <-d.closed:
		return true
	default:
		return false
	}
}

// TestSlowDripCutAtAttemptDeadline: an answer that trickles in (an allow,
// had it been read whole, which would take about a minute) or stalls after
// the headers is cut at the attempt's deadline, even through an HTTP
// client whose bodies ignore the request's context, and fails closed as a
// timeout.
func TestSlowDripCutAtAttemptDeadline(t *testing.T) {
	t.Run("dripping", func(t *testing.T) { testSlowDrip(t, 100*time.Millisecond) })
	t.Run("stalled", func(t *testing.T) { testSlowDrip(t, 0) })
}

func testSlowDrip(t *testing.T, interval time.Duration) {
	synctest.Test(t, func(t *testing.T) {
		var bodies []*dripBody
		rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			b := newDripBody(chatAnswer("tool_calls", args(false)), interval)
			bodies = append(bodies, b)
			return jsonResponse(r, b), nil
		})
		cfg := testConfig("http://classifier.test/v1")
		cfg.Timeout = 1500 * time.Millisecond // no room for a retry
		cfg.Backends[0].Timeout = time.Second
		c, m, _ := newObservedClassifier(t, cfg, rt)
		start := time.Now()
		v, err := c.Classify(t.Context(), input("Bash", "make deploy", ""))
		elapsed := time.Since(start)
		if err == nil || !strings.Contains(err.Error(), "no answer within 1s") {
			t.Fatalf("got %+v, %v; want a timeout of the attempt", v, err)
		}
		if elapsed < time.Second || elapsed > 1100*time.Millisecond {
			t.Errorf("took %s, want the attempt's 1s", elapsed)
		}
		if len(bodies) != 1 || !bodies[0].isClosed() {
			t.Errorf("%d bodies; the body must be closed", len(bodies))
		}
		if got := requests(m, "primary", outcomeTimeout); got != 1 {
			t.Errorf("primary/timeout = %v, want 1", got)
		}
	})
}
