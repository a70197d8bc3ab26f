package server

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/toolgate/toolgate/approvals"
	"github.com/toolgate/toolgate/approvals/store"
	"github.com/toolgate/toolgate/engine"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

const (
	aliceToken  = "token-for-alice-0123456789"
	bobToken    = "token-for-bob-0123456789"
	laptopToken = "token-for-laptop-0123456789"
	edgeToken   = "token-for-edge1-0123456789"
)

// approvalEnv is a server with an approval queue over SQLite in a
// temporary directory, and a token file of every role.
type approvalEnv struct {
	q       *approvals.Queue
	st      store.Store
	client  pb.ApprovalServiceClient
	waiting chan string // ids of approvals a check has blocked on
}

func newApprovalEnv(t *testing.T, tokens bool) *approvalEnv {
	t.Helper()
	e := &approvalEnv{waiting: make(chan string, 16)}
	st, err := store.OpenSQLite(t.Context(), filepath.Join(t.TempDir(), "approvals.db"), store.Options{
		Waiting: func(id string) {
			select {
			case e.waiting <- id:
			default:
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e.st = st
	e.q = approvals.New(st, approvals.Options{Origin: func(context.Context) string { return "runner-7" }})
	cfg := DefaultConfig()
	cfg.ShutdownTimeout = 5 * time.Second
	if tokens {
		path := filepath.Join(t.TempDir(), "tokens")
		file := "laptop " + laptopToken + "\nedge-1 " + edgeToken + " upstream\nalice " + aliceToken + " approver\nbob " + bobToken + " approver\n"
		if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg.TokenFile = path
	}
	eng, err := engine.New(engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(cfg, eng, zap.NewNop(), WithApprovals(e.q))
	if err != nil {
		t.Fatal(err)
	}
	e.client = pb.NewApprovalServiceClient(serveEnv(t, srv).conn)
	return e
}

func as(ctx context.Context, token string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
}

// verdict is what a queued check's Approve returned.
type verdict struct {
	v   engine.ApprovalVerdict
	err error
}

// ask queues an unattended check's question for cmd, as the engine
// would, and returns the approval's id once the check waits on it; the
// channel gets the check's outcome.
func (e *approvalEnv) ask(t *testing.T, cmd string) (string, <-chan verdict) {
	t.Helper()
	done := make(chan verdict, 1)
	go func() {
		v, err := e.q.Approve(context.Background(), askInput(cmd))
		done <- verdict{v, err}
	}()
	select {
	case id := <-e.waiting:
		return id, done
	case r := <-done:
		t.Fatalf("Approve returned before waiting: %+v", r)
	case <-time.After(10 * time.Second):
		t.Fatal("the check never waited for its approval")
	}
	return "", nil
}

func askInput(cmd string) *engine.ApprovalInput {
	return &engine.ApprovalInput{
		Request: &engine.Request{RequestID: "toolu_" + cmd, SessionID: "s-1", WorkingDirectory: "/work/app", Unattended: true,
			Tool:       engine.ToolCall{Name: "Bash", Input: map[string]any{"command": cmd}},
			Transcript: []engine.TranscriptEntry{{Role: engine.RoleUser, Text: "publish it"}}},
		Kind: engine.KindShell, Policy: "ci",
		Asked:   engine.Result{Decision: engine.Ask, Source: engine.SourceRule, Reason: "matches ask rule Bash(npm publish:*)"},
		Timeout: time.Hour, OnTimeout: engine.Deny,
	}
}

func wantCode(t *testing.T, what string, err error, code codes.Code, msg string) {
	t.Helper()
	if status.Code(err) != code || !strings.Contains(status.Convert(err).Message(), msg) {
		t.Errorf("%s: %v, want %s with %q", what, err, code, msg)
	}
}

// TestApprovalServiceAnswer: a waiting check's approval is listed with
// what the approver needs, answered ALLOW by an approver token, and the
// check gets Allow with that approver's name; a second answer is refused
// with who gave the first.
func TestApprovalServiceAnswer(t *testing.T) {
	e := newApprovalEnv(t, true)
	ctx := as(t.Context(), aliceToken)
	id, done := e.ask(t, "npm publish")

	list, err := e.client.ListApprovals(ctx, &pb.ListApprovalsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.GetApprovals()) != 1 {
		t.Fatalf("listed %v, want the one pending", list.GetApprovals())
	}
	a := list.GetApprovals()[0]
	if a.GetId() != id || a.GetStatus() != "pending" || a.GetTool() != "Bash" || a.GetInput() != "npm publish" || a.GetHost() != "runner-7" ||
		a.GetProject() != "/work/app" || a.GetSessionId() != "s-1" || a.GetPolicy() != "ci" || a.GetLastWords() != "publish it" ||
		!strings.Contains(a.GetReason(), "Bash(npm publish:*)") || a.GetOnTimeout() != "deny" || a.GetRule() != "Bash(npm publish)" ||
		a.GetAnsweredBy() != "" || a.GetCreatedUnixMicros() == 0 || a.GetDeadlineUnixMicros() <= a.GetCreatedUnixMicros() {
		t.Errorf("listed %v", a)
	}

	ans, err := e.client.AnswerApproval(ctx, &pb.AnswerApprovalRequest{Id: id, Answer: pb.ApprovalAnswer_APPROVAL_ANSWER_ALLOW_ONCE})
	if err != nil {
		t.Fatal(err)
	}
	if got := ans.GetApproval(); got.GetStatus() != "allowed" || got.GetAnsweredBy() != "alice" || got.GetHow() != "once" || got.GetAnsweredUnixMicros() == 0 {
		t.Errorf("answered %v", got)
	}
	r := <-done
	if r.err != nil || r.v.Decision != engine.Allow || r.v.Source != engine.SourceApproval || r.v.Info.By != "alice" || r.v.Info.ID != id {
		t.Fatalf("the check got %+v, %v", r.v, r.err)
	}

	_, err = e.client.AnswerApproval(as(t.Context(), bobToken), &pb.AnswerApprovalRequest{Id: id, Answer: pb.ApprovalAnswer_APPROVAL_ANSWER_DENY})
	wantCode(t, "second answer", err, codes.FailedPrecondition, "approval "+id+" is settled already: allowed by alice (once) at ")
	_, err = e.client.AnswerApproval(as(t.Context(), bobToken), &pb.AnswerApprovalRequest{Id: id, Answer: pb.ApprovalAnswer_APPROVAL_ANSWER_ALLOW_AS_RULE})
	wantCode(t, "second answer, as a rule", err, codes.FailedPrecondition, "approval "+id+" is settled already: allowed by alice (once) at ")
	if rules, err := e.client.ListLearnedRules(ctx, &pb.ListLearnedRulesRequest{}); err != nil || len(rules.GetRules()) != 0 {
		t.Errorf("an answer refused taught a rule: %v, %v", rules, err)
	}
	got, err := e.client.GetApproval(ctx, &pb.GetApprovalRequest{Id: id})
	if err != nil || got.GetApproval().GetStatus() != "allowed" || got.GetApproval().GetAnsweredBy() != "alice" {
		t.Errorf("get after answers: %v, %v", got, err)
	}
	if list, err := e.client.ListApprovals(ctx, &pb.ListApprovalsRequest{}); err != nil || len(list.GetApprovals()) != 0 {
		t.Errorf("still listed after the answer: %v, %v", list, err)
	}
}

// TestApprovalServiceDeny: DENY releases the check with Deny and the
// approver's name.
func TestApprovalServiceDeny(t *testing.T) {
	e := newApprovalEnv(t, true)
	id, done := e.ask(t, "npm publish")
	if _, err := e.client.AnswerApproval(as(t.Context(), bobToken), &pb.AnswerApprovalRequest{Id: id, Answer: pb.ApprovalAnswer_APPROVAL_ANSWER_DENY}); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.err != nil || r.v.Decision != engine.Deny || r.v.Source != engine.SourceApproval || r.v.Info.By != "bob" {
		t.Fatalf("the check got %+v, %v", r.v, r.err)
	}
}

// TestApprovalServiceNeedsApprover: a client's or a local server's token
// cannot call any method, nor can anyone on a server without a token file.
func TestApprovalServiceNeedsApprover(t *testing.T) {
	calls := map[string]func(pb.ApprovalServiceClient, context.Context) error{
		"ListApprovals": func(c pb.ApprovalServiceClient, ctx context.Context) error {
			_, err := c.ListApprovals(ctx, &pb.ListApprovalsRequest{})
			return err
		},
		"GetApproval": func(c pb.ApprovalServiceClient, ctx context.Context) error {
			_, err := c.GetApproval(ctx, &pb.GetApprovalRequest{Id: "ap-1"})
			return err
		},
		"AnswerApproval": func(c pb.ApprovalServiceClient, ctx context.Context) error {
			_, err := c.AnswerApproval(ctx, &pb.AnswerApprovalRequest{Id: "ap-1", Answer: pb.ApprovalAnswer_APPROVAL_ANSWER_ALLOW_ONCE})
			return err
		},
		"ListLearnedRules": func(c pb.ApprovalServiceClient, ctx context.Context) error {
			_, err := c.ListLearnedRules(ctx, &pb.ListLearnedRulesRequest{})
			return err
		},
		"DeleteLearnedRule": func(c pb.ApprovalServiceClient, ctx context.Context) error {
			_, err := c.DeleteLearnedRule(ctx, &pb.DeleteLearnedRuleRequest{Id: "rule-1"})
			return err
		},
	}
	withTokens := newApprovalEnv(t, true)
	noTokens := newApprovalEnv(t, false)
	id, done := noTokens.ask(t, "npm publish")
	for name, call := range calls {
		for who, token := range map[string]string{"client": laptopToken, "upstream": edgeToken} {
			wantCode(t, name+" as "+who, call(withTokens.client, as(t.Context(), token)), codes.PermissionDenied, "may not call toolgate.v1.ApprovalService")
		}
		wantCode(t, name+" without a token file", call(noTokens.client, t.Context()), codes.PermissionDenied, "approving takes a token of role approver")
		wantCode(t, name+" without a token file, sending one", call(noTokens.client, as(t.Context(), aliceToken)), codes.PermissionDenied, "approving takes a token of role approver")
	}
	// Not even the approval actually pending there can be answered.
	_, err := noTokens.client.AnswerApproval(t.Context(), &pb.AnswerApprovalRequest{Id: id, Answer: pb.ApprovalAnswer_APPROVAL_ANSWER_ALLOW_ONCE})
	wantCode(t, "answer without a token file", err, codes.PermissionDenied, "server.token_file")
	if p, err := noTokens.q.Get(t.Context(), id); err != nil || p.Status != store.StatusPending {
		t.Fatalf("after refused answers: %+v, %v", p, err)
	}
	// End the waiting check as an approver would, through the queue.
	if _, err := noTokens.q.Answer(t.Context(), id, approvals.Answer{By: "test"}); err != nil {
		t.Fatal(err)
	}
	<-done
}

// TestApprovalServiceRules: allow as a rule teaches a rule that is
// listed, allows the same call at once, and is gone once deleted.
func TestApprovalServiceRules(t *testing.T) {
	e := newApprovalEnv(t, true)
	ctx := as(t.Context(), aliceToken)
	id, done := e.ask(t, "npm publish")
	ans, err := e.client.AnswerApproval(ctx, &pb.AnswerApprovalRequest{Id: id, Answer: pb.ApprovalAnswer_APPROVAL_ANSWER_ALLOW_AS_RULE, RuleTtlSeconds: 8 * 3600})
	if err != nil {
		t.Fatal(err)
	}
	if a := ans.GetApproval(); a.GetHow() != "rule" || a.GetRule() != "Bash(npm publish)" {
		t.Errorf("answered %v", a)
	}
	if r := <-done; r.v.Decision != engine.Allow || r.v.Info.How != engine.HowRule {
		t.Fatalf("the check got %+v, %v", r.v, r.err)
	}
	rules, err := e.client.ListLearnedRules(ctx, &pb.ListLearnedRulesRequest{})
	if err != nil || len(rules.GetRules()) != 1 {
		t.Fatalf("rules %v, %v", rules, err)
	}
	r := rules.GetRules()[0]
	life := time.Duration(r.GetExpiresUnixMicros()-r.GetCreatedUnixMicros()) * time.Microsecond
	if r.GetRule() != "Bash(npm publish)" || r.GetProject() != "/work/app" || r.GetPolicy() != "ci" || r.GetCreatedBy() != "alice" ||
		r.GetApprovalId() != id || life != 8*time.Hour || !strings.HasPrefix(r.GetId(), "rule-") {
		t.Errorf("rule %v (life %s)", r, life)
	}
	// The same call is allowed by the rule, without waiting.
	if v, err := e.q.Approve(t.Context(), askInput("npm publish")); err != nil || v.Decision != engine.Allow || v.Info.How != engine.HowLearned || v.Info.By != "alice" {
		t.Fatalf("the same call again: %+v, %v", v, err)
	}
	if _, err := e.client.DeleteLearnedRule(as(t.Context(), bobToken), &pb.DeleteLearnedRuleRequest{Id: r.GetId()}); err != nil {
		t.Fatal(err)
	}
	if rules, err := e.client.ListLearnedRules(ctx, &pb.ListLearnedRulesRequest{}); err != nil || len(rules.GetRules()) != 0 {
		t.Errorf("rules after delete: %v, %v", rules, err)
	}
	_, err = e.client.DeleteLearnedRule(ctx, &pb.DeleteLearnedRuleRequest{Id: r.GetId()})
	wantCode(t, "delete again", err, codes.NotFound, "learned rule "+r.GetId()+": not found")
}

// TestApprovalServiceInvalid: ids, limits, answers and rule lives out of
// bounds are INVALID_ARGUMENT and leave the approval pending; unknown ids
// are NOT_FOUND.
func TestApprovalServiceInvalid(t *testing.T) {
	e := newApprovalEnv(t, true)
	ctx := as(t.Context(), aliceToken)
	id, done := e.ask(t, "npm publish")
	long := strings.Repeat("x", store.MaxIDBytes+1)
	answer := func(id string, a pb.ApprovalAnswer, ttl int64) error {
		_, err := e.client.AnswerApproval(ctx, &pb.AnswerApprovalRequest{Id: id, Answer: a, RuleTtlSeconds: ttl})
		return err
	}
	for _, tc := range []struct {
		name string
		err  error
		msg  string
	}{
		{"list limit -1", func() error { _, err := e.client.ListApprovals(ctx, &pb.ListApprovalsRequest{Limit: -1}); return err }(), "limit -1: want 0 (meaning 100) to 1000"},
		{"list limit 1001", func() error { _, err := e.client.ListApprovals(ctx, &pb.ListApprovalsRequest{Limit: 1001}); return err }(), "limit 1001"},
		{"get no id", func() error { _, err := e.client.GetApproval(ctx, &pb.GetApprovalRequest{}); return err }(), "id is required"},
		{"get long id", func() error { _, err := e.client.GetApproval(ctx, &pb.GetApprovalRequest{Id: long}); return err }(), "id is 129 bytes, over the limit of 128"},
		{"answer long id", answer(long, pb.ApprovalAnswer_APPROVAL_ANSWER_ALLOW_ONCE, 0), "over the limit of 128"},
		{"answer unspecified", answer(id, pb.ApprovalAnswer_APPROVAL_ANSWER_UNSPECIFIED, 0), "answer: want ALLOW_ONCE, DENY or ALLOW_AS_RULE"},
		{"answer unknown enum", answer(id, pb.ApprovalAnswer(99), 0), "answer: want"},
		{"ttl without rule", answer(id, pb.ApprovalAnswer_APPROVAL_ANSWER_ALLOW_ONCE, 3600), "rule_ttl_seconds goes with ALLOW_AS_RULE only"},
		{"ttl negative", answer(id, pb.ApprovalAnswer_APPROVAL_ANSWER_ALLOW_AS_RULE, -1), "rule_ttl_seconds -1 is out of range"},
		{"ttl overflows", answer(id, pb.ApprovalAnswer_APPROVAL_ANSWER_ALLOW_AS_RULE, 1<<62), "out of range"},
		{"ttl too short", answer(id, pb.ApprovalAnswer_APPROVAL_ANSWER_ALLOW_AS_RULE, 30), "a learned rule lives between 1m and 168h0m0s, got 30s"},
		{"ttl too long", answer(id, pb.ApprovalAnswer_APPROVAL_ANSWER_ALLOW_AS_RULE, 8*24*3600), "a learned rule lives between 1m and"},
		{"delete no id", func() error { _, err := e.client.DeleteLearnedRule(ctx, &pb.DeleteLearnedRuleRequest{}); return err }(), "id is required"},
		{"delete long id", func() error {
			_, err := e.client.DeleteLearnedRule(ctx, &pb.DeleteLearnedRuleRequest{Id: long})
			return err
		}(), "over the limit of 128"},
	} {
		wantCode(t, tc.name, tc.err, codes.InvalidArgument, tc.msg)
	}
	_, err := e.client.GetApproval(ctx, &pb.GetApprovalRequest{Id: "ap-nothere"})
	wantCode(t, "get unknown", err, codes.NotFound, "approval ap-nothere: not found")
	wantCode(t, "answer unknown", answer("ap-nothere", pb.ApprovalAnswer_APPROVAL_ANSWER_DENY, 0), codes.NotFound, "approval ap-nothere: not found")
	wantCode(t, "rule for unknown", answer("ap-nothere", pb.ApprovalAnswer_APPROVAL_ANSWER_ALLOW_AS_RULE, 0), codes.NotFound, "not found")
	if p, err := e.q.Get(t.Context(), id); err != nil || p.Status != store.StatusPending {
		t.Fatalf("after refused answers: %+v, %v", p, err)
	}
	if err := answer(id, pb.ApprovalAnswer_APPROVAL_ANSWER_DENY, 0); err != nil {
		t.Fatal(err)
	}
	<-done
}

// TestApprovalServiceStoreDown: a store that fails is UNAVAILABLE, and
// its error text stays in the server.
func TestApprovalServiceStoreDown(t *testing.T) {
	e := newApprovalEnv(t, true)
	ctx := as(t.Context(), aliceToken)
	if err := e.st.Close(); err != nil {
		t.Fatal(err)
	}
	_, err := e.client.ListApprovals(ctx, &pb.ListApprovalsRequest{})
	wantCode(t, "list", err, codes.Unavailable, "listing approvals: the approvals store failed; try again")
	_, err = e.client.AnswerApproval(ctx, &pb.AnswerApprovalRequest{Id: "ap-1", Answer: pb.ApprovalAnswer_APPROVAL_ANSWER_DENY})
	wantCode(t, "answer", err, codes.Unavailable, "approval ap-1: the approvals store failed")
	if m := status.Convert(err).Message(); strings.Contains(m, "sql") || strings.Contains(m, "closed") {
		t.Errorf("the store's error reached the approver: %q", m)
	}
}

// TestApprovalServiceNotRegistered: a server without an approval queue
// does not serve the approvers' API.
func TestApprovalServiceNotRegistered(t *testing.T) {
	env := newEnv(t)
	_, err := pb.NewApprovalServiceClient(env.conn).ListApprovals(t.Context(), &pb.ListApprovalsRequest{})
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("got %v, want Unimplemented", err)
	}
}

// TestSettledHow: an expired approval says it expired and with which
// outcome; an answered one who answered, how and when.
func TestSettledHow(t *testing.T) {
	at := time.Date(2026, 11, 28, 1, 2, 3, 0, time.UTC)
	exp := store.Pending{Status: store.StatusExpired, Answer: store.Answer{Status: store.StatusExpired, Outcome: store.OutcomeDeny, At: at, How: store.HowTimeout}}
	if got, want := settledHow(exp), "it expired unanswered at 2026-11-28T01:02:03Z, with the policy's outcome deny"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	ans := store.Pending{Status: store.StatusDenied, Answer: store.Answer{Status: store.StatusDenied, By: "bob", At: at, How: store.HowOnce}}
	if got, want := settledHow(ans), "denied by bob (once) at 2026-11-28T01:02:03Z"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
