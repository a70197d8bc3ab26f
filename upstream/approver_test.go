package upstream

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/toolgate/toolgate/engine"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// approving is a centre whose Approve fails with errs, one per call,
// then answers resp; it records the requests.
type approving struct {
	pb.UnimplementedUpstreamServiceServer
	mu   sync.Mutex
	errs []error
	resp *pb.ApproveResponse
	reqs []*pb.ApproveRequest
}

func (a *approving) Approve(_ context.Context, req *pb.ApproveRequest) (*pb.ApproveResponse, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.reqs = append(a.reqs, req)
	if len(a.errs) > 0 {
		err := a.errs[0]
		a.errs = a.errs[1:]
		return nil, err
	}
	return a.resp, nil
}

func approverFor(t *testing.T, a *approving) *Approver {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	pb.RegisterUpstreamServiceServer(s, a)
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	conn, err := Dial(Config{Address: lis.Addr().String(), Timeout: 5 * time.Second, RecordsSpoolMaxMB: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	ap := NewApprover(conn, lis.Addr().String(), "ci-runner-7")
	ap.retry = 10 * time.Millisecond
	return ap
}

func question() *engine.ApprovalInput {
	return &engine.ApprovalInput{
		Request: &engine.Request{RequestID: "toolu_1", Tool: engine.ToolCall{Name: "Bash", Input: map[string]any{"command": "npm publish"}}, WorkingDirectory: "/w", Unattended: true},
		Kind:    engine.KindShell, Policy: "ci", PolicyVersion: "sha256:abc",
		Asked:   engine.Result{Decision: engine.Ask, Source: engine.SourceRule, Reason: "asks", MatchedRule: "Bash(npm publish:*)"},
		Timeout: time.Minute,
	}
}

// TestApproverAsksTheCentre: the question reaches the centre whole (the
// check unattended, the host, the policy, who asked), and its answer comes
// back with the approval's details; a centre that is briefly unreachable,
// or whose proxy cuts the wait, is asked again.
func TestApproverAsksTheCentre(t *testing.T) {
	a := &approving{
		errs: []error{status.Error(codes.Unavailable, "restarting"), status.Error(codes.DeadlineExceeded, "route timeout")},
		resp: &pb.ApproveResponse{Decision: pb.Decision_DECISION_ALLOW, Source: pb.DecisionSource_DECISION_SOURCE_APPROVAL, Reason: "allowed by alice",
			Approval: &pb.ApprovalInfo{Id: "ap-1", Approver: "alice", How: "once", AnsweredUnixMicros: 1_700_000_000_000_000}},
	}
	v, err := approverFor(t, a).Approve(t.Context(), question())
	if err != nil {
		t.Fatal(err)
	}
	if v.Decision != engine.Allow || v.Source != engine.SourceApproval || v.Info.By != "alice" || v.Info.ID != "ap-1" || v.Info.At.IsZero() {
		t.Errorf("verdict %+v", v)
	}
	if len(a.reqs) != 3 {
		t.Fatalf("%d calls, want 3 (two failed, then the answer)", len(a.reqs))
	}
	r := a.reqs[2]
	if !r.GetCheck().GetUnattended() || r.GetHost() != "ci-runner-7" || r.GetPolicy() != "ci" || r.GetPolicyVersion() != "sha256:abc" ||
		r.GetAsked().GetDecision() != pb.Decision_DECISION_ASK || r.GetAsked().GetSource() != pb.DecisionSource_DECISION_SOURCE_RULE ||
		r.GetAsked().GetMatchedRule() != "Bash(npm publish:*)" || r.GetToolKind() != "shell" {
		t.Errorf("request %v", r)
	}
}

// TestApproverFailsClosed: what the centre must not say (ASK, an allow
// under a source that is not an approval) is an error, which the engine
// turns into a deny; a refusal is not retried; a deny the centre could
// not queue stays a deny.
func TestApproverFailsClosed(t *testing.T) {
	for name, resp := range map[string]*pb.ApproveResponse{
		"ask":                 {Decision: pb.Decision_DECISION_ASK, Source: pb.DecisionSource_DECISION_SOURCE_APPROVAL},
		"allow by classifier": {Decision: pb.Decision_DECISION_ALLOW, Source: pb.DecisionSource_DECISION_SOURCE_CLASSIFIER},
		"allow by rule":       {Decision: pb.Decision_DECISION_ALLOW, Source: pb.DecisionSource_DECISION_SOURCE_RULE},
		"unspecified":         {},
	} {
		if v, err := approverFor(t, &approving{resp: resp}).Approve(t.Context(), question()); err == nil {
			t.Errorf("%s: %+v, want an error", name, v)
		}
	}
	a := &approving{errs: []error{status.Error(codes.PermissionDenied, "not an upstream token")}}
	if _, err := approverFor(t, a).Approve(t.Context(), question()); err == nil || len(a.reqs) != 1 {
		t.Errorf("a refusal: %v after %d calls, want an error after one", err, len(a.reqs))
	}
	v, err := approverFor(t, &approving{resp: &pb.ApproveResponse{Decision: pb.Decision_DECISION_DENY, Source: pb.DecisionSource_DECISION_SOURCE_RULE, Reason: "the centre's policy denies"}}).Approve(t.Context(), question())
	if err != nil || v.Decision != engine.Deny || v.Source != engine.SourceApprovalUnavailable {
		t.Errorf("a deny the centre did not queue: %+v, %v", v, err)
	}
}

// TestApproverGivesUp: a centre down for longer than the approval's
// time is given up on, and the question fails (a deny).
func TestApproverGivesUp(t *testing.T) {
	a := &approving{}
	for range 1000 {
		a.errs = append(a.errs, status.Error(codes.Unavailable, "down"))
	}
	q := question()
	q.Timeout = 50 * time.Millisecond
	if _, err := approverFor(t, a).Approve(t.Context(), q); err == nil {
		t.Fatal("no error from a centre that never answered")
	}
	if n := len(a.reqs); n < 2 || n > 20 {
		t.Errorf("%d calls: want a few retries, bounded by the approval's time", n)
	}
}
