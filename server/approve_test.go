package server

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/toolgate/toolgate/engine"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// recordingApprover answers every question with v, and records what it
// was asked and the origin the server gave it.
type recordingApprover struct {
	mu      sync.Mutex
	v       engine.ApprovalVerdict
	asked   []*engine.ApprovalInput
	origins []string
	hosts   []string
}

func (r *recordingApprover) Approve(ctx context.Context, in *engine.ApprovalInput) (engine.ApprovalVerdict, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, in)
	r.origins = append(r.origins, Origin(ctx))
	r.hosts = append(r.hosts, Host(ctx))
	return r.v, nil
}

func withApprover(a engine.Approver) envOption {
	return func(_ *Config, ec *engine.Config, _ **zap.Logger) { ec.Approver = a }
}

// TestUpstreamApprove: the centre queues a local server's question under
// its own policy of that name (its timeout and outcome, not the
// sender's), names the local server's host as the origin, and answers
// with the approval; a question that is not an unattended ASK, or names
// a source that never asks, is refused; a policy that does not queue
// denies without asking anyone.
func TestUpstreamApprove(t *testing.T) {
	ra := &recordingApprover{v: engine.ApprovalVerdict{Decision: engine.Allow, Source: engine.SourceApproval, Reason: "allowed by alice",
		Info: engine.ApprovalInfo{ID: "ap-1", By: "alice", How: engine.HowOnce, At: time.Unix(1_700_000_000, 0)}}}
	env := newEnv(t, withApprover(ra), withPolicies(map[string]engine.PolicySpec{
		engine.DefaultPolicy: {},
		"ci":                 {Unattended: engine.UnattendedSpec{Approval: &engine.ApprovalSpec{Timeout: 3 * time.Minute}}},
	}))
	client := pb.NewUpstreamServiceClient(env.conn)
	req := func(policy string) *pb.ApproveRequest {
		check := checkReq(t, "r1", "Bash", map[string]any{"command": "npm publish"})
		check.Unattended = true
		return &pb.ApproveRequest{Check: check, ToolKind: "shell", Policy: policy, Host: "ci-runner-7",
			Asked: &pb.CheckResponse{Decision: pb.Decision_DECISION_ASK, Source: pb.DecisionSource_DECISION_SOURCE_RULE, Reason: "asks", MatchedRule: "Bash(npm publish:*)"}}
	}
	resp, err := client.Approve(t.Context(), req("ci"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetDecision() != pb.Decision_DECISION_ALLOW || resp.GetSource() != pb.DecisionSource_DECISION_SOURCE_APPROVAL ||
		resp.GetApproval().GetApprover() != "alice" || resp.GetApproval().GetId() != "ap-1" || resp.GetApproval().GetAnsweredUnixMicros() == 0 {
		t.Fatalf("answer %v", resp)
	}
	// The host is the local server's word, shown to approvers; the
	// origin, which caps and rules go by, is who the server
	// authenticated, whatever the request says.
	if len(ra.asked) != 1 || ra.asked[0].Timeout != 3*time.Minute || ra.asked[0].Asked.Source != engine.SourceRule ||
		!strings.HasPrefix(ra.hosts[0], "ci-runner-7 (as ") || ra.origins[0] == "" || strings.Contains(ra.origins[0], "ci-runner-7") {
		t.Errorf("asked %+v, origin %q, host %q", ra.asked, ra.origins, ra.hosts)
	}

	if resp, err := client.Approve(t.Context(), req("")); err != nil || resp.GetDecision() != pb.Decision_DECISION_DENY || len(ra.asked) != 1 {
		t.Errorf("a policy that does not queue: %v, %v (approver asked %d times)", resp, err, len(ra.asked))
	}

	attended := req("ci")
	attended.Check.Unattended = false
	allow := req("ci")
	allow.Asked.Decision = pb.Decision_DECISION_ALLOW
	approvalSource := req("ci")
	approvalSource.Asked.Source = pb.DecisionSource_DECISION_SOURCE_APPROVAL
	unspecified := req("ci")
	unspecified.Asked.Source = pb.DecisionSource_DECISION_SOURCE_UNSPECIFIED
	longHost := req("ci")
	longHost.Host = strings.Repeat("h", maxIDBytes+1)
	for name, r := range map[string]*pb.ApproveRequest{
		"no check": {Asked: req("ci").Asked}, "no asked": {Check: req("ci").Check}, "attended": attended, "an allow": allow,
		"approval source": approvalSource, "unspecified source": unspecified, "long host": longHost, "unknown policy": req("nope"),
	} {
		if _, err := client.Approve(t.Context(), r); status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s: %v, want InvalidArgument", name, err)
		}
	}
	if len(ra.asked) != 1 {
		t.Errorf("refused questions reached the approver: %d", len(ra.asked))
	}
}
