package server

import (
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

func TestDecodeBudget(t *testing.T) {
	b := &decodeBudget{limit: 100, reserve: 25, smallCost: 10}
	steps := []struct {
		acquire, release int64
		ok               bool
	}{
		{acquire: 60, ok: true},
		{acquire: 20, ok: false}, // large: only 75 for large ones
		{acquire: 10, ok: true},  // small: the reserve
		{acquire: 10, ok: true},
		{acquire: 10, ok: true},
		{acquire: 10, ok: true},
		{acquire: 10, ok: false}, // 100 held: even small ones wait
		{release: 60},
		{acquire: 35, ok: true}, // 75
		{acquire: 11, ok: false},
		{acquire: 10, ok: true}, // small, from the reserve
		{acquire: 16, ok: false},
	}
	for i, s := range steps {
		if s.release > 0 {
			b.release(s.release)
			continue
		}
		if got := b.acquire(s.acquire); got != s.ok {
			t.Fatalf("step %d: acquire(%d) with %d held: %v, want %v", i, s.acquire, b.held.Load(), got, s.ok)
		}
	}
}

// TestDecodeBudgetConcurrent: however acquires and releases interleave,
// what is held never passes the limit and all of it comes back.
func TestDecodeBudgetConcurrent(t *testing.T) {
	b := newDecodeBudget(1 << 20)
	var wg sync.WaitGroup
	var mu sync.Mutex
	peak := int64(0)
	for g := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				cost := int64(1+(g*7919+i*104729)%400_000) + int64(g%2)*smallRequestCost
				if !b.acquire(cost) {
					continue
				}
				h := b.held.Load()
				mu.Lock()
				peak = max(peak, h)
				mu.Unlock()
				b.release(cost)
			}
		})
	}
	wg.Wait()
	if peak > b.limit {
		t.Errorf("held %d, over the limit %d", peak, b.limit)
	}
	if h := b.held.Load(); h != 0 {
		t.Errorf("%d held after every release", h)
	}
}

// budgetEnv is a server whose decode budget fits a few large checks.
func budgetEnv(t *testing.T, fc *fakeClassifier) *testEnv {
	return newEnv(t, withClassifier(fc), withConfig(func(c *Config) {
		c.MaxRecvMsgBytes = 1 << 20
		c.MaxMessageItems = 1000
		c.DecodeBudgetBytes = 8 << 20 // large requests: 6 MiB
	}))
}

// largeCheck goes to the classifier and costs over smallRequestCost: its
// transcript is ten entries of 60 KB.
func largeCheck(t *testing.T, id string) *pb.CheckRequest {
	req := checkReq(t, id, "mcp__x__y", nil)
	for range 10 {
		req.Transcript = append(req.Transcript, &pb.TranscriptEntry{Role: pb.Role_ROLE_USER, Text: strings.Repeat("t", 60_000)})
	}
	return req
}

// TestDecodeBudgetRefusesPastIt: large checks held by the classifier take
// the budget; the next large one is refused with RESOURCE_EXHAUSTED before
// it is decoded, an ordinary check still passes, and once the held ones
// finish the budget is all back.
func TestDecodeBudgetRefusesPastIt(t *testing.T) {
	fc := newFakeClassifier()
	env := budgetEnv(t, fc)
	var wg sync.WaitGroup
	var held []string
	for i := range 20 {
		id := "large-" + string(rune('a'+i))
		fc.hold(id)
		errc := make(chan error, 1)
		wg.Go(func() {
			_, err := env.client.Check(t.Context(), largeCheck(t, id))
			errc <- err
		})
		select {
		case <-fc.started:
			held = append(held, id)
			continue
		case err := <-errc:
			if status.Code(err) != codes.ResourceExhausted || !strings.Contains(status.Convert(err).Message(), "decode_budget_bytes") {
				t.Fatalf("%s: %v, want RESOURCE_EXHAUSTED for the budget", id, err)
			}
		}
		fc.release(id)
		break
	}
	if len(held) == 0 || len(held) == 20 {
		t.Fatalf("%d large checks held before one was refused", len(held))
	}
	if h := env.srv.budget.held.Load(); h > env.srv.budget.limit-env.srv.budget.reserve {
		t.Errorf("large checks hold %d, past %d", h, env.srv.budget.limit-env.srv.budget.reserve)
	}
	res, err := env.client.Check(t.Context(), checkReq(t, "small", "Read", map[string]any{"file_path": "/tmp/x"}))
	if err != nil || res.GetDecision() == pb.Decision_DECISION_UNSPECIFIED {
		t.Fatalf("an ordinary check during the flood: %v %v", res, err)
	}
	for _, id := range held {
		fc.release(id)
	}
	wg.Wait()
	if h := env.srv.budget.held.Load(); h != 0 {
		t.Errorf("%d bytes of budget held after every call returned", h)
	}
}

// TestDecodeBudgetStreams: a stream holds the budget of a check until it
// is answered, then none while it waits for its client, and none once it
// ends.
func TestDecodeBudgetStreams(t *testing.T) {
	fc := newFakeClassifier()
	env := budgetEnv(t, fc)
	s := openStream(t, env)
	fc.hold("one")
	sendCheck(t, s, largeCheck(t, "one"))
	<-fc.started
	if h := env.srv.budget.held.Load(); h <= smallRequestCost {
		t.Errorf("a large check waiting for the model holds %d bytes of budget", h)
	}
	fc.release("one")
	if m := recv(t, s); m.GetResponse() == nil {
		t.Fatalf("one: %v", m)
	}
	if h := env.srv.budget.held.Load(); h != 0 {
		t.Errorf("a stream waiting for its client holds %d bytes of budget", h)
	}
	sendCheck(t, s, largeCheck(t, "two")) // decided at once: the model is not held
	if m := recv(t, s); m.GetResponse() == nil {
		t.Fatalf("two: %v", m)
	}
	if h := env.srv.budget.held.Load(); h != 0 {
		t.Errorf("after a second check, the stream holds %d bytes of budget", h)
	}
	if err := s.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recv(); err == nil {
		t.Fatal("the stream did not end")
	}
	env.stop(t) // the handler has returned
	if h := env.srv.budget.held.Load(); h != 0 {
		t.Errorf("%d bytes of budget held after the stream ended", h)
	}
}

// TestPerMessageBounds: a request past max_message_items is refused with
// RESOURCE_EXHAUSTED and one nested past max_value_depth with
// INVALID_ARGUMENT, before decoding, on unary calls and streams; neither
// holds budget after.
func TestPerMessageBounds(t *testing.T) {
	env := newEnv(t)
	million := checkReq(t, "m", "Bash", nil)
	million.Tool.Input = &structpb.Struct{Fields: map[string]*structpb.Value{"a": listOf(1_000_000, emptyObject)}}
	for _, tc := range []struct {
		name string
		req  []byte
		code codes.Code
	}{
		{"a million empty objects", mustMarshal(t, million), codes.ResourceExhausted},
		{"lists nested 1,000 deep", checkBytes(nestedValue(1000)), codes.InvalidArgument},
	} {
		var out []byte
		err := env.conn.Invoke(t.Context(), pb.PermissionService_Check_FullMethodName, &tc.req, &out, grpc.ForceCodecV2(rawCodec{}))
		if status.Code(err) != tc.code {
			t.Errorf("%s, unary: %v, want %s", tc.name, err, tc.code)
		}
		stream, err := env.conn.NewStream(t.Context(), &pb.PermissionService_ServiceDesc.Streams[0], pb.PermissionService_CheckStream_FullMethodName, grpc.ForceCodecV2(rawCodec{}))
		if err != nil {
			t.Fatal(err)
		}
		msg := field(2, tc.req)
		if err := stream.SendMsg(&msg); err != nil {
			t.Fatal(err)
		}
		if err := stream.RecvMsg(&out); status.Code(err) != tc.code {
			t.Errorf("%s, stream: %v, want %s", tc.name, err, tc.code)
		}
	}
	env.stop(t)
	if h := env.srv.budget.held.Load(); h != 0 {
		t.Errorf("%d bytes of budget held after", h)
	}
}
