package approvals

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/toolgate/toolgate/approvals/store"
	"github.com/toolgate/toolgate/redact"
)

// Answer is an approver's answer to a pending approval.
type Answer struct {
	Allow bool
	// AsRule (allow only) also teaches a rule: the same call, in the same
	// project and policy, is allowed without asking until it expires.
	AsRule bool
	// RuleTTL is the learned rule's life; zero means the queue's
	// default, and more than its maximum is refused.
	RuleTTL time.Duration
	// By is the approver's identity, from their credentials; required.
	By string
}

// ErrRuleNotPossible is an allow as a rule for a call no rule can name
// exactly.
var ErrRuleNotPossible = errors.New("this call cannot be taught as a rule")

// List returns the approvals still pending, oldest first.
func (q *Queue) List(ctx context.Context, limit int) ([]store.Pending, error) {
	return q.st.ListPending(ctx, limit)
}

// Get returns one approval, settled or not (store.ErrNotFound).
func (q *Queue) Get(ctx context.Context, id string) (store.Pending, error) {
	return q.st.GetPending(ctx, id)
}

// Answer settles a pending approval with a's answer, exactly once across
// every replica: when it is settled already it returns store.ErrSettled
// and the approval as settled. An allow as a rule also stores the rule
// the answer teaches: it names the exact call (the tool and its whole
// input), the approval's project and policy, and it expires. It is only
// consulted where the call would have been queued, so it never overrides a
// deny.
func (q *Queue) Answer(ctx context.Context, id string, a Answer) (store.Pending, error) {
	if a.By == "" {
		return store.Pending{}, fmt.Errorf("%w: an answer needs the approver's identity", store.ErrInvalid)
	}
	ttl := a.RuleTTL
	if a.AsRule {
		if !a.Allow {
			return store.Pending{}, fmt.Errorf("%w: only an allow can be given as a rule", store.ErrInvalid)
		}
		if ttl == 0 {
			ttl = q.opts.RuleTTL
		}
		if ttl < time.Minute || ttl > q.opts.MaxRuleTTL {
			return store.Pending{}, fmt.Errorf("%w: a learned rule lives between 1m and %s, got %s", store.ErrInvalid, q.opts.MaxRuleTTL, ttl)
		}
	}
	ans := store.Answer{Status: store.StatusDenied, By: a.By, At: q.opts.Now(), How: store.HowOnce}
	if a.Allow {
		ans.Status = store.StatusAllowed
	}
	var rule *store.Rule
	if a.AsRule {
		ans.How = store.HowRule
		p, err := q.st.GetPending(ctx, id)
		if err != nil {
			return store.Pending{}, err
		}
		if p.Status != store.StatusPending {
			return p, store.ErrSettled
		}
		text := ruleOf(p)
		if text == "" {
			return store.Pending{}, ErrRuleNotPossible
		}
		// Stored with the answer, in one transaction, and only if the
		// answer stands: the check the answer releases may be followed
		// at once by the same call, which the rule must meet.
		rule = &store.Rule{ID: "rule-" + rand.Text(), Text: text, Project: p.Project, Origin: p.Origin, Policy: p.Policy,
			CreatedBy: a.By, CreatedAt: ans.At, ExpiresAt: ans.At.Add(ttl), PendingID: p.ID}
		ans.Rule = rule
	}
	p, err := q.st.AnswerPending(ctx, id, ans)
	if err != nil {
		return p, err
	}
	q.event("approval answered", zap.String("approval_id", p.ID), zap.String("approver", a.By),
		zap.String("status", string(ans.Status)), zap.String("how", string(ans.How)), zap.String("tool", p.Tool), zap.String("project", p.Project))
	if rule != nil {
		q.event("rule learned", zap.String("rule_id", rule.ID), zap.String("rule", redact.String(rule.Text)), zap.String("project", rule.Project), zap.String("origin", rule.Origin),
			zap.String("policy", rule.Policy), zap.String("approver", a.By), zap.Time("expires", rule.ExpiresAt), zap.String("approval_id", p.ID))
	}
	return p, nil
}

// Rules returns the learned rules in force, oldest first.
func (q *Queue) Rules(ctx context.Context) ([]store.Rule, error) {
	return q.st.ListRules(ctx, q.opts.Now(), store.MaxLimit)
}

// DeleteRule removes a learned rule before it expires.
func (q *Queue) DeleteRule(ctx context.Context, id, by string) error {
	if by == "" {
		return fmt.Errorf("%w: deleting a rule needs the approver's identity", store.ErrInvalid)
	}
	if err := q.st.DeleteRule(ctx, id); err != nil {
		return err
	}
	q.event("rule deleted", zap.String("rule_id", id), zap.String("approver", by))
	return nil
}

// Records returns the fleet's decision records, newest first.
func (q *Queue) Records(ctx context.Context, f store.RecordFilter) ([]store.Record, error) {
	return q.st.QueryRecords(ctx, f)
}

// Maintain settles the approvals whose deadline passed with nobody
// waiting on them (a waiting check settles its own), so that approvers
// see them as expired, and deletes what is older than retention: decision
// records, settled approvals and expired rules. The centre runs it on a
// schedule; several replicas may run it at once.
func (q *Queue) Maintain(ctx context.Context, retention time.Duration) (expired, pruned int, err error) {
	now := q.opts.Now()
	for {
		ps, err := q.st.ExpireDue(ctx, now, store.MaxLimit)
		expired += len(ps)
		for _, p := range ps {
			q.event("approval expired", zap.String("approval_id", p.ID), zap.String("outcome", string(p.Answer.Outcome)))
		}
		if err != nil {
			return expired, pruned, err
		}
		if len(ps) < store.MaxLimit {
			break
		}
	}
	pruned, err = q.st.Prune(ctx, now.Add(-retention), 10*store.MaxLimit)
	return expired, pruned, err
}
