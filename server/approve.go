package server

import (
	"context"
	"fmt"
	"net"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc/peer"

	"github.com/toolgate/toolgate/engine"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

type hostKey struct{}

// Origin names who sent the check in ctx, as this server authenticated
// them: the token's name, else the verified client certificate's name,
// else the peer's IP address (no port: every connection of one machine is
// one origin). The caps on pending approvals count by it, and learned
// rules are scoped to it: nothing the caller writes in a request changes
// it.
func Origin(ctx context.Context) string {
	if c := ClientFromContext(ctx); c != "" {
		return c
	}
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		if host, _, err := net.SplitHostPort(p.Addr.String()); err == nil {
			return host
		}
		return p.Addr.String()
	}
	return ""
}

// Host is where the check in ctx says it came from, for approvers to
// read: a forwarded question's local server host name, with the origin
// it authenticated as; else the origin.
func Host(ctx context.Context) string {
	if h, ok := ctx.Value(hostKey{}).(string); ok {
		return h
	}
	return Origin(ctx)
}

// sourceFromProto is the engine's source for an asking stage's.
var sourceFromProto = func() map[pb.DecisionSource]engine.Source {
	m := map[pb.DecisionSource]engine.Source{}
	for e, p := range sourceToProto {
		m[p] = e
	}
	return m
}()

// Approve queues a local server's unattended question in this server's
// approval queue, under this server's policy of that name, and answers
// with the outcome. A server without an approval queue answers DENY with
// source APPROVAL_UNAVAILABLE, as its own checks would be.
func (u *Upstream) Approve(ctx context.Context, req *pb.ApproveRequest) (*pb.ApproveResponse, error) {
	resp, err := u.approve(ctx, req)
	if err != nil {
		return nil, statusFromError(err).Err()
	}
	return resp, nil
}

func (u *Upstream) approve(ctx context.Context, req *pb.ApproveRequest) (*pb.ApproveResponse, error) {
	start := time.Now()
	s := u.svc
	check, asked := req.GetCheck(), req.GetAsked()
	switch {
	case check == nil || asked == nil:
		return nil, invalid("check and asked are required")
	case !check.GetUnattended():
		return nil, invalid("check.unattended: only an unattended check's question is queued for approval")
	case asked.GetDecision() != pb.Decision_DECISION_ASK:
		return nil, invalid("asked.decision: only an ASK is queued for approval, got %s", asked.GetDecision())
	case len(req.GetToolKind()) > maxIDBytes || len(req.GetPolicy()) > maxIDBytes || len(req.GetPolicyVersion()) > maxIDBytes || len(req.GetHost()) > maxIDBytes:
		return nil, invalid("tool_kind, policy, policy_version and host are limited to %d bytes", maxIDBytes)
	case len(asked.GetReason()) > maxNoteBytes || len(asked.GetMatchedRule()) > maxNoteBytes:
		return nil, invalid("asked.reason and asked.matched_rule are limited to %d bytes", maxNoteBytes)
	}
	src, ok := sourceFromProto[asked.GetSource()]
	if !ok || src >= engine.SourceApproval {
		return nil, invalid("asked.source: %s is not a source that asks", asked.GetSource())
	}
	ereq, err := s.toEngine(check)
	if err != nil {
		return nil, err
	}
	policy := req.GetPolicy()
	if policy == "" {
		policy = check.GetPolicy()
	}
	origin := Origin(ctx)
	host := validUTF8(req.GetHost())
	if origin != "" {
		host = fmt.Sprintf("%s (as %s)", host, origin)
	}
	ctx = context.WithValue(ctx, hostKey{}, host)
	res, err := s.engine.Load().Approve(ctx, &engine.ApprovalInput{
		Request: ereq, Kind: engine.Kind(req.GetToolKind()), Policy: policy, PolicyVersion: req.GetPolicyVersion(),
		Asked: engine.Result{Decision: engine.Ask, Source: src, Reason: asked.GetReason(), MatchedRule: asked.GetMatchedRule(), Kind: engine.Kind(req.GetToolKind())},
	})
	if err != nil {
		return nil, err
	}
	d, ok := decisionToProto[res.Decision]
	if !ok {
		return nil, errNoDecision
	}
	s.log.Info("approval", zap.String("request_id", check.GetRequestId()), zap.String("origin", origin), zap.String("host", host), zap.String("decision", res.Decision.String()),
		zap.String("source", res.Source.String()), zap.String("policy", policy), zap.Duration("waited", time.Since(start)))
	return &pb.ApproveResponse{Decision: d, Source: sourceToProto[res.Source], Reason: validUTF8(res.Reason), Approval: approvalToProto(res.Approval)}, nil
}
