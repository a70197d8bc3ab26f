package server

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/toolgate/toolgate/approvals"
	"github.com/toolgate/toolgate/approvals/store"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// ApprovalQueue is what the approvers' service needs of the approval
// queue (approvals.Queue).
type ApprovalQueue interface {
	List(ctx context.Context, limit int) ([]store.Pending, error)
	Get(ctx context.Context, id string) (store.Pending, error)
	Answer(ctx context.Context, id string, a approvals.Answer) (store.Pending, error)
	Rules(ctx context.Context) ([]store.Rule, error)
	DeleteRule(ctx context.Context, id, by string) error
}

var _ ApprovalQueue = (*approvals.Queue)(nil)

// WithApprovals serves toolgate.v1.ApprovalService over q; without it the
// service is not registered and its calls are UNIMPLEMENTED.
func WithApprovals(q ApprovalQueue) Option { return func(o *options) { o.approvals = q } }

// ApprovalService is the approvers' API: a thin layer over the queue.
// Every call needs a token of role approver, whose name is recorded with
// each answer.
type ApprovalService struct {
	pb.UnimplementedApprovalServiceServer
	q   ApprovalQueue
	log *zap.Logger
}

var _ pb.ApprovalServiceServer = (*ApprovalService)(nil)

// NewApprovalService returns the approvers' service over q.
func NewApprovalService(q ApprovalQueue, log *zap.Logger) *ApprovalService {
	return &ApprovalService{q: q, log: log}
}

// errNotApprover is every call's answer without an approver's token: on
// a server without a token file too, so nobody approves there.
var errNotApprover = status.Error(codes.PermissionDenied,
	"approving takes a token of role approver (a line NAME TOKEN approver in the server's server.token_file)")

// approver returns the caller's approver name, or the refusal.
func approver(ctx context.Context) (string, error) {
	if by := ApproverFromContext(ctx); by != "" {
		return by, nil
	}
	return "", errNotApprover
}

// checkID refuses an id no store holds, before any query.
func checkID(what, id string) error {
	switch {
	case id == "":
		return status.Errorf(codes.InvalidArgument, "%s is required", what)
	case len(id) > store.MaxIDBytes:
		return status.Errorf(codes.InvalidArgument, "%s is %d bytes, over the limit of %d", what, len(id), store.MaxIDBytes)
	}
	return nil
}

// ListApprovals returns the approvals still pending, oldest first.
func (a *ApprovalService) ListApprovals(ctx context.Context, req *pb.ListApprovalsRequest) (*pb.ListApprovalsResponse, error) {
	if _, err := approver(ctx); err != nil {
		return nil, err
	}
	if n := req.GetLimit(); n < 0 || n > store.MaxLimit {
		return nil, status.Errorf(codes.InvalidArgument, "limit %d: want 0 (meaning %d) to %d", n, store.DefaultLimit, store.MaxLimit)
	}
	ps, err := a.q.List(ctx, int(req.GetLimit()))
	if err != nil {
		return nil, a.status(ctx, "listing approvals", err)
	}
	resp := &pb.ListApprovalsResponse{Approvals: make([]*pb.Approval, 0, len(ps))}
	for _, p := range ps {
		resp.Approvals = append(resp.Approvals, pendingToProto(p))
	}
	return resp, nil
}

// GetApproval returns one approval, pending or settled.
func (a *ApprovalService) GetApproval(ctx context.Context, req *pb.GetApprovalRequest) (*pb.GetApprovalResponse, error) {
	if _, err := approver(ctx); err != nil {
		return nil, err
	}
	if err := checkID("id", req.GetId()); err != nil {
		return nil, err
	}
	p, err := a.q.Get(ctx, req.GetId())
	if err != nil {
		return nil, a.status(ctx, "approval "+req.GetId(), err)
	}
	return &pb.GetApprovalResponse{Approval: pendingToProto(p)}, nil
}

// maxTTLSeconds keeps rule_ttl_seconds from overflowing a Duration; the
// queue bounds it further.
const maxTTLSeconds = math.MaxInt64 / int64(time.Second)

// AnswerApproval settles a pending approval with the caller's answer.
func (a *ApprovalService) AnswerApproval(ctx context.Context, req *pb.AnswerApprovalRequest) (*pb.AnswerApprovalResponse, error) {
	by, err := approver(ctx)
	if err != nil {
		return nil, err
	}
	if err := checkID("id", req.GetId()); err != nil {
		return nil, err
	}
	ans := approvals.Answer{By: by}
	switch req.GetAnswer() {
	case pb.ApprovalAnswer_APPROVAL_ANSWER_ALLOW_ONCE:
		ans.Allow = true
	case pb.ApprovalAnswer_APPROVAL_ANSWER_DENY:
	case pb.ApprovalAnswer_APPROVAL_ANSWER_ALLOW_AS_RULE:
		ans.Allow, ans.AsRule = true, true
	default:
		// The zero value answers nothing, least of all allow.
		return nil, status.Errorf(codes.InvalidArgument, "answer: want ALLOW_ONCE, DENY or ALLOW_AS_RULE, got %s", req.GetAnswer())
	}
	switch ttl := req.GetRuleTtlSeconds(); {
	case ttl != 0 && !ans.AsRule:
		return nil, status.Error(codes.InvalidArgument, "rule_ttl_seconds goes with ALLOW_AS_RULE only")
	case ttl < 0 || ttl > maxTTLSeconds:
		return nil, status.Errorf(codes.InvalidArgument, "rule_ttl_seconds %d is out of range", ttl)
	default:
		ans.RuleTTL = time.Duration(ttl) * time.Second
	}
	p, err := a.q.Answer(ctx, req.GetId(), ans)
	switch {
	case errors.Is(err, store.ErrSettled):
		return nil, status.Errorf(codes.FailedPrecondition, "approval %s is settled already: %s", p.ID, settledHow(p))
	case err != nil:
		return nil, a.status(ctx, "approval "+req.GetId(), err)
	}
	return &pb.AnswerApprovalResponse{Approval: pendingToProto(p)}, nil
}

// settledHow says who settled an approval, how and when.
func settledHow(p store.Pending) string {
	at := p.Answer.At.UTC().Format(time.RFC3339)
	if p.Status == store.StatusExpired {
		return fmt.Sprintf("it expired unanswered at %s, with the policy's outcome %s", at, p.Answer.Outcome)
	}
	return fmt.Sprintf("%s by %s (%s) at %s", p.Status, p.Answer.By, p.Answer.How, at)
}

// ListLearnedRules returns the learned rules in force.
func (a *ApprovalService) ListLearnedRules(ctx context.Context, _ *pb.ListLearnedRulesRequest) (*pb.ListLearnedRulesResponse, error) {
	if _, err := approver(ctx); err != nil {
		return nil, err
	}
	rs, err := a.q.Rules(ctx)
	if err != nil {
		return nil, a.status(ctx, "listing learned rules", err)
	}
	resp := &pb.ListLearnedRulesResponse{Rules: make([]*pb.LearnedRule, 0, len(rs))}
	for _, r := range rs {
		resp.Rules = append(resp.Rules, &pb.LearnedRule{
			Id: validUTF8(r.ID), Rule: validUTF8(approvals.ShownRule(r)), Project: validUTF8(r.Project), Policy: validUTF8(r.Policy),
			CreatedBy: validUTF8(r.CreatedBy), CreatedUnixMicros: r.CreatedAt.UnixMicro(), ExpiresUnixMicros: r.ExpiresAt.UnixMicro(),
			ApprovalId: validUTF8(r.PendingID),
		})
	}
	return resp, nil
}

// DeleteLearnedRule withdraws a learned rule.
func (a *ApprovalService) DeleteLearnedRule(ctx context.Context, req *pb.DeleteLearnedRuleRequest) (*pb.DeleteLearnedRuleResponse, error) {
	by, err := approver(ctx)
	if err != nil {
		return nil, err
	}
	if err := checkID("id", req.GetId()); err != nil {
		return nil, err
	}
	if err := a.q.DeleteRule(ctx, req.GetId(), by); err != nil {
		return nil, a.status(ctx, "learned rule "+req.GetId(), err)
	}
	return &pb.DeleteLearnedRuleResponse{}, nil
}

// status is the one translation of the queue's errors; what is the
// store's own failure is logged and not repeated to the caller (its text
// may quote SQL).
func (a *ApprovalService) status(ctx context.Context, what string, err error) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return status.Errorf(codes.NotFound, "%s: not found", what)
	case errors.Is(err, store.ErrInvalid), errors.Is(err, approvals.ErrRuleNotPossible):
		// The queue's and the store's checks name fields and bounds,
		// never a statement.
		return status.Errorf(codes.InvalidArgument, "%s: %v", what, err)
	case ctx.Err() != nil:
		return statusFromError(ctx.Err()).Err()
	}
	a.log.Error("approvals store", zap.String("what", what), zap.Error(err))
	return status.Errorf(codes.Unavailable, "%s: the approvals store failed; try again", what)
}

// pendingToProto is an approval as approvers see it.
func pendingToProto(p store.Pending) *pb.Approval {
	ap := &pb.Approval{
		Id:                 validUTF8(p.ID),
		Status:             string(p.Status),
		CreatedUnixMicros:  p.Created.UnixMicro(),
		DeadlineUnixMicros: p.Deadline.UnixMicro(),
		Tool:               validUTF8(p.Tool),
		Input:              validUTF8(p.Display),
		Host:               validUTF8(p.Host),
		Project:            validUTF8(p.Project),
		SessionId:          validUTF8(p.Session),
		Policy:             validUTF8(p.Policy),
		Reason:             validUTF8(p.Reason),
		LastWords:          validUTF8(p.LastWords),
		OnTimeout:          string(p.OnTimeout),
		Rule:               validUTF8(approvals.RuleOf(p)),
	}
	if p.Status != store.StatusPending {
		ap.AnsweredBy = validUTF8(p.Answer.By)
		ap.How = string(p.Answer.How)
		ap.AnsweredUnixMicros = p.Answer.At.UnixMicro()
	}
	return ap
}
