package upstream

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// fakeCentre answers ShipRecords: it fails the first failures calls,
// refuses nothing, and keeps each id once.
type fakeCentre struct {
	mu       sync.Mutex
	failures int
	calls    int
	stored   map[string]int // id: times received
	maxBatch int
}

func (c *fakeCentre) Invoke(ctx context.Context, method string, args, reply any, _ ...grpc.CallOption) error {
	if method != pb.UpstreamService_ShipRecords_FullMethodName {
		return status.Error(codes.Unimplemented, method)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	if c.calls <= c.failures {
		return status.Error(codes.Unavailable, "centre down")
	}
	req := args.(*pb.ShipRecordsRequest)
	c.maxBatch = max(c.maxBatch, len(req.GetRecords()))
	n := 0
	for _, r := range req.GetRecords() {
		if c.stored[r.GetId()] == 0 {
			n++
		}
		c.stored[r.GetId()]++
	}
	proto.Merge(reply.(proto.Message), &pb.ShipRecordsResponse{Accepted: int32(n)})
	return nil
}

func (c *fakeCentre) NewStream(context.Context, *grpc.StreamDesc, string, ...grpc.CallOption) (grpc.ClientStream, error) {
	return nil, status.Error(codes.Unimplemented, "no streams")
}

func (c *fakeCentre) has(ids ...string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		if c.stored[id] == 0 {
			return false
		}
	}
	return true
}

// waitFor advances the fake clock until cond holds, failing after limit.
func waitFor(t *testing.T, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s", limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestShipperAtLeastOnce: records reach the centre in batches, through
// its failures (sent again after a backoff), and those not acknowledged
// when the server stops are sent by the next run from the spool.
func TestShipperAtLeastOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		down := &fakeCentre{failures: 1 << 30, stored: map[string]int{}}
		sh, err := NewShipper(down, ShipperOptions{Dir: dir, MaxBytes: 1 << 20, Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		var all []string
		for i := range 2500 {
			id := fmt.Sprintf("d%05d", i)
			all = append(all, id)
			sh.Record(&pb.DecisionRecord{Id: id, TimeUnixMicros: 1, Tool: "Bash", Decision: pb.Decision_DECISION_ALLOW})
		}
		// The centre is down for a while: batches are retried, with backoff.
		time.Sleep(10 * time.Second)
		synctest.Wait()
		down.mu.Lock()
		calls := down.calls
		down.mu.Unlock()
		if calls < 2 || calls > 20 {
			t.Errorf("%d calls to a centre down for 10 s, want a few retries with backoff", calls)
		}
		sh.Close(time.Second)

		// The next run sends them all, in batches within the limit.
		up := &fakeCentre{failures: 2, stored: map[string]int{}}
		sh, err = NewShipper(up, ShipperOptions{Dir: dir, MaxBytes: 1 << 20, Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer sh.Close(time.Second)
		sh.Record(&pb.DecisionRecord{Id: "after-restart", TimeUnixMicros: 1})
		waitFor(t, time.Minute, func() bool { return up.has(append(all, "after-restart")...) })
		if up.maxBatch > shipBatch {
			t.Errorf("a batch of %d records, over %d", up.maxBatch, shipBatch)
		}
		// Once acknowledged, nothing is sent again.
		synctest.Wait()
		up.mu.Lock()
		calls = up.calls
		up.mu.Unlock()
		time.Sleep(time.Minute)
		synctest.Wait()
		up.mu.Lock()
		defer up.mu.Unlock()
		if up.calls != calls {
			t.Errorf("%d more calls with nothing to send", up.calls-calls)
		}
	})
}

// BenchmarkShipperRecord is what a check pays to spool its record: the
// encoding and the wait for its write (the centre down: nothing sent).
func BenchmarkShipperRecord(b *testing.B) {
	sh, err := NewShipper(&fakeCentre{failures: 1 << 30, stored: map[string]int{}}, ShipperOptions{Dir: b.TempDir(), MaxBytes: 1 << 30, Timeout: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer sh.Close(time.Second)
	b.RunParallel(func(p *testing.PB) {
		// One per goroutine: Record sets its host.
		rec := &pb.DecisionRecord{Id: "01234567890123456789012345", TimeUnixMicros: 1, Project: "/home/dev/project", SessionId: "session-1", Tool: "Bash",
			Decision: pb.Decision_DECISION_ALLOW, Source: pb.DecisionSource_DECISION_SOURCE_COMMAND_ANALYSIS, Reason: "read-only command", PolicyVersion: "sha256:0123456789abcdef"}
		for p.Next() {
			sh.Record(rec)
		}
	})
}

// TestShipperBatches: records waiting in the spool go to the centre in
// one batch, not one call per record. They are written while the centre
// refuses everything, outside a bubble (a record's bounded wait for its
// write would run on the bubble's clock, which jumps while a write is in
// the kernel), then a shipper on the same spool finds the centre up.
func TestShipperBatches(t *testing.T) {
	dir := t.TempDir()
	const n = 50
	down := &fakeCentre{failures: 1 << 30, stored: map[string]int{}}
	sh, err := NewShipper(down, ShipperOptions{Dir: dir, MaxBytes: 1 << 20, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		sh.Record(&pb.DecisionRecord{Id: fmt.Sprint("b", i), TimeUnixMicros: 1})
	}
	sh.Close(time.Second)
	synctest.Test(t, func(t *testing.T) {
		up := &fakeCentre{stored: map[string]int{}}
		sh, err := NewShipper(up, ShipperOptions{Dir: dir, MaxBytes: 1 << 20, Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer sh.Close(time.Second)
		time.Sleep(shipDelay + time.Millisecond)
		synctest.Wait()
		up.mu.Lock()
		defer up.mu.Unlock()
		if up.calls != 1 || len(up.stored) != n {
			t.Errorf("%d calls stored %d records, want 1 call with all %d", up.calls, len(up.stored), n)
		}
	})
}
