package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/toolgate/toolgate/engine"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// openStream opens a stream that cannot outlive a broken test for long.
func openStream(t *testing.T, env *testEnv) pb.PermissionService_CheckStreamClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	s, err := env.client.CheckStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func sendCheck(t *testing.T, s pb.PermissionService_CheckStreamClient, req *pb.CheckRequest) {
	t.Helper()
	if err := s.Send(&pb.CheckStreamRequest{Kind: &pb.CheckStreamRequest_Check{Check: req}}); err != nil {
		t.Fatalf("send: %v", err)
	}
}

func recv(t *testing.T, s pb.PermissionService_CheckStreamClient) *pb.CheckStreamResponse {
	t.Helper()
	m, err := s.Recv()
	if err != nil {
		t.Fatalf("recv: %v", err)
	}
	return m
}

// waitStarted waits until the classifier has started the call with id.
func waitStarted(t *testing.T, fc *fakeClassifier, id string) {
	t.Helper()
	select {
	case got := <-fc.started:
		if got != id {
			t.Fatalf("classifier started %q, want %q", got, id)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("classifier never started %q", id)
	}
}

func TestStreamOutOfOrder(t *testing.T) {
	fc := newFakeClassifier()
	fc.hold("slow")
	env := newEnv(t, withClassifier(fc))
	s := openStream(t, env)
	sendCheck(t, s, checkReq(t, "slow", "mcp__test__danger", nil))
	waitStarted(t, fc, "slow")
	sendCheck(t, s, checkReq(t, "fast", "Read", map[string]any{"file_path": "/usr/include/stdio.h"}))

	first := recv(t, s)
	if first.GetRequestId() != "fast" || first.GetResponse().GetDecision() != pb.Decision_DECISION_ALLOW {
		t.Fatalf("first answer %v, want fast ALLOW while slow is held", first)
	}
	fc.release("slow")
	second := recv(t, s)
	if second.GetRequestId() != "slow" || second.GetResponse().GetDecision() != pb.Decision_DECISION_DENY ||
		second.GetResponse().GetSource() != pb.DecisionSource_DECISION_SOURCE_CLASSIFIER {
		t.Fatalf("second answer %v, want slow DENY by classifier", second)
	}
	if err := s.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("after CloseSend: %v, want EOF", err)
	}
}

func TestStreamSessionAndErrors(t *testing.T) {
	project := t.TempDir()
	fc := newFakeClassifier()
	core, logs := observer.New(zap.InfoLevel)
	env := newEnv(t, withClassifier(fc), withLogger(zap.New(core)))
	s := openStream(t, env)
	send := func(m *pb.CheckStreamRequest) {
		if err := s.Send(m); err != nil {
			t.Fatal(err)
		}
	}
	send(&pb.CheckStreamRequest{Kind: &pb.CheckStreamRequest_Session{Session: &pb.SessionContext{
		SessionId: "sess", WorkingDirectory: project, Rules: &pb.Rules{Deny: []string{"Bash(make deploy)"}},
	}}})
	send(&pb.CheckStreamRequest{Kind: &pb.CheckStreamRequest_Transcript{Transcript: &pb.TranscriptAppend{Entries: []*pb.TranscriptEntry{
		{Role: pb.Role_ROLE_USER, Text: "please file an issue"},
	}}}})

	// The session's working directory makes this an in-project edit.
	sendCheck(t, s, checkReq(t, "edit", "Write", map[string]any{"file_path": "notes.txt", "content": "x"}))
	if m := recv(t, s); m.GetRequestId() != "edit" || m.GetResponse().GetSource() != pb.DecisionSource_DECISION_SOURCE_ACCEPT_EDITS {
		t.Fatalf("edit: %v", m)
	}
	// The session's rules apply.
	sendCheck(t, s, checkReq(t, "deploy", "Bash", map[string]any{"command": "make deploy"}))
	if m := recv(t, s); m.GetResponse().GetDecision() != pb.Decision_DECISION_DENY || m.GetResponse().GetMatchedRule() != "Bash(make deploy)" {
		t.Fatalf("deploy: %v", m)
	}
	// A bad check is an item error; the stream goes on.
	sendCheck(t, s, &pb.CheckRequest{RequestId: "bad"})
	if m := recv(t, s); m.GetRequestId() != "bad" || m.GetError().GetCode() != int32(codes.InvalidArgument) {
		t.Fatalf("bad: %v", m)
	}
	// A late session context is an item error too.
	send(&pb.CheckStreamRequest{Kind: &pb.CheckStreamRequest_Session{Session: &pb.SessionContext{}}})
	if m := recv(t, s); m.GetRequestId() != "" || m.GetError().GetCode() != int32(codes.FailedPrecondition) {
		t.Fatalf("late session: %v", m)
	}
	send(&pb.CheckStreamRequest{})
	if m := recv(t, s); m.GetError().GetCode() != int32(codes.InvalidArgument) {
		t.Fatalf("empty message: %v", m)
	}
	// The classifier sees the session transcript and id.
	sendCheck(t, s, checkReq(t, "issue", "mcp__github__create_issue", nil))
	if m := recv(t, s); m.GetResponse().GetSource() != pb.DecisionSource_DECISION_SOURCE_CLASSIFIER {
		t.Fatalf("issue: %v", m)
	}
	in := fc.inputs()
	last := in[len(in)-1].Request
	if last.SessionID != "sess" || len(last.Transcript) != 1 || last.Transcript[0].Text != "please file an issue" {
		t.Fatalf("classifier saw session %q transcript %v", last.SessionID, last.Transcript)
	}
	// Each refused message has its log line, as a refused unary call does.
	var refused []string
	for _, e := range logs.FilterMessage("stream item refused").AllUntimed() {
		m := e.ContextMap()
		refused = append(refused, fmt.Sprint(m["request_id"], "/", m["code"]))
	}
	if want := []string{"bad/InvalidArgument", "/FailedPrecondition", "/InvalidArgument"}; !slices.Equal(refused, want) {
		t.Errorf("refused items logged %v, want %v", refused, want)
	}
	if err := s.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("after CloseSend: %v", err)
	}
}

func TestStreamDuplicateRequestID(t *testing.T) {
	fc := newFakeClassifier()
	fc.hold("dup")
	env := newEnv(t, withClassifier(fc))
	s := openStream(t, env)
	sendCheck(t, s, checkReq(t, "dup", "mcp__test__x", nil))
	waitStarted(t, fc, "dup")
	sendCheck(t, s, checkReq(t, "dup", "Read", nil))
	if m := recv(t, s); m.GetRequestId() != "dup" || m.GetError().GetCode() != int32(codes.InvalidArgument) {
		t.Fatalf("duplicate: %v", m)
	}
	fc.release("dup")
	if m := recv(t, s); m.GetRequestId() != "dup" || m.GetResponse() == nil {
		t.Fatalf("original: %v", m)
	}
	_ = s.CloseSend()
	if _, err := s.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("after CloseSend: %v", err)
	}
}

func TestStreamBoundsInFlight(t *testing.T) {
	fc := newFakeClassifier()
	ids := []string{"a", "b", "c", "d", "e"}
	for _, id := range ids {
		fc.hold(id)
	}
	env := newEnv(t, withClassifier(fc), withConfig(func(c *Config) { c.MaxStreamInFlight = 2 }))
	s := openStream(t, env)
	for _, id := range ids {
		sendCheck(t, s, checkReq(t, id, "mcp__test__x", nil))
	}
	got := map[string]bool{}
	for range ids {
		// Release whichever call reaches the classifier next.
		select {
		case id := <-fc.started:
			fc.release(id)
		case <-time.After(10 * time.Second):
			t.Fatal("no call reached the classifier")
		}
	}
	for range ids {
		m := recv(t, s)
		if m.GetResponse() == nil || got[m.GetRequestId()] {
			t.Fatalf("bad or repeated answer %v", m)
		}
		got[m.GetRequestId()] = true
	}
	if n := fc.maxConcurrent(); n > 2 {
		t.Fatalf("%d checks ran at once, limit 2", n)
	}
	_ = s.CloseSend()
	if _, err := s.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("after CloseSend: %v", err)
	}
}

// TestStreamClientDisconnectNoLeak: when the agent goes away mid-check,
// the handler cancels the check and ends, with no shutdown to make it. In
// a synctest bubble, synctest.Wait lets everything the cancellation sets
// off settle before the check, instead of polling for it.
func TestStreamClientDisconnectNoLeak(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Only goroutines this test starts count (not other tests' leftovers).
		before := goleak.IgnoreCurrent()
		fc := newFakeClassifier()
		fc.hold("stuck")
		env := newEnv(t, withClassifier(fc))
		ctx, cancel := context.WithCancel(t.Context())
		s, err := env.client.CheckStream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		sendCheck(t, s, checkReq(t, "stuck", "mcp__test__x", nil))
		waitStarted(t, fc, "stuck")
		cancel() // the agent goes away mid-check
		if _, err := s.Recv(); status.Code(err) != codes.Canceled {
			t.Fatalf("client side: %v, want Canceled", err)
		}
		synctest.Wait()
		if n := fc.activeCount(); n != 0 {
			t.Fatalf("%d classifier calls still running after the client left", n)
		}
		env.stop(t)
		goleak.VerifyNone(t, before)
	})
}

func TestShutdownWithOpenStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fc := newFakeClassifier()
		fc.hold("inflight")
		env := newEnv(t, withClassifier(fc), withConfig(func(c *Config) { c.ShutdownTimeout = time.Minute }))
		s := openStream(t, env)
		sendCheck(t, s, checkReq(t, "first", "Read", nil))
		if m := recv(t, s); m.GetRequestId() != "first" {
			t.Fatalf("first: %v", m)
		}
		sendCheck(t, s, checkReq(t, "inflight", "mcp__test__x", nil))
		waitStarted(t, fc, "inflight")

		stopped := make(chan struct{})
		go func() {
			env.stop(t)
			close(stopped)
		}()
		// Draining must wait for the check in flight, then answer it. Once
		// every goroutine is blocked, shutdown can only be waiting for it.
		synctest.Wait()
		select {
		case <-stopped:
			t.Fatal("shutdown finished before the check in flight was answered")
		default:
		}
		fc.release("inflight")
		if m := recv(t, s); m.GetRequestId() != "inflight" || m.GetResponse().GetDecision() != pb.Decision_DECISION_ALLOW {
			t.Fatalf("in-flight check: %v, want its answer", m)
		}
		// The stream ends by the drain, not by the shutdown timeout cutting it.
		if _, err := s.Recv(); status.Code(err) != codes.Unavailable || !strings.Contains(status.Convert(err).Message(), "shutting down") {
			t.Fatalf("stream end: %v, want Unavailable: server is shutting down", err)
		}
		<-stopped // in a bubble, a shutdown that never ends fails the test as a deadlock
	})
}

// TestShutdownTimeoutCutsStuckStream: a check that never ends is cut at
// the shutdown timeout (on the fake clock of a bubble, to the nanosecond).
func TestShutdownTimeoutCutsStuckStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = 200 * time.Millisecond
		fc := newFakeClassifier()
		fc.hold("forever")
		env := newEnv(t, withClassifier(fc), withConfig(func(c *Config) { c.ShutdownTimeout = timeout }))
		s := openStream(t, env)
		sendCheck(t, s, checkReq(t, "forever", "mcp__test__x", nil))
		waitStarted(t, fc, "forever")
		start := time.Now()
		env.stop(t)
		if d := time.Since(start); d < timeout || d > timeout+stopGrace {
			t.Errorf("Shutdown returned after %s, want its %s timeout (and at most %s more)", d, timeout, stopGrace)
		}
		if _, err := s.Recv(); err == nil {
			t.Fatal("stream still delivering after a forced stop")
		}
	})
}

func TestStreamPanicBecomesInternal(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	env := newEnv(t, withClassifier(newFakeClassifier()), withLogger(zap.New(core)))
	s := openStream(t, env)
	sendCheck(t, s, checkReq(t, "boom", "mcp__test__panic", nil))
	if m := recv(t, s); m.GetRequestId() != "boom" || m.GetError().GetCode() != int32(codes.Internal) {
		t.Fatalf("panicking check answered %v, want an Internal error", m)
	}
	if logs.FilterMessage("panic in handler").Len() != 1 {
		t.Errorf("panic not logged once")
	}
	// The stream, and the server, carry on.
	sendCheck(t, s, checkReq(t, "after", "Read", map[string]any{"file_path": "/usr/include/stdio.h"}))
	if m := recv(t, s); m.GetRequestId() != "after" || m.GetResponse().GetDecision() != pb.Decision_DECISION_ALLOW {
		t.Fatalf("after the panic: %v", m)
	}
	_ = s.CloseSend()
	if _, err := s.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("after CloseSend: %v", err)
	}
}

// TestReasonNotUTF8 sends a check whose reason quotes a path cut near a
// character: cut inside it, protobuf could not encode the text, which
// turned a decided check into an Internal error and, on a stream, ended
// the stream with every other check unanswered.
func TestReasonNotUTF8(t *testing.T) {
	env := newEnv(t)
	long := "/" + strings.Repeat("a", 62) + "é" + strings.Repeat("/b", 2100)
	in := map[string]any{"file_path": long, "content": "x"}
	write := func(id string) *pb.CheckRequest {
		r := checkReq(t, id, "Write", in)
		r.WorkingDirectory = t.TempDir()
		return r
	}

	resp, err := env.client.Check(t.Context(), write("u1"))
	if err != nil {
		t.Fatalf("unary: %v", err)
	}
	if resp.GetDecision() == pb.Decision_DECISION_ALLOW || !utf8.ValidString(resp.GetReason()) || !strings.Contains(resp.GetReason(), "file name too long") {
		t.Fatalf("unary answer %v", resp)
	}

	s := openStream(t, env)
	sendCheck(t, s, write("bad"))
	sendCheck(t, s, checkReq(t, "ok", "Read", map[string]any{"file_path": "/usr/include/stdio.h"}))
	got := map[string]*pb.CheckResponse{}
	for range 2 {
		m := recv(t, s)
		if m.GetResponse() == nil {
			t.Fatalf("stream answer %v", m)
		}
		got[m.GetRequestId()] = m.GetResponse()
	}
	if got["bad"].GetDecision() == pb.Decision_DECISION_ALLOW || got["ok"].GetDecision() != pb.Decision_DECISION_ALLOW {
		t.Fatalf("stream answers %v", got)
	}
	_ = s.CloseSend()
	if _, err := s.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("after CloseSend: %v", err)
	}
}

// deafClassifier ignores its context: a check busy in work that does not
// notice cancellation.
type deafClassifier struct {
	started, release chan struct{}
}

func (d *deafClassifier) Classify(context.Context, *engine.ClassifyInput) (engine.Verdict, error) {
	d.started <- struct{}{}
	<-d.release
	return engine.Verdict{Decision: engine.Deny, Reason: "late"}, nil
}

// TestShutdownDoesNotWaitForADeafHandler: a unary check that ignores its
// cancelled context does not hold Shutdown past its timeout and grace (on
// the fake clock of a bubble).
func TestShutdownDoesNotWaitForADeafHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = 200 * time.Millisecond
		deaf := &deafClassifier{started: make(chan struct{}, 1), release: make(chan struct{})}
		defer close(deaf.release)
		env := newEnv(t, withClassifier(deaf), withConfig(func(c *Config) { c.ShutdownTimeout = timeout }))
		req := checkReq(t, "deaf", "mcp__test__x", nil)
		go func() { _, _ = env.client.Check(context.Background(), req) }()
		<-deaf.started
		start := time.Now()
		env.stop(t)
		if d := time.Since(start); d > timeout+stopGrace {
			t.Errorf("Shutdown returned after %s, past its %s timeout and %s grace: it waited for the handler", d, timeout, stopGrace)
		}
	})
}

// TestShutdownDoesNotWaitForAFullConnection: a connection whose every
// stream slot is held by a handler that ignores its cancelled context (as
// one held in a system call on a hung mount did), with one more call
// waiting for a slot. grpc-go's reader then waits on the slot, and its
// Stop waits for that reader for ever; Shutdown still returns within its
// timeout and grace, so that the process exits. Not in a bubble: Stop's
// wait is on a sync.Cond, which a bubble's clock does not see as blocked,
// so the bound is real time, generous for a loaded machine.
func TestShutdownDoesNotWaitForAFullConnection(t *testing.T) {
	const timeout = 200 * time.Millisecond
	deaf := &deafClassifier{started: make(chan struct{}, 1), release: make(chan struct{})}
	defer close(deaf.release)
	env := newEnv(t, withClassifier(deaf), withConfig(func(c *Config) {
		c.ShutdownTimeout = timeout
		c.MaxConcurrentStreams = 1
	}))
	// The client gives up on the deaf call (its deadline), which frees
	// its own count of the connection's streams, not the server's slot.
	gaveUp, giveUp := context.WithCancel(context.Background())
	go func() { _, _ = env.client.Check(gaveUp, checkReq(t, "deaf", "mcp__test__x", nil)) }()
	<-deaf.started
	giveUp()
	waiting, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _, _ = env.client.Check(waiting, checkReq(t, "queued", "Read", nil)) }()
	stopped := make(chan time.Duration, 1)
	start := time.Now()
	go func() {
		env.srv.Shutdown(context.Background())
		stopped <- time.Since(start)
	}()
	select {
	case d := <-stopped:
		t.Logf("Shutdown returned after %s", d)
	case <-time.After(timeout + stopGrace + 5*time.Second):
		t.Fatalf("Shutdown still waiting %s after it began, past its %s timeout and %s grace: it waits for a handler that never returns", time.Since(start).Round(time.Millisecond), timeout, stopGrace)
	}
}

// TestStreamLocalChecksTakeNoSlot: a check the local stages decide is
// answered at once, even when every slot of the stream is held by checks
// waiting on the classifier.
func TestStreamLocalChecksTakeNoSlot(t *testing.T) {
	fc := newFakeClassifier()
	fc.hold("held")
	env := newEnv(t, withClassifier(fc), withConfig(func(c *Config) { c.MaxStreamInFlight = 1 }))
	s := openStream(t, env)
	sendCheck(t, s, checkReq(t, "held", "mcp__test__x", nil))
	waitStarted(t, fc, "held")
	for _, id := range []string{"read-1", "read-2", "read-3"} {
		sendCheck(t, s, checkReq(t, id, "Read", map[string]any{"file_path": "/usr/include/stdio.h"}))
		if m := recv(t, s); m.GetRequestId() != id || m.GetResponse().GetDecision() != pb.Decision_DECISION_ALLOW {
			t.Fatalf("local check %s behind a held slot: %v", id, m)
		}
	}
	fc.release("held")
	if m := recv(t, s); m.GetRequestId() != "held" || m.GetResponse().GetSource() != pb.DecisionSource_DECISION_SOURCE_CLASSIFIER {
		t.Fatalf("held check: %v", m)
	}
	_ = s.CloseSend()
	if _, err := s.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("after CloseSend: %v", err)
	}
}
