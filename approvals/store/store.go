// Package store keeps what a central toolgate's approvals need to survive
// a restart and to share between replicas: pending approvals and their
// answers, rules learned from answers, and the decision records local
// servers ship. One interface, two backends: PostgreSQL (several central
// replicas over one database) and an embedded SQLite file (one server).
//
// Every query runs under a deadline (Options.QueryTimeout within the
// caller's context), every list is limited, every value is bounded in size
// and every SQL statement is a constant with parameters: nothing a client
// or an approver sends is ever part of a statement's text.
package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Status is where a pending approval stands.
type Status string

const (
	StatusPending Status = "pending"
	StatusAllowed Status = "allowed"
	StatusDenied  Status = "denied"
	// StatusExpired is a pending approval whose deadline passed before an
	// answer; its Answer.Outcome is the policy's outcome (OnTimeout).
	StatusExpired Status = "expired"
)

// Outcome is what a settled approval means for the waiting check.
type Outcome string

const (
	OutcomeAllow Outcome = "allow"
	OutcomeDeny  Outcome = "deny"
)

// How is how an approver answered.
type How string

const (
	HowOnce    How = "once"    // this call only
	HowRule    How = "rule"    // this call, and a learned rule for the next ones (allow only)
	HowTimeout How = "timeout" // nobody answered before the deadline
)

// Pending is one call waiting for an approver.
type Pending struct {
	ID       string
	Created  time.Time
	Deadline time.Time
	// Request is the check as the centre received it (CheckRequest proto
	// bytes or JSON); Display is its redacted input, the only part a page
	// shows.
	Request []byte
	Display string
	Host    string
	// Origin is who asked, as the centre authenticated them (a local
	// server's or a client's token name, else its address): the caps on
	// pending approvals count by it, and a learned rule is scoped to it.
	// Host is what the asker says it is, for approvers to read.
	Origin  string
	Project string
	Session string
	Tool    string
	// Policy is the named policy the check ran under: a rule learned
	// from the answer adds to it.
	Policy string
	// Reason is the local decision's reason (why it was ASK).
	Reason string
	// LastWords is what the user last said to the agent, redacted, for
	// the approver's context.
	LastWords string
	// OnTimeout is the policy's outcome when the deadline passes
	// unanswered; empty means deny.
	OnTimeout Outcome
	// Status and Answer are set by the store: Create ignores them.
	Status Status
	Answer Answer // zero while pending
}

// Answer settles a pending approval, once.
type Answer struct {
	// Status is StatusAllowed or StatusDenied when an approver answers,
	// StatusExpired when the deadline passed.
	Status  Status
	Outcome Outcome // allow or deny; set by the store from Status or OnTimeout
	By      string  // the approver's identity; empty on expiry
	At      time.Time
	How     How
	// Rule, with How rule, is stored in the same transaction as the
	// answer, only if the answer stands.
	Rule *Rule
}

// Rule is a rule learned from an answer ("allow as a rule").
type Rule struct {
	ID        string
	Text      string // the permission rule, as the rules syntax writes it
	Project   string // the project it is scoped to
	Origin    string // the asker it is scoped to (Pending.Origin)
	Policy    string // the policy it adds to
	CreatedBy string // the approver
	CreatedAt time.Time
	ExpiresAt time.Time // required: a learned rule always expires
	PendingID string    // the approval it was learned from; may be empty
}

// Record is one decision record a local server shipped to the centre.
type Record struct {
	// ID is the sender's record id: appending the same id again (a resend
	// after a lost acknowledgement) is ignored.
	ID       string
	Time     time.Time
	Host     string
	Project  string
	Session  string
	Tool     string
	Decision string // allow, deny, ask
	Source   string // the decision source
	Reason   string
	// ApprovalID links an ASK that became a pending approval to it.
	ApprovalID string
	// Data is the whole record as the sender encoded it (JSON or proto).
	Data []byte
}

// RecordFilter selects recent records; empty fields match everything.
type RecordFilter struct {
	Host, Project, Session, Decision, Source string
	// Before, when set, returns records strictly older (paging).
	Before time.Time
	Limit  int // <= 0 means DefaultLimit; capped at MaxLimit
}

// Store is the approvals' storage. All methods are safe for concurrent use
// by several goroutines, and (PostgreSQL) by several stores over one
// database.
type Store interface {
	// CreatePending stores a new pending approval (ErrExists when its id
	// is taken).
	CreatePending(ctx context.Context, p Pending) error
	// GetPending returns one approval, settled or not (ErrNotFound).
	GetPending(ctx context.Context, id string) (Pending, error)
	// ListPending returns approvals still pending, oldest first.
	ListPending(ctx context.Context, limit int) ([]Pending, error)
	// CountPending counts the approvals still pending, in all and those
	// whose Origin is origin.
	CountPending(ctx context.Context, origin string) (total, fromOrigin int, err error)
	// CreatePendingCapped is CreatePending that refuses (ErrFull) when
	// maxTotal approvals are pending already, or maxOrigin from p's
	// Origin: the count and the insert are one transaction, serialized
	// across replicas.
	CreatePendingCapped(ctx context.Context, p Pending, maxTotal, maxOrigin int) error
	// AnswerPending settles a pending approval with an approver's answer,
	// exactly once, and only before its deadline (after it, the approval
	// is settled as expired and the answer refused with ErrSettled): when it is already settled (a concurrent answer, on
	// this store or another, or its expiry won) it returns ErrSettled and
	// the approval as settled. It returns the approval as answered.
	AnswerPending(ctx context.Context, id string, a Answer) (Pending, error)
	// ExpireDue settles at most limit pending approvals whose deadline is
	// at or before now with their OnTimeout outcome, and returns them.
	ExpireDue(ctx context.Context, now time.Time, limit int) ([]Pending, error)
	// WaitAnswered returns the approval's answer once it is settled, on
	// any store over the same database; when its deadline passes first it
	// settles it as expired itself. It returns ctx's error when ctx ends
	// first, and ErrNotFound for an unknown id.
	WaitAnswered(ctx context.Context, id string) (Answer, error)

	// AddRule stores a learned rule (ErrExists when its id is taken).
	AddRule(ctx context.Context, r Rule) error
	// ListRules returns the rules in force at t (not yet expired), oldest
	// first.
	ListRules(ctx context.Context, at time.Time, limit int) ([]Rule, error)
	// FindRule returns a rule in force at t whose text, project, policy
	// and origin are r's (ErrNotFound when there is none): the lookup a
	// queued question makes, one indexed query.
	FindRule(ctx context.Context, r Rule, at time.Time) (Rule, error)
	// DeleteRule removes a rule (ErrNotFound when there is none).
	DeleteRule(ctx context.Context, id string) error

	// AppendRecords stores records, ignoring ids already stored, and
	// returns how many were new. It is one transaction: all or none.
	AppendRecords(ctx context.Context, recs []Record) (int, error)
	// QueryRecords returns matching records, newest first.
	QueryRecords(ctx context.Context, f RecordFilter) ([]Record, error)

	// Prune deletes, at most limit rows of each kind, what is over by
	// before: decision records older than it, approvals settled before
	// it, and rules expired by then. It returns how many rows went. The
	// centre runs it on a schedule: nothing else deletes.
	Prune(ctx context.Context, before time.Time, limit int) (int, error)

	Close() error
}

// Errors the stores return; test them with errors.Is.
var (
	ErrNotFound = errors.New("not found")
	ErrExists   = errors.New("id already exists")
	ErrSettled  = errors.New("approval already settled")
	ErrInvalid  = errors.New("invalid value")
	// ErrSchemaTooNew is a database written by a newer toolgate: this one
	// refuses it rather than misread it.
	ErrSchemaTooNew = errors.New("store schema is newer than this toolgate knows")
	ErrClosed       = errors.New("store closed")
	// ErrFull is a pending approval refused by CreatePendingCapped's caps.
	ErrFull = errors.New("too many pending approvals")
)

// Bounds on what is stored and returned.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
	// MaxAppend is the most records one AppendRecords takes.
	MaxAppend = 1000

	MaxIDBytes      = 128
	MaxFieldBytes   = 1024      // host, project, session, tool, approver, policy, decision, source
	MaxReasonBytes  = 4 << 10   // reasons, the user's last words
	MaxRuleBytes    = 4 << 10   // a rule's text
	MaxDisplayBytes = 64 << 10  // the redacted input shown to approvers
	MaxRequestBytes = 256 << 10 // the check as received
	MaxRecordBytes  = 64 << 10  // one decision record's data
)

// Options tunes a store; the zero value takes the defaults.
type Options struct {
	// QueryTimeout bounds each query within the caller's context.
	QueryTimeout time.Duration
	// PollInterval is how often WaitAnswered re-reads an approval when no
	// notification came (PostgreSQL: a lost LISTEN connection, a dropped
	// notification). The in-process SQLite store needs none.
	PollInterval time.Duration
	// Now is the clock (tests); time.Now when nil.
	Now func() time.Time
	// Waiting, when set, is called each time WaitAnswered has read the
	// approval still pending and is about to block: tests answer then, to
	// prove that the answer (and not the first read) released it.
	Waiting func(id string)
}

func (o Options) withDefaults() Options {
	if o.QueryTimeout <= 0 {
		o.QueryTimeout = 5 * time.Second
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 2 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Fit makes s a value the store takes where it allows n bytes: valid
// UTF-8, cut on a rune boundary. What exceeds a bound is cut rather than
// refused where refusing would lose more (a batch of records, a question
// for an approver).
func Fit(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

func clampLimit(n int) int {
	if n <= 0 {
		return DefaultLimit
	}
	return min(n, MaxLimit)
}

// checker collects what is wrong with a value before it reaches a query.
type checker struct{ errs []error }

func (c *checker) str(field, v string, max int, required bool) {
	switch {
	case required && v == "":
		c.errs = append(c.errs, fmt.Errorf("%w: %s is required", ErrInvalid, field))
	case len(v) > max:
		c.errs = append(c.errs, fmt.Errorf("%w: %s is %d bytes, more than %d", ErrInvalid, field, len(v), max))
	case !utf8.ValidString(v):
		c.errs = append(c.errs, fmt.Errorf("%w: %s is not valid UTF-8", ErrInvalid, field))
	}
}

func (c *checker) bytes(field string, v []byte, max int) {
	if len(v) > max {
		c.errs = append(c.errs, fmt.Errorf("%w: %s is %d bytes, more than %d", ErrInvalid, field, len(v), max))
	}
}

func (c *checker) fail(format string, a ...any) {
	c.errs = append(c.errs, fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, a...)))
}

func (c *checker) err() error { return errors.Join(c.errs...) }

func checkPending(p *Pending) error {
	var c checker
	c.str("id", p.ID, MaxIDBytes, true)
	c.bytes("request", p.Request, MaxRequestBytes)
	c.str("display", p.Display, MaxDisplayBytes, false)
	c.str("host", p.Host, MaxFieldBytes, false)
	c.str("origin", p.Origin, MaxFieldBytes, false)
	c.str("project", p.Project, MaxFieldBytes, false)
	c.str("session", p.Session, MaxFieldBytes, false)
	c.str("tool", p.Tool, MaxFieldBytes, false)
	c.str("policy", p.Policy, MaxFieldBytes, false)
	c.str("reason", p.Reason, MaxReasonBytes, false)
	c.str("last_words", p.LastWords, MaxReasonBytes, false)
	if p.Created.IsZero() || p.Deadline.IsZero() {
		c.fail("created and deadline are required")
	} else if !p.Deadline.After(p.Created) {
		c.fail("deadline %s is not after created %s", p.Deadline, p.Created)
	}
	switch p.OnTimeout {
	case "":
		// An approval nobody answers fails closed.
		p.OnTimeout = OutcomeDeny
	case OutcomeAllow, OutcomeDeny:
	default:
		c.fail("on_timeout %q is neither allow nor deny", p.OnTimeout)
	}
	return c.err()
}

func checkAnswer(a *Answer) error {
	var c checker
	c.str("answer.by", a.By, MaxFieldBytes, true)
	switch a.Status {
	case StatusAllowed:
		a.Outcome = OutcomeAllow
	case StatusDenied:
		a.Outcome = OutcomeDeny
	default:
		c.fail("an answer's status is allowed or denied, got %q", a.Status)
	}
	switch a.How {
	case HowOnce:
		if a.Rule != nil {
			c.fail("a rule comes with an answer given as a rule")
		}
	case HowRule:
		if a.Status != StatusAllowed {
			c.fail("only an allow can be given as a rule")
		}
		if a.Rule != nil {
			if err := checkRule(a.Rule); err != nil {
				c.errs = append(c.errs, err)
			}
		}
	default:
		c.fail("an answer's how is once or rule, got %q", a.How)
	}
	return c.err()
}

func checkRule(r *Rule) error {
	var c checker
	c.str("id", r.ID, MaxIDBytes, true)
	c.str("text", r.Text, MaxRuleBytes, true)
	c.str("project", r.Project, MaxFieldBytes, false)
	c.str("origin", r.Origin, MaxFieldBytes, false)
	c.str("policy", r.Policy, MaxFieldBytes, false)
	c.str("created_by", r.CreatedBy, MaxFieldBytes, true)
	c.str("pending_id", r.PendingID, MaxIDBytes, false)
	if r.CreatedAt.IsZero() || r.ExpiresAt.IsZero() {
		c.fail("created_at and expires_at are required: a learned rule always expires")
	} else if !r.ExpiresAt.After(r.CreatedAt) {
		c.fail("expires_at %s is not after created_at %s", r.ExpiresAt, r.CreatedAt)
	}
	return c.err()
}

func checkRecord(r *Record) error {
	var c checker
	c.str("id", r.ID, MaxIDBytes, true)
	if r.Time.IsZero() {
		c.fail("record %q has no time", r.ID)
	}
	c.str("host", r.Host, MaxFieldBytes, false)
	c.str("project", r.Project, MaxFieldBytes, false)
	c.str("session", r.Session, MaxFieldBytes, false)
	c.str("tool", r.Tool, MaxFieldBytes, false)
	c.str("decision", r.Decision, MaxFieldBytes, false)
	c.str("source", r.Source, MaxFieldBytes, false)
	c.str("reason", r.Reason, MaxReasonBytes, false)
	c.str("approval_id", r.ApprovalID, MaxIDBytes, false)
	c.bytes("data", r.Data, MaxRecordBytes)
	return c.err()
}

func checkFilter(f *RecordFilter) error {
	var c checker
	for _, v := range []struct{ n, v string }{{"host", f.Host}, {"project", f.Project}, {"session", f.Session}, {"decision", f.Decision}, {"source", f.Source}} {
		c.str("filter."+v.n, v.v, MaxFieldBytes, false)
	}
	f.Limit = clampLimit(f.Limit)
	return c.err()
}
