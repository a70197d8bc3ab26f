package app

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/toolgate/toolgate/approvals"
	"github.com/toolgate/toolgate/approvals/store"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// policyApprove asks about npm publish, and queues an unattended check's
// question for an approver.
const policyApprove = "policies:\n  default:\n    permissions:\n      ask: [\"Bash(npm publish:*)\"]\n    unattended: {on_ask: approve, approval_timeout: 2m}\n"

func unattendedCheck(t *testing.T, r *running, requestID, cmd, cwd string) (*pb.CheckResponse, error) {
	t.Helper()
	in, err := structpb.NewStruct(map[string]any{"command": cmd})
	if err != nil {
		t.Fatal(err)
	}
	return r.client.Check(t.Context(), &pb.CheckRequest{RequestId: requestID, SessionId: "ci-42", Tool: &pb.ToolCall{Name: "Bash", Input: in},
		WorkingDirectory: cwd, Unattended: true})
}

// waitPending waits until q has n pending approvals, and returns them.
func waitPending(t *testing.T, q *approvals.Queue, n int) []store.Pending {
	t.Helper()
	var got []store.Pending
	waitFor(t, "pending approvals", func() bool {
		var err error
		got, err = q.List(t.Context(), 0)
		return err == nil && len(got) == n
	})
	return got
}

// TestApprovalThroughUpstream: a local server's unattended question that
// its policy queues waits in the centre's queue; the approver's answer
// releases it as ALLOW with the approval's source and the approver's
// name; allow as a rule lets the next identical call through at once;
// a deny is a deny; the local server's records carry the approval.
func TestApprovalThroughUpstream(t *testing.T) {
	db := filepath.Join(t.TempDir(), "approvals.db")
	centre := start(t, loadConfig(t, configFile(t, t.TempDir(), "server:\n  listen: 127.0.0.1:0\n  metrics_listen: \"\"\napprovals:\n  sqlite_path: "+db+"\n"+policyApprove)))
	q := centre.app.Approvals()
	if q == nil {
		t.Fatal("a centre with an approvals section has no queue")
	}
	local := start(t, loadConfig(t, configFile(t, t.TempDir(), "server:\n  listen: 127.0.0.1:0\n  metrics_listen: \"\"\nupstream:\n  address: "+centre.app.Addr().String()+"\n"+policyApprove)))
	dir := t.TempDir()

	type result struct {
		resp *pb.CheckResponse
		err  error
	}
	ask := func(id, cmd string) chan result {
		ch := make(chan result, 1)
		go func() {
			resp, err := unattendedCheck(t, local, id, cmd, dir)
			ch <- result{resp, err}
		}()
		return ch
	}
	first := ask("toolu_1", "npm publish")
	p := waitPending(t, q, 1)[0]
	host, _ := os.Hostname()
	if p.Tool != "Bash" || p.Display != "npm publish" || p.Project != dir || p.Session != "ci-42" || !strings.HasPrefix(p.Host, host) {
		t.Errorf("pending approval %+v", p)
	}
	select {
	case r := <-first:
		t.Fatalf("answered before the approver: %v, %v", r.resp, r.err)
	default:
	}
	if _, err := q.Answer(t.Context(), p.ID, approvals.Answer{Allow: true, AsRule: true, RuleTTL: time.Hour, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	r := <-first
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.resp.GetDecision() != pb.Decision_DECISION_ALLOW || r.resp.GetSource() != pb.DecisionSource_DECISION_SOURCE_APPROVAL ||
		r.resp.GetApproval().GetApprover() != "alice" || r.resp.GetApproval().GetId() != p.ID || r.resp.GetApproval().GetHow() != "rule" {
		t.Fatalf("approved check: %v", r.resp)
	}

	// The same call again, a new request: the learned rule allows it.
	resp, err := unattendedCheck(t, local, "toolu_2", "npm publish", dir)
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetDecision() != pb.Decision_DECISION_ALLOW || resp.GetApproval().GetHow() != "learned" || resp.GetMatchedRule() != "Bash(npm publish)" {
		t.Fatalf("identical call after allow as a rule: %v", resp)
	}

	// Another call is queued, and a deny denies it.
	second := ask("toolu_3", "npm publish --tag beta")
	p = waitPending(t, q, 1)[0]
	if _, err := q.Answer(t.Context(), p.ID, approvals.Answer{By: "bob"}); err != nil {
		t.Fatal(err)
	}
	if r := <-second; r.err != nil || r.resp.GetDecision() != pb.Decision_DECISION_DENY || r.resp.GetSource() != pb.DecisionSource_DECISION_SOURCE_APPROVAL || r.resp.GetApproval().GetApprover() != "bob" {
		t.Fatalf("denied check: %v, %v", r.resp, r.err)
	}
}

// TestApprovalWithoutQueue: a policy that queues questions on a server
// with no approval queue, or a local server whose centre has none,
// denies them, saying so; nothing waits.
func TestApprovalWithoutQueue(t *testing.T) {
	centre := start(t, loadConfig(t, configFile(t, t.TempDir(), "server:\n  listen: 127.0.0.1:0\n  metrics_listen: \"\"\n"+policyApprove)))
	local := start(t, loadConfig(t, configFile(t, t.TempDir(), "server:\n  listen: 127.0.0.1:0\n  metrics_listen: \"\"\nupstream:\n  address: "+centre.app.Addr().String()+"\n"+policyApprove)))
	for name, r := range map[string]*running{"centre": centre, "local": local} {
		resp, err := unattendedCheck(t, r, "toolu_1", "npm publish", t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if resp.GetDecision() != pb.Decision_DECISION_DENY || resp.GetSource() != pb.DecisionSource_DECISION_SOURCE_APPROVAL_UNAVAILABLE {
			t.Errorf("%s: %v", name, resp)
		}
	}
}

// TestCentreRecordsItsOwnDecisions: a centre with an approvals store
// keeps its own decisions there too, beside its local servers', and an
// approved check's record names its approval.
func TestCentreRecordsItsOwnDecisions(t *testing.T) {
	db := filepath.Join(t.TempDir(), "approvals.db")
	centre := start(t, loadConfig(t, configFile(t, t.TempDir(), "server:\n  listen: 127.0.0.1:0\n  metrics_listen: \"\"\napprovals:\n  sqlite_path: "+db+"\n"+policyApprove)))
	q := centre.app.Approvals()
	dir := t.TempDir()
	centre.check(t, t.Context(), "Read", map[string]any{"file_path": filepath.Join(dir, "x.go")}, dir, pb.PermissionMode_PERMISSION_MODE_AUTO)
	done := make(chan *pb.CheckResponse, 1)
	go func() {
		resp, err := unattendedCheck(t, centre, "toolu_9", "npm publish", dir)
		if err != nil {
			t.Error(err)
		}
		done <- resp
	}()
	p := waitPending(t, q, 1)[0]
	if _, err := q.Answer(t.Context(), p.ID, approvals.Answer{Allow: true, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	if resp := <-done; resp.GetDecision() != pb.Decision_DECISION_ALLOW || resp.GetApproval().GetApprover() != "alice" {
		t.Fatalf("approved check: %v", resp)
	}
	var recs []store.Record
	waitFor(t, "the centre's two records", func() bool {
		recs, _ = q.Records(t.Context(), store.RecordFilter{Project: dir})
		return len(recs) == 2
	})
	host, _ := os.Hostname()
	for _, r := range recs {
		if r.Host != host {
			t.Errorf("record %s: host %q, want %q", r.ID, r.Host, host)
		}
		if r.Tool == "Bash" && (r.ApprovalID != p.ID || r.Source != "approval" || r.Decision != "allow") {
			t.Errorf("the approved check's record: %+v", r)
		}
	}
}

// TestApprovalsFrontEnds: a centre with approvals serves the approvers'
// gRPC service and page; both take an approver's token, and refuse a
// client's.
func TestApprovalsFrontEnds(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	writeAtomically(t, tokens, "ci token-for-ci-runner-0123456789\nalice token-for-alice-0123456789 approver\n")
	centre := start(t, loadConfig(t, configFile(t, dir, "server:\n  listen: 127.0.0.1:0\n  metrics_listen: \"\"\n  token_file: "+tokens+"\n"+
		"approvals:\n  sqlite_path: "+filepath.Join(dir, "a.db")+"\n  web: {listen: 127.0.0.1:0}\n"+policyApprove)))
	q := centre.app.Approvals()
	ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer token-for-ci-runner-0123456789"), 2*time.Second)
	defer cancel()
	in, _ := structpb.NewStruct(map[string]any{"command": "npm publish"})
	// The client's call waits, and gives up: its approval stays pending.
	if resp, err := centre.client.Check(ctx, &pb.CheckRequest{RequestId: "r1", Tool: &pb.ToolCall{Name: "Bash", Input: in}, WorkingDirectory: dir, Unattended: true}); err != nil ||
		resp.GetSource() != pb.DecisionSource_DECISION_SOURCE_APPROVAL_TIMEOUT {
		t.Fatalf("check: %v, %v", resp, err)
	}
	p := waitPending(t, q, 1)[0]
	if p.Host != "ci" {
		t.Errorf("origin %q, want the client's token name", p.Host)
	}

	svc := pb.NewApprovalServiceClient(centre.conn)
	as := func(tok string) context.Context {
		return metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+tok)
	}
	if _, err := svc.ListApprovals(as("token-for-ci-runner-0123456789"), &pb.ListApprovalsRequest{}); status.Code(err) != codes.PermissionDenied {
		t.Errorf("a client token listed approvals: %v", err)
	}
	list, err := svc.ListApprovals(as("token-for-alice-0123456789"), &pb.ListApprovalsRequest{})
	if err != nil || len(list.GetApprovals()) != 1 || list.GetApprovals()[0].GetId() != p.ID {
		t.Fatalf("approver's list: %v, %v", list, err)
	}

	page := "http://" + centre.app.ApprovalsWebAddr().String() + "/approvals"
	get := func(tok string) (int, string) {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, page, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, _ := get("token-for-ci-runner-0123456789"); code == http.StatusOK {
		t.Error("a client token opened the approvers' page")
	}
	if code, body := get("token-for-alice-0123456789"); code != http.StatusOK || !strings.Contains(body, p.ID) {
		t.Errorf("the approver's page: %d, lists the approval: %v", code, strings.Contains(body, p.ID))
	}
}

// TestApprovalsPageNeedsTokens: a page with no token file to sign in
// with is refused at load.
func TestApprovalsPageNeedsTokens(t *testing.T) {
	dir := t.TempDir()
	_, err := LoadConfig(configFile(t, dir, "server:\n  listen: 127.0.0.1:0\napprovals:\n  sqlite_path: "+filepath.Join(dir, "a.db")+"\n  web: {listen: 127.0.0.1:0}\n"+policyApprove))
	if err == nil || !strings.Contains(err.Error(), "approvals.web.listen: approvers sign in with tokens of role approver in server.token_file") {
		t.Errorf("got %v", err)
	}
}

// TestApprovalsInTheAuditLog: who allowed what, and the rule it taught,
// is in the audit log beside the decisions.
func TestApprovalsInTheAuditLog(t *testing.T) {
	dir := t.TempDir()
	audit := filepath.Join(dir, "audit.jsonl")
	centre := start(t, loadConfig(t, configFile(t, dir, "server:\n  listen: 127.0.0.1:0\n  metrics_listen: \"\"\n  audit: {file: "+audit+"}\n"+
		"approvals:\n  sqlite_path: "+filepath.Join(dir, "a.db")+"\n"+policyApprove)))
	q := centre.app.Approvals()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := unattendedCheck(t, centre, "toolu_1", "npm publish", dir); err != nil {
			t.Error(err)
		}
	}()
	p := waitPending(t, q, 1)[0]
	if _, err := q.Answer(t.Context(), p.ID, approvals.Answer{Allow: true, AsRule: true, By: "alice"}); err != nil {
		t.Fatal(err)
	}
	<-done
	waitFor(t, "the audit log's approval lines", func() bool {
		b, _ := os.ReadFile(audit)
		s := string(b)
		return strings.Contains(s, `"msg":"approval queued"`) && strings.Contains(s, `"msg":"approval answered"`) &&
			strings.Contains(s, `"approver":"alice"`) && strings.Contains(s, `"msg":"rule learned"`) && strings.Contains(s, `"rule":"Bash(npm publish)"`) &&
			strings.Contains(s, `"approval_id":"`+p.ID+`"`)
	})
}
