package resilience

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/bench/workload"
	"github.com/toolgate/toolgate/classifier"
	"github.com/toolgate/toolgate/fakellm"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// TestOverload drives the classifier path at twenty times the pool's
// capacity: every call must be answered, either by the model after
// waiting its turn or failed closed once its queue time has passed; the
// model never sees more calls at once than the pool allows; and memory
// comes back down afterwards (goroutines are checked by TestMain).
func TestOverload(t *testing.T) {
	const pool, callers = 2, 40
	f := startFake(t, fakellm.Always(fakellm.Reply{Reason: "fine"}), 100*time.Millisecond)
	_, client := stack(t, f, func(c *classifier.Config) {
		c.Backends[0].MaxConcurrent = pool
		c.QueueTimeout = 250 * time.Millisecond
		c.Timeout = 3 * time.Second
	})
	dir := project(t)

	heap := func() uint64 {
		runtime.GC()
		debug.FreeOSMemory()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapInuse
	}
	before := heap()

	var classified, failedClosed int
	n := 0
	for wave := range scale(3) {
		reqs := make([]*pb.CheckRequest, callers)
		for i := range reqs {
			reqs[i] = workload.Classified(dir, n).Req
			n++
		}
		for i, a := range callAll(t.Context(), client, reqs) {
			if a.err != nil {
				t.Fatalf("wave %d call %d: an overloaded server must answer, not fail: %v", wave, i, a.err)
			}
			switch r := a.resp; {
			case r.GetDecision() == pb.Decision_DECISION_ALLOW && r.GetSource() == pb.DecisionSource_DECISION_SOURCE_CLASSIFIER:
				classified++
			case r.GetDecision() == pb.Decision_DECISION_DENY && r.GetSource() == pb.DecisionSource_DECISION_SOURCE_CLASSIFIER_UNAVAILABLE:
				if !strings.Contains(r.GetReason(), classifier.ErrSaturated.Error()) {
					t.Errorf("failed closed for another reason than a full pool: %s", r.GetReason())
				}
				failedClosed++
			default:
				t.Errorf("wave %d call %d: %v by %v (%s); want the model's answer or a closed failure", wave, i, r.GetDecision(), r.GetSource(), r.GetReason())
			}
		}
	}
	t.Logf("%d calls: %d classified after queueing, %d failed closed after the queue time", n, classified, failedClosed)
	// The first calls of each wave find free slots; with 40 callers on 2
	// slots of 100 ms and a 250 ms queue, most cannot be served in time.
	if classified < pool || failedClosed == 0 {
		t.Errorf("want both queued answers and closed failures under 20x overload, got %d and %d", classified, failedClosed)
	}
	if m := f.maxActive(); m > pool {
		t.Errorf("the model saw %d calls at once; the pool allows %d", m, pool)
	}
	// Queued calls hold nothing once answered: the heap returns to about
	// where it was (the fake model keeps a copy of every request it got,
	// a few KB each).
	if after := heap(); after > before+32<<20 {
		t.Errorf("heap in use grew from %d MB to %d MB over %d overloaded calls", before>>20, after>>20, n)
	}
	// And the service is still there for the next call.
	resp, err := client.Check(t.Context(), workload.Classified(dir, n+1).Req)
	if err != nil || resp.GetSource() != pb.DecisionSource_DECISION_SOURCE_CLASSIFIER {
		t.Fatalf("after the overload: %v by %v, %v", resp.GetDecision(), resp.GetSource(), err)
	}
}
