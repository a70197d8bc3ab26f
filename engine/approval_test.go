package engine

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// fakeApprover answers every question with verdict (or err), and records
// what it was asked.
type fakeApprover struct {
	mu      sync.Mutex
	verdict ApprovalVerdict
	err     error
	asked   []*ApprovalInput
}

func (f *fakeApprover) Approve(_ context.Context, in *ApprovalInput) (ApprovalVerdict, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, in)
	return f.verdict, f.err
}

func approvingEngine(t *testing.T, spec PolicySpec, a Approver) *Engine {
	t.Helper()
	e, err := New(Config{Policies: policyOf(spec), Approver: a})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestApprovalQueuesEveryAsk: with on_ask: approve, every unattended ASK,
// whichever stage asked, goes to the approver with the policy's timeout
// and outcome on timeout, and its answer decides, naming the approval;
// ALLOW and DENY never reach it, nor does an attended check.
func TestApprovalQueuesEveryAsk(t *testing.T) {
	l := newLayout(t)
	spec := func(s PolicySpec) PolicySpec {
		s.Unattended = UnattendedSpec{Approval: &ApprovalSpec{Timeout: 3 * time.Minute, OnTimeout: Allow}}
		return s
	}
	for _, tc := range unattendedCases() {
		t.Run(tc.name, func(t *testing.T) {
			fa := &fakeApprover{verdict: ApprovalVerdict{Decision: Allow, Source: SourceApproval, Reason: "allowed by alice",
				Info: ApprovalInfo{ID: "ap-1", By: "alice", How: HowOnce}}}
			plain := tc.engine(t, PolicySpec{})
			attended := mustCheck(t, plain, tc.req(l))
			// The case's engine, with the approver and the approve setting.
			e := tc.engine(t, spec(PolicySpec{}))
			e.approver = fa
			req := tc.req(l)
			req.Unattended = true
			got := mustCheck(t, e, req)
			if tc.want.d != Ask {
				if len(fa.asked) != 0 || got.Decision != attended.Decision || got.Source != attended.Source {
					t.Fatalf("%+v (approver asked %d times): an allow or a deny must not change", got, len(fa.asked))
				}
				return
			}
			if len(fa.asked) != 1 {
				t.Fatalf("approver asked %d times", len(fa.asked))
			}
			in := fa.asked[0]
			if in.Timeout != 3*time.Minute || in.OnTimeout != Allow || in.Asked.Source != tc.want.s || in.Asked.Decision != Ask || in.Policy != DefaultPolicy || in.Request != req {
				t.Errorf("asked %+v", in)
			}
			want{d: Allow, s: SourceApproval, reason: "allowed by alice"}.check(t, got)
			if got.Approval == nil || got.Approval.By != "alice" || got.Approval.ID != "ap-1" {
				t.Errorf("approval %+v", got.Approval)
			}
			// Attended, nobody is asked.
			fa.asked = nil
			if got := mustCheck(t, e, tc.req(l)); got.Decision != Ask || len(fa.asked) != 0 {
				t.Errorf("attended: %+v, approver asked %d times", got, len(fa.asked))
			}
		})
	}
}

// TestApprovalFailsClosed: no approver, a failing one, or one that answers
// what an approval cannot (ASK, or an allow under another source) is a
// DENY with source approval_unavailable.
func TestApprovalFailsClosed(t *testing.T) {
	l := newLayout(t)
	spec := PolicySpec{Permissions: RuleSet{Ask: []string{"Bash(git push *)"}}, Unattended: UnattendedSpec{Approval: &ApprovalSpec{OnTimeout: Allow}}}
	req := func() *Request {
		return &Request{Tool: bashCmd("git push origin"), WorkingDirectory: l.app, Unattended: true}
	}
	for name, a := range map[string]Approver{
		"none":                nil,
		"error":               &fakeApprover{err: errors.New("store down")},
		"ask":                 &fakeApprover{verdict: ApprovalVerdict{Decision: Ask, Source: SourceApproval}},
		"allow, wrong source": &fakeApprover{verdict: ApprovalVerdict{Decision: Allow, Source: SourceRule}},
		"allow, unavailable":  &fakeApprover{verdict: ApprovalVerdict{Decision: Allow, Source: SourceApprovalUnavailable}},
		"no decision":         &fakeApprover{verdict: ApprovalVerdict{Source: SourceApproval}},
	} {
		t.Run(name, func(t *testing.T) {
			got := mustCheck(t, approvingEngine(t, spec, a), req())
			// The rule that asked stays named.
			want{d: Deny, s: SourceApprovalUnavailable, rule: "Bash(git push *)"}.check(t, got)
		})
	}
	// A deny that an upstream could not queue is passed on as a deny.
	fa := &fakeApprover{verdict: ApprovalVerdict{Decision: Deny, Source: SourceApprovalUnavailable, Reason: "the centre has no queue"}}
	want{d: Deny, s: SourceApprovalUnavailable, reason: "the centre has no queue"}.check(t, mustCheck(t, approvingEngine(t, spec, fa), req()))
	// Timeout outcomes are the approver's to give.
	fa = &fakeApprover{verdict: ApprovalVerdict{Decision: Allow, Source: SourceApprovalTimeout, Reason: "nobody answered", Info: ApprovalInfo{How: HowTimeout}}}
	want{d: Allow, s: SourceApprovalTimeout}.check(t, mustCheck(t, approvingEngine(t, spec, fa), req()))
}

// TestApprovalSources: only the questions of approve_sources are queued;
// the others are denied as with on_ask: deny, saying why.
func TestApprovalSources(t *testing.T) {
	l := newLayout(t)
	fa := &fakeApprover{verdict: ApprovalVerdict{Decision: Allow, Source: SourceApproval, Reason: "ok"}}
	e := approvingEngine(t, PolicySpec{Permissions: RuleSet{Ask: []string{"Bash(git push *)"}},
		Unattended: UnattendedSpec{Approval: &ApprovalSpec{Sources: []Source{SourceRule}}}}, fa)
	want{d: Allow, s: SourceApproval}.check(t, mustCheck(t, e, &Request{Tool: bashCmd("git push origin"), WorkingDirectory: l.app, Unattended: true}))
	got := mustCheck(t, e, &Request{Tool: bashCmd("make deploy"), WorkingDirectory: l.app, Unattended: true})
	want{d: Deny, s: SourceNoClassifier, reason: "queues for an approver only the questions of unattended.approve_sources, which no_classifier is not"}.check(t, got)
	if len(fa.asked) != 1 {
		t.Errorf("approver asked %d times, want once", len(fa.asked))
	}
	if _, err := New(Config{Policies: policyOf(PolicySpec{Unattended: UnattendedSpec{Approval: &ApprovalSpec{Sources: []Source{SourceApproval}}}})}); err == nil {
		t.Error("approve_sources took the approval source itself")
	}
	if _, err := New(Config{Policies: policyOf(PolicySpec{Unattended: UnattendedSpec{Approval: &ApprovalSpec{Timeout: 25 * time.Hour}}})}); err == nil {
		t.Error("an approval timeout over the maximum was taken")
	}
}

// TestApprovalNotInCheckLocal: a stream's CheckLocal answers at once; a
// question the policy queues is left undecided there, for a worker's
// Check to wait on, and the approver is not asked.
func TestApprovalNotInCheckLocal(t *testing.T) {
	l := newLayout(t)
	fa := &fakeApprover{verdict: ApprovalVerdict{Decision: Allow, Source: SourceApproval, Reason: "ok"}}
	e := approvingEngine(t, PolicySpec{Permissions: RuleSet{Ask: []string{"Bash(git push *)"}}, Unattended: UnattendedSpec{Approval: &ApprovalSpec{}}}, fa)
	req := &Request{Tool: bashCmd("git push origin"), WorkingDirectory: l.app, Unattended: true}
	if _, decided, err := e.CheckLocal(t.Context(), req); err != nil || decided || len(fa.asked) != 0 {
		t.Fatalf("CheckLocal decided %v, err %v, approver asked %d times", decided, err, len(fa.asked))
	}
	want{d: Allow, s: SourceApproval}.check(t, mustCheck(t, e, req))
}

// TestEngineApprove: a centre queues a local server's question under its
// own policy of that name; a policy that does not queue denies it; only
// an unattended ASK is taken.
func TestEngineApprove(t *testing.T) {
	fa := &fakeApprover{verdict: ApprovalVerdict{Decision: Deny, Source: SourceApproval, Reason: "denied by bob"}}
	e, err := New(Config{Approver: fa, Policies: map[string]PolicySpec{
		DefaultPolicy: {},
		"ci":          {Unattended: UnattendedSpec{Approval: &ApprovalSpec{Timeout: time.Minute}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	in := func(policy string) *ApprovalInput {
		return &ApprovalInput{Request: &Request{Tool: bashCmd("make deploy"), WorkingDirectory: "/w", Unattended: true}, Policy: policy,
			Asked: Result{Decision: Ask, Source: SourceRule, Reason: "asked"}, Timeout: 24 * time.Hour, OnTimeout: Allow}
	}
	res, err := e.Approve(t.Context(), in("ci"))
	if err != nil || res.Decision != Deny || res.Source != SourceApproval || len(fa.asked) != 1 {
		t.Fatalf("ci: %+v, %v", res, err)
	}
	if got := fa.asked[0]; got.Timeout != time.Minute || got.OnTimeout != Deny {
		t.Errorf("the sender's timeout and outcome were used: %+v", got)
	}
	if res, err := e.Approve(t.Context(), in("")); err != nil || res.Decision != Deny || res.Source != SourceRule || len(fa.asked) != 1 {
		t.Errorf("default policy (no queue): %+v, %v", res, err)
	}
	if _, err := e.Approve(t.Context(), in("nope")); !errors.Is(err, ErrUnknownPolicy) {
		t.Errorf("unknown policy: %v", err)
	}
	bad := in("ci")
	bad.Request.Unattended = false
	if _, err := e.Approve(t.Context(), bad); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("attended: %v", err)
	}
	bad = in("ci")
	bad.Asked.Decision = Allow
	if _, err := e.Approve(t.Context(), bad); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("an allow: %v", err)
	}
}

// TestApprovalInterrupted: a wait that ends without an outcome (the
// server shutting down, the caller gone) leaves the check unanswered, an
// error, never a deny or an allow.
func TestApprovalInterrupted(t *testing.T) {
	l := newLayout(t)
	spec := PolicySpec{Permissions: RuleSet{Ask: []string{"Bash(git push *)"}}, Unattended: UnattendedSpec{Approval: &ApprovalSpec{}}}
	req := &Request{Tool: bashCmd("git push origin"), WorkingDirectory: l.app, Unattended: true}
	e := approvingEngine(t, spec, &fakeApprover{err: ErrApprovalInterrupted})
	if res, err := e.Check(t.Context(), req); !errors.Is(err, ErrApprovalInterrupted) {
		t.Errorf("interrupted: %+v, %v", res, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	e = approvingEngine(t, spec, &fakeApprover{err: context.Canceled})
	if res, err := e.Check(ctx, req); !errors.Is(err, context.Canceled) {
		t.Errorf("caller gone: %+v, %v", res, err)
	}
}
