package upstream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/toolgate/toolgate/engine"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
	"github.com/toolgate/toolgate/internal/reasontext"
)

// Approver is a local server's approver: it takes an unattended check's
// question to the centre's approval queue (UpstreamService.Approve) and
// waits there for the answer. A centre that cannot be reached is tried
// again until the approval's time is up or the call's own deadline nears:
// the centre keeps the question by its id, so a retry, even after the
// centre restarted, waits on the same approval. What the centre never
// answers fails closed.
type Approver struct {
	client pb.UpstreamServiceClient
	addr   string
	host   string
	// retry is the pause between attempts while the centre is down.
	retry time.Duration
}

var _ engine.Approver = (*Approver)(nil)

// NewApprover sends questions to the centre at the other end of conn
// (named addr in reasons) as host.
func NewApprover(conn grpc.ClientConnInterface, addr, host string) *Approver {
	return &Approver{client: pb.NewUpstreamServiceClient(conn), addr: addr, host: host, retry: time.Second}
}

// Approve asks the centre (engine.Approver).
func (a *Approver) Approve(ctx context.Context, in *engine.ApprovalInput) (engine.ApprovalVerdict, error) {
	if in == nil || in.Request == nil {
		return engine.ApprovalVerdict{}, errors.New("no request to approve")
	}
	check, err := checkToProto(in.Request)
	if err != nil {
		return engine.ApprovalVerdict{}, err
	}
	if in.Asked.Decision != engine.Ask {
		return engine.ApprovalVerdict{}, fmt.Errorf("the question's decision is %s, not ask", in.Asked.Decision)
	}
	// engine.Source is numbered like the API's DecisionSource.
	asked := &pb.CheckResponse{Decision: pb.Decision_DECISION_ASK, Source: pb.DecisionSource(in.Asked.Source),
		Reason: cutNote(in.Asked.Reason), MatchedRule: cutNote(in.Asked.MatchedRule)}
	req := &pb.ApproveRequest{Check: check, ToolKind: string(in.Kind), Policy: in.Policy, PolicyVersion: in.PolicyVersion, Host: a.host, Asked: asked}
	// The centre waits at most the approval's time; a centre that
	// restarts meanwhile is asked again until then.
	giveUp := time.Now().Add(in.Timeout + a.retry)
	for {
		resp, err := a.client.Approve(ctx, req)
		if err == nil {
			return a.verdict(resp)
		}
		if ctx.Err() != nil {
			return engine.ApprovalVerdict{}, ctx.Err()
		}
		switch status.Code(err) {
		// DeadlineExceeded with ctx alive is a proxy's route timeout
		// cutting the wait: asked again, the centre joins the approval.
		case codes.Unavailable, codes.ResourceExhausted, codes.Aborted, codes.DeadlineExceeded:
		default:
			st, _ := status.FromError(err)
			return engine.ApprovalVerdict{}, fmt.Errorf("upstream %s: %s: %s", a.addr, st.Code(), reasontext.Sanitize(st.Message(), maxReasonChars))
		}
		if !time.Now().Add(a.retry).Before(giveUp) {
			return engine.ApprovalVerdict{}, fmt.Errorf("upstream %s: unreachable until the approval's time was up: %s", a.addr, reasontext.Sanitize(status.Convert(err).Message(), maxReasonChars))
		}
		t := time.NewTimer(a.retry)
		select {
		case <-ctx.Done():
			t.Stop()
			return engine.ApprovalVerdict{}, ctx.Err()
		case <-t.C:
		}
	}
}

// verdict maps the centre's answer; anything but an approval's outcome
// fails closed in the engine.
func (a *Approver) verdict(resp *pb.ApproveResponse) (engine.ApprovalVerdict, error) {
	d, ok := decisionFromProto[resp.GetDecision()]
	if !ok || d == engine.Ask {
		return engine.ApprovalVerdict{}, fmt.Errorf("upstream %s answered %s, which is not an approval's outcome", a.addr, resp.GetDecision())
	}
	var src engine.Source
	switch resp.GetSource() {
	case pb.DecisionSource_DECISION_SOURCE_APPROVAL:
		src = engine.SourceApproval
	case pb.DecisionSource_DECISION_SOURCE_APPROVAL_TIMEOUT:
		src = engine.SourceApprovalTimeout
	default:
		if d != engine.Deny {
			return engine.ApprovalVerdict{}, fmt.Errorf("upstream %s allowed with source %s, which is not an approval", a.addr, resp.GetSource())
		}
		// The centre did not queue it (its policy, or no queue): a deny
		// that says why.
		src = engine.SourceApprovalUnavailable
	}
	v := engine.ApprovalVerdict{Decision: d, Source: src, Reason: cut(resp.GetReason())}
	if ai := resp.GetApproval(); ai != nil {
		s := func(x string) string { return reasontext.Sanitize(x, maxDetailChars) }
		v.Info = engine.ApprovalInfo{ID: s(ai.GetId()), By: s(ai.GetApprover()), How: s(ai.GetHow()), Rule: reasontext.Sanitize(ai.GetRule(), maxReasonChars)}
		if us := ai.GetAnsweredUnixMicros(); us > 0 {
			v.Info.At = time.UnixMicro(us)
		}
	}
	return v, nil
}

// cutNote keeps a reason within the centre's caps.
func cutNote(s string) string { return fitNotes([]string{s})[0] }
