package resilience

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolgate/toolgate/bench/workload"
	"github.com/toolgate/toolgate/classifier"
	"github.com/toolgate/toolgate/fakellm"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// The phases the model goes through in TestBackendFaults.
const (
	healthy int32 = iota
	halfFailing
	hanging
	recovered
)

var phaseNames = []string{"healthy", "half failing", "hanging", "recovered"}

// TestBackendFaults keeps callers busy while the model fails half its
// requests, then hangs, then recovers: while it is broken no call is
// allowed (they fail closed), its breaker opens, and once it recovers the
// breaker closes and the model decides again, with no restart.
func TestBackendFaults(t *testing.T) {
	var phase atomic.Int32
	var served atomic.Int64
	f := startFake(t, func(*fakellm.Request) fakellm.Reply {
		switch phase.Load() {
		case halfFailing:
			if served.Add(1)%2 == 0 {
				// A Retry-After beyond the deadline: not retried, so the
				// call fails closed instead of being rescued.
				return fakellm.Reply{Fault: fakellm.FaultServerError, RetryAfter: 10 * time.Second}
			}
		case hanging:
			return fakellm.Reply{Fault: fakellm.FaultHang}
		}
		return fakellm.Reply{Reason: "fine"}
	}, 20*time.Millisecond)
	st, client := stack(t, f, func(c *classifier.Config) {
		c.Backends[0].MaxConcurrent = 4
		c.Timeout = time.Second // each attempt: half of it
		c.QueueTimeout = time.Second
		c.Breaker = classifier.BreakerConfig{Failures: 3, Cooldown: 300 * time.Millisecond}
	})
	dir := project(t)
	breaker := func() string { return st.Classifier.Pool().States()[0].Breaker }

	type outcome struct {
		from, to int32 // phases when the call was sent and answered
		resp     *pb.CheckResponse
		err      error
	}
	var (
		mu       sync.Mutex
		outcomes []outcome
		next     atomic.Int64
	)
	ctx, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			for ctx.Err() == nil {
				from := phase.Load()
				cctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				resp, err := client.Check(cctx, workload.Classified(dir, int(next.Add(1))).Req)
				cancel()
				mu.Lock()
				outcomes = append(outcomes, outcome{from, phase.Load(), resp, err})
				mu.Unlock()
			}
		})
	}
	// count counts the answers to calls sent and answered in phase p that
	// satisfy ok.
	count := func(p int32, ok func(*pb.CheckResponse) bool) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, o := range outcomes {
			if o.from == p && o.to == p && o.err == nil && ok(o.resp) {
				n++
			}
		}
		return n
	}
	anyAnswer := func(*pb.CheckResponse) bool { return true }
	byModel := func(r *pb.CheckResponse) bool {
		return r.GetDecision() == pb.Decision_DECISION_ALLOW && r.GetSource() == pb.DecisionSource_DECISION_SOURCE_CLASSIFIER
	}
	closed := func(r *pb.CheckResponse) bool {
		return r.GetDecision() == pb.Decision_DECISION_DENY && r.GetSource() == pb.DecisionSource_DECISION_SOURCE_CLASSIFIER_UNAVAILABLE
	}
	// waitFor polls until cond holds. The limit is far beyond what the
	// phases need: it only turns a hang into a failure.
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				stop()
				wg.Wait()
				t.Fatalf("gave up waiting for %s (phase %s, breaker %s)", what, phaseNames[phase.Load()], breaker())
			}
			// Not synctest: the server is another process, reached over
			// real sockets, so its progress can only be polled for.
			time.Sleep(10 * time.Millisecond)
		}
	}

	waitFor("answers from the healthy model", func() bool { return count(healthy, byModel) >= scale(10) })
	phase.Store(halfFailing)
	waitFor("both answers and closed failures while half the calls fail", func() bool {
		return count(halfFailing, byModel) >= scale(5) && count(halfFailing, closed) >= scale(5)
	})
	phase.Store(hanging)
	sawOpen := false
	waitFor("the breaker to open while the model hangs", func() bool {
		sawOpen = sawOpen || breaker() == "open"
		return sawOpen && count(hanging, anyAnswer) >= scale(5)
	})
	phase.Store(recovered)
	waitFor("the breaker to close and the model to decide again", func() bool {
		return breaker() == "closed" && count(recovered, byModel) >= scale(10)
	})
	stop()
	wg.Wait()

	for _, o := range outcomes {
		if o.err != nil {
			t.Errorf("a call sent while the model was %s got an error instead of a decision: %v", phaseNames[o.from], o.err)
			continue
		}
		if !byModel(o.resp) && !closed(o.resp) {
			t.Errorf("a call sent while the model was %s: %v by %v (%s); want the model's answer or a closed failure",
				phaseNames[o.from], o.resp.GetDecision(), o.resp.GetSource(), o.resp.GetReason())
		}
		if o.from == hanging && o.to == hanging && !closed(o.resp) {
			t.Errorf("the model hangs, yet a call was %v by %v", o.resp.GetDecision(), o.resp.GetSource())
		}
	}
	t.Logf("%d calls; in the hanging phase %d failed closed; breaker now %s", len(outcomes), count(hanging, closed), breaker())
}
