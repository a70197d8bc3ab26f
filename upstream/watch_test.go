package upstream

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/grpc"

	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// scriptedCentre is a centre's WatchPolicies as a script: each stream
// gets the messages next(i) returns for its i-th receive until it
// returns an error. It runs inside a synctest bubble: no network.
type scriptedCentre struct {
	pb.UpstreamServiceClient
	streams atomic.Int64
	recvs   atomic.Int64
	next    func(i int) (*pb.WatchPoliciesResponse, error)
}

func (c *scriptedCentre) WatchPolicies(ctx context.Context, _ *pb.WatchPoliciesRequest, _ ...grpc.CallOption) (grpc.ServerStreamingClient[pb.WatchPoliciesResponse], error) {
	c.streams.Add(1)
	return &scriptedStream{ctx: ctx, c: c}, nil
}

type scriptedStream struct {
	grpc.ClientStream
	ctx context.Context
	c   *scriptedCentre
	i   int
}

func (s *scriptedStream) Recv() (*pb.WatchPoliciesResponse, error) {
	if err := s.ctx.Err(); err != nil {
		return nil, err
	}
	s.c.recvs.Add(1)
	m, err := s.c.next(s.i)
	s.i++
	return m, err
}

func observed() (*zap.Logger, *observer.ObservedLogs) {
	core, logs := observer.New(zapcore.DebugLevel)
	return zap.New(core), logs
}

func newTestMetrics(t *testing.T) *Metrics {
	t.Helper()
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func counterValue(t *testing.T, c prometheus.Collector) float64 {
	t.Helper()
	return testutil.ToFloat64(c)
}

// runFor runs w in a synctest bubble for d of its time.
func runFor(t *testing.T, w *Watcher, d time.Duration) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), d)
		defer cancel()
		w.Run(ctx)
	})
}

// TestWatchFloodingCentre: a centre that sends message after message
// with no policy set (broken or hostile) gets its stream ended at the
// first, and is reconnected to with backoff: a minute of it is a handful
// of streams and log lines, not one line per message.
func TestWatchFloodingCentre(t *testing.T) {
	c := &scriptedCentre{next: func(i int) (*pb.WatchPoliciesResponse, error) {
		if i >= 10000 {
			return nil, errors.New("stream reset")
		}
		return &pb.WatchPoliciesResponse{}, nil
	}}
	log, logs := observed()
	m := newTestMetrics(t)
	w := &Watcher{client: c, addr: "centre:7000", apply: func([]byte, string, string) error { return nil }, log: log, metrics: m, ended: logLimit{every: endedLogEvery}}
	runFor(t, w, time.Minute)
	if n := c.streams.Load(); n > 20 {
		t.Errorf("%d streams in a minute, want backoff to at most %s", n, maxBackoff)
	}
	if n := c.recvs.Load(); n > 20 {
		t.Errorf("%d messages read in a minute: a stream that sent a refused set was read on", n)
	}
	if n := logs.Len(); n > 4 {
		t.Errorf("%d log lines in a minute:\n%v", n, logs.All())
	}
	if got := counterValue(t, m.policies.WithLabelValues(policyRefused)); got != float64(c.streams.Load()) {
		t.Errorf("refusals counted %v, want one per stream (%d)", got, c.streams.Load())
	}
}

// TestWatchRefusedSetLoggedOnce: a centre that keeps sending the same set
// this server refuses (here, one that does not compile) has it counted
// each time and logged once, and is reconnected to with backoff; a stream
// that delivers and drops at once does not reset the backoff.
func TestWatchRefusedSetLoggedOnce(t *testing.T) {
	doc := []byte("policies:\n  default: {}\n")
	c := &scriptedCentre{next: func(i int) (*pb.WatchPoliciesResponse, error) {
		if i > 0 {
			return nil, errors.New("stream closed")
		}
		return &pb.WatchPoliciesResponse{PolicySet: &pb.PolicySet{Version: Version(doc), Document: doc}}, nil
	}}
	log, logs := observed()
	w := &Watcher{client: c, addr: "centre:7000", apply: func([]byte, string, string) error { return errors.New("does not compile") }, log: log, ended: logLimit{every: endedLogEvery}}
	runFor(t, w, time.Minute)
	if n := c.streams.Load(); n > 20 {
		t.Errorf("%d streams in a minute", n)
	}
	if n := logs.FilterMessage("policy set from the upstream refused; the one in force stays").Len(); n != 1 {
		t.Errorf("the refused version was logged %d times", n)
	}

	// The same centre with a set that applies: it is delivered, then the
	// stream drops at once, again and again. Not faster than the backoff.
	c.streams.Store(0)
	w = &Watcher{client: c, addr: "centre:7000", apply: func([]byte, string, string) error { return nil }, log: zap.NewNop(), ended: logLimit{every: endedLogEvery}}
	runFor(t, w, time.Minute)
	if n := c.streams.Load(); n > 20 {
		t.Errorf("a centre that drops each stream at once was reconnected to %d times in a minute", n)
	}
}

// TestWatchStableStreamResetsBackoff: after a stream that stayed up for
// stableAfter, the next reconnection is at the minimum backoff again.
func TestWatchStableStreamResetsBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var starts []time.Time
		started := func() []time.Time { mu.Lock(); defer mu.Unlock(); return starts }
		c := &scriptedCentre{}
		c.next = func(i int) (*pb.WatchPoliciesResponse, error) {
			mu.Lock()
			starts = append(starts, time.Now())
			n := len(starts)
			mu.Unlock()
			// The third stream stays up; the others fail at once.
			if n == 3 {
				time.Sleep(stableAfter)
			}
			return nil, errors.New("stream closed")
		}
		w := &Watcher{client: c, addr: "centre:7000", log: zap.NewNop(), ended: logLimit{every: endedLogEvery}}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { w.Run(ctx); close(done) }()
		for len(started()) < 4 {
			time.Sleep(minBackoff)
		}
		cancel()
		<-done
		starts = started()
		if gap := starts[3].Sub(starts[2]) - stableAfter; gap != minBackoff {
			t.Errorf("after a stable stream the watch waited %s, want %s", gap, minBackoff)
		}
		if gap := starts[2].Sub(starts[1]); gap != 2*minBackoff {
			t.Errorf("after two failed streams the watch waited %s, want %s", gap, 2*minBackoff)
		}
	})
}
