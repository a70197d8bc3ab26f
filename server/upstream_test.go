package server

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// TestUpstreamClassify: the centre classifies a forwarded check with its
// classifier, given what the local stages found and no session (the
// local server counts the session's blocks); a check that a Check would
// refuse is refused, and so are over-long notes; the wire scan bounds the
// check's nesting as it does a Check's.
func TestUpstreamClassify(t *testing.T) {
	fc := newFakeClassifier()
	env := newEnv(t, withClassifier(fc), withConfig(func(c *Config) { c.MaxValueDepth = 8 }))
	client := pb.NewUpstreamServiceClient(env.conn)
	check := checkReq(t, "r1", "mcp__test__danger", map[string]any{"x": "y"})
	check.SessionId = "s1"
	resp, err := client.Classify(t.Context(), &pb.ClassifyRequest{Check: check, ToolKind: "mcp", Notes: []string{"not on the safe list"}, PolicyVersion: "sha256:00"})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetDecision() != pb.Decision_DECISION_DENY || resp.GetSource() != pb.DecisionSource_DECISION_SOURCE_CLASSIFIER || resp.GetReason() != "fake says no" {
		t.Fatalf("answer %v", resp)
	}
	seen := fc.inputs()
	if len(seen) != 1 || seen[0].Request.SessionID != "" || seen[0].Notes[0] != "not on the safe list" || seen[0].Kind != "mcp" || seen[0].PolicyVersion != "sha256:00" {
		t.Fatalf("classifier saw %+v %+v", seen, seen[0].Request)
	}

	deep := map[string]any{"v": "x"}
	for range 20 {
		deep = map[string]any{"v": deep}
	}
	for name, req := range map[string]*pb.ClassifyRequest{
		"no check":       {},
		"relative cwd":   {Check: &pb.CheckRequest{Tool: &pb.ToolCall{Name: "Bash"}, WorkingDirectory: "rel"}},
		"long note":      {Check: checkReq(t, "r", "Bash", nil), Notes: []string{strings.Repeat("n", maxNoteBytes+1)}},
		"too many notes": {Check: checkReq(t, "r", "Bash", nil), Notes: make([]string, maxNotes+1)},
		"notes over the total": {Check: checkReq(t, "r", "Bash", nil), Notes: []string{
			strings.Repeat("n", maxNoteBytes), strings.Repeat("n", maxNoteBytes), strings.Repeat("n", maxNoteBytes), strings.Repeat("n", maxNoteBytes), "n"}},
		"unknown policy": {Check: checkReq(t, "r", "Bash", nil), Policy: "nope"},
		"too deep":       {Check: checkReq(t, "r", "Bash", deep)},
	} {
		if _, err := client.Classify(t.Context(), req); status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s: %v", name, err)
		}
	}
	if n := len(fc.inputs()); n != 1 {
		t.Errorf("refused requests reached the classifier (%d calls)", n)
	}
}

// TestWatchPoliciesLimit: past the server-wide limit of open policy
// watches, a new one is refused with RESOURCE_EXHAUSTED; one that ends
// frees its place.
func TestWatchPoliciesLimit(t *testing.T) {
	env := newEnv(t)
	env.srv.PublishPolicies("sha256:01", []byte("policies: {}"))
	u := env.srv.upstream
	for range cap(u.watchers) - 1 {
		u.watchers <- struct{}{}
	}
	client := pb.NewUpstreamServiceClient(env.conn)
	open := func(ctx context.Context) (grpc.ServerStreamingClient[pb.WatchPoliciesResponse], error) {
		ws, err := client.WatchPolicies(ctx, &pb.WatchPoliciesRequest{})
		if err != nil {
			return nil, err
		}
		_, err = ws.Recv()
		return ws, err
	}
	ctx, cancel := context.WithCancel(t.Context())
	if _, err := open(ctx); err != nil {
		t.Fatalf("the last place: %v", err)
	}
	if _, err := open(t.Context()); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("past the limit: %v, want ResourceExhausted", err)
	}
	cancel()
	// The cancelled watch leaves once its handler returns.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := open(t.Context())
		if err == nil {
			break
		}
		if status.Code(err) != codes.ResourceExhausted || time.Now().After(deadline) {
			t.Fatalf("after a watch ended: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// fakeWatchStream is a WatchPolicies stream inside a synctest bubble.
type fakeWatchStream struct {
	grpc.ServerStream
	ctx  context.Context
	mu   sync.Mutex
	sent []time.Time
}

func (f *fakeWatchStream) Context() context.Context { return f.ctx }
func (f *fakeWatchStream) Send(*pb.WatchPoliciesResponse) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, time.Now())
	return nil
}

// TestWatchPoliciesResends: a quiet watch is sent the set in force again
// every watchResendEvery, so that no proxy's idle timeout cuts it and the
// local server sees the centre confirm its set.
func TestWatchPoliciesResends(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		svc := NewService(DefaultConfig(), nil, zap.NewNop())
		u := &Upstream{svc: svc, watchers: make(chan struct{}, 1), resendEvery: watchResendEvery}
		u.feed.publish(&pb.PolicySet{Version: "sha256:01", Document: []byte("policies: {}")})
		ctx, cancel := context.WithTimeout(t.Context(), 5*watchResendEvery+time.Second)
		defer cancel()
		fs := &fakeWatchStream{ctx: ctx}
		_ = u.WatchPolicies(&pb.WatchPoliciesRequest{}, fs)
		if n := len(fs.sent); n != 6 {
			t.Errorf("sent %d times in %s, want once and 5 resends", n, 5*watchResendEvery+time.Second)
		}
	})
}
