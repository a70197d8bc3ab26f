package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Approver takes an unattended check's question to someone who can answer
// it: the central toolgate's approval queue, or, from a local server, the
// centre through its upstream link. It blocks until an answer, the
// approval's deadline (in.Timeout) or ctx's end, whichever comes first.
// An error fails closed (Deny, SourceApprovalUnavailable).
type Approver interface {
	Approve(ctx context.Context, in *ApprovalInput) (ApprovalVerdict, error)
}

// ApprovalInput is what an approver is asked.
type ApprovalInput struct {
	Request *Request
	Kind    Kind
	// Policy is the name of the policy in force, and PolicyVersion its
	// set's content hash.
	Policy        string
	PolicyVersion string
	// Asked is the stages' Ask: who asked and why.
	Asked Result
	// Timeout is how long the question waits for an answer; OnTimeout
	// (Allow or Deny) is the outcome when nobody answers in time.
	Timeout   time.Duration
	OnTimeout Decision
}

// ApprovalVerdict is an approver's outcome.
type ApprovalVerdict struct {
	// Decision is Allow or Deny; anything else fails closed.
	Decision Decision
	// Source is SourceApproval (an answer, or a learned rule),
	// SourceApprovalTimeout (nobody answered in time) or, with Deny only,
	// SourceApprovalUnavailable (an upstream's queue could not take it).
	Source Source
	Reason string
	Info   ApprovalInfo
}

// ApprovalInfo says which approval decided a check, and who answered.
type ApprovalInfo struct {
	// ID names the pending approval (empty when a learned rule decided
	// without one).
	ID string
	// By is the approver's identity; empty on a timeout.
	By string
	// How is once, rule (the answer also taught a rule) or timeout;
	// learned when a rule learned from an earlier answer decided.
	How string
	// At is when it was answered.
	At time.Time
	// Rule is the learned rule that allowed the call, or that the answer
	// taught.
	Rule string
}

// How values.
const (
	HowOnce    = "once"
	HowRule    = "rule"
	HowTimeout = "timeout"
	HowLearned = "learned"
)

// ApprovalSpec says which of an unattended check's questions are queued
// for an approver, and for how long (a policy's unattended section with
// on_ask: approve).
type ApprovalSpec struct {
	// Timeout is how long a queued question waits; zero means
	// DefaultApprovalTimeout.
	Timeout time.Duration
	// OnTimeout is the outcome when nobody answers: Deny (the zero value
	// means Deny) or Allow.
	OnTimeout Decision
	// Sources are the sources whose questions are queued; the others are
	// denied as with on_ask: deny. Empty means every source.
	Sources []Source
}

// ErrApprovalInterrupted is an approver's error for a wait cut short
// without an outcome (the server is shutting down): the check is not
// answered, so that the caller asks again, where the question is still
// queued, rather than take a deny.
var ErrApprovalInterrupted = errors.New("the wait for an approver was interrupted")

// Bounds of an approval's wait.
const (
	DefaultApprovalTimeout = 10 * time.Minute
	MaxApprovalTimeout     = 24 * time.Hour
)

// Compile checks the spec and fills in its defaults.
func (s *ApprovalSpec) Compile() (ApprovalSpec, error) {
	if s == nil {
		return ApprovalSpec{}, nil
	}
	return s.compile()
}

func (s ApprovalSpec) compile() (ApprovalSpec, error) {
	switch {
	case s.Timeout == 0:
		s.Timeout = DefaultApprovalTimeout
	case s.Timeout < time.Second || s.Timeout > MaxApprovalTimeout:
		return s, fmt.Errorf("unattended.approval_timeout: must be between 1s and %s, got %s", MaxApprovalTimeout, s.Timeout)
	}
	switch s.OnTimeout {
	case DecisionUnspecified:
		s.OnTimeout = Deny
	case Allow, Deny:
	default:
		return s, fmt.Errorf("unattended.on_timeout: must be deny or allow, got %s", s.OnTimeout)
	}
	for i, src := range s.Sources {
		if src <= SourceUnspecified || src >= SourceApproval {
			return s, fmt.Errorf("unattended.approve_sources[%d]: %s is not a source that asks", i, src)
		}
	}
	return s, nil
}

// queues reports whether an Ask from src is queued under the spec.
func (s *ApprovalSpec) queues(src Source) bool {
	return len(s.Sources) == 0 || slices.Contains(s.Sources, src)
}

// queuesForApproval reports whether res, an unattended check's outcome,
// is a question the policy queues for an approver.
func (p *policy) queuesForApproval(req *Request, res Result) bool {
	return req.Unattended && res.Decision == Ask && p.approval != nil && p.approval.queues(res.Source)
}

// approve takes an unattended Ask to the approver. The result is Allow or
// Deny, never Ask: nobody is at the terminal to answer one.
// It returns an error, and no result, only when the wait ended without
// an outcome: ctx ended, or the approver was interrupted.
func (e *Engine) approve(ctx context.Context, p *policy, req *Request, asked Result) (Result, error) {
	res := asked
	if e.approver == nil {
		res.Decision, res.Source = Deny, SourceApprovalUnavailable
		res.Reason = fmt.Sprintf("denied: policy %s queues this unattended question for an approver, but this server has no approval queue (approvals, or an upstream with one); asked: %s", p.name, asked.Reason)
		return res, nil
	}
	v, err := e.approver.Approve(ctx, &ApprovalInput{Request: req, Kind: asked.Kind, Policy: p.name, PolicyVersion: e.version,
		Asked: asked, Timeout: p.approval.Timeout, OnTimeout: p.approval.OnTimeout})
	switch {
	case err != nil && ctx.Err() != nil:
		return Result{}, ctx.Err()
	case errors.Is(err, ErrApprovalInterrupted):
		return Result{}, err
	case err != nil:
		res.Decision, res.Source = Deny, SourceApprovalUnavailable
		res.Reason = fmt.Sprintf("denied: the approval queue failed, so the call is not allowed: %v; asked: %s", err, asked.Reason)
		return res, nil
	case !(v.Source == SourceApproval || v.Source == SourceApprovalTimeout) && !(v.Decision == Deny && v.Source == SourceApprovalUnavailable),
		v.Decision != Allow && v.Decision != Deny:
		res.Decision, res.Source = Deny, SourceApprovalUnavailable
		res.Reason = fmt.Sprintf("denied: the approval queue gave no answer it may give (%s from %s); asked: %s", v.Decision, v.Source, asked.Reason)
		return res, nil
	}
	res.Decision, res.Source, res.Reason, res.MatchedRule = v.Decision, v.Source, v.Reason, ""
	if v.Info.How == HowLearned {
		res.MatchedRule = v.Info.Rule
	}
	info := v.Info
	res.Approval = &info
	return res, nil
}

// Approve queues a question another toolgate's stages asked about an
// unattended check (a local server's, through its upstream link) with this
// engine's approver, under this engine's policy of in.Policy: its timeout,
// its outcome on timeout and its sources, not the sender's. A question the
// policy does not queue is denied. It returns an error only for an
// unknown policy or a request that is not an unattended Ask.
func (e *Engine) Approve(ctx context.Context, in *ApprovalInput) (Result, error) {
	if in == nil || in.Request == nil {
		return Result{}, fmt.Errorf("%w: no request to approve", ErrInvalidRequest)
	}
	if !in.Request.Unattended || in.Asked.Decision != Ask {
		return Result{}, fmt.Errorf("%w: only an unattended check's ask is queued for approval", ErrInvalidRequest)
	}
	name := in.Policy
	if name == "" {
		name = DefaultPolicy
	}
	p, ok := e.policies[name]
	if !ok {
		return Result{}, fmt.Errorf("%w %q", ErrUnknownPolicy, name)
	}
	res, _, err := e.unattended(ctx, p, in.Request, in.Asked, false)
	if err != nil {
		return Result{}, err
	}
	res.Kind, res.Policy, res.PolicyVersion = in.Kind, name, e.version
	return res, nil
}
