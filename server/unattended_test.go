package server

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// askRule is a check an ask rule of the request's catches.
func askRule(t *testing.T, id string, unattended bool) *pb.CheckRequest {
	req := checkReq(t, id, "Bash", map[string]any{"command": "make deploy"})
	req.Rules = &pb.Rules{Ask: []string{"Bash(make deploy)"}}
	req.Unattended = unattended
	return req
}

// TestUnattendedCheck: the request's unattended field reaches the engine:
// an ask becomes the policy's deny, by the stage that asked, and the
// audit record says the check was unattended.
func TestUnattendedCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	env := newEnv(t, withConfig(func(c *Config) { c.Audit.File = path }))
	for _, tc := range []struct {
		unattended bool
		decision   pb.Decision
	}{{false, pb.Decision_DECISION_ASK}, {true, pb.Decision_DECISION_DENY}} {
		resp, err := env.client.Check(t.Context(), askRule(t, fmt.Sprint(tc.unattended), tc.unattended))
		if err != nil {
			t.Fatal(err)
		}
		if resp.GetDecision() != tc.decision || resp.GetSource() != pb.DecisionSource_DECISION_SOURCE_RULE || resp.GetMatchedRule() != "Bash(make deploy)" ||
			strings.Contains(resp.GetReason(), "nobody can answer") != tc.unattended {
			t.Errorf("unattended %v: %v", tc.unattended, resp)
		}
	}
	env.stop(t)
	records := readAudit(t, path)
	if len(records) != 2 {
		t.Fatalf("%d audit records", len(records))
	}
	for _, r := range records {
		if u, ok := r["unattended"].(bool); !ok || fmt.Sprint(u) != r["request_id"] {
			t.Errorf("record %s: unattended %v", r["request_id"], r["unattended"])
		}
	}
}

// TestUnattendedSession: a stream's session context marks every check of
// the session unattended, local ones and those for the classifier alike,
// and a check cannot unmark itself; a check of an attended session can
// mark itself.
func TestUnattendedSession(t *testing.T) {
	fc := newFakeClassifier()
	env := newEnv(t, withClassifier(fc))
	for _, tc := range []struct {
		session, check, want bool
	}{{true, false, true}, {false, true, true}, {false, false, false}} {
		s := openStream(t, env)
		if err := s.Send(&pb.CheckStreamRequest{Kind: &pb.CheckStreamRequest_Session{Session: &pb.SessionContext{SessionId: "s", Unattended: tc.session}}}); err != nil {
			t.Fatal(err)
		}
		sendCheck(t, s, askRule(t, "local", tc.check))
		m := recv(t, s).GetResponse()
		if want := map[bool]pb.Decision{false: pb.Decision_DECISION_ASK, true: pb.Decision_DECISION_DENY}[tc.want]; m.GetDecision() != want {
			t.Errorf("session %v check %v: %v, want %s", tc.session, tc.check, m, want)
		}
		id := fmt.Sprintf("classify-%v-%v", tc.session, tc.check)
		req := checkReq(t, id, "mcp__x__thing", nil)
		req.Unattended = tc.check
		sendCheck(t, s, req)
		recv(t, s)
		in := fc.inputs()
		if got := in[len(in)-1].Request; got.RequestID != id || got.Unattended != tc.want {
			t.Errorf("session %v check %v: the classifier saw %s unattended %v", tc.session, tc.check, got.RequestID, got.Unattended)
		}
		if err := s.CloseSend(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Recv(); err != io.EOF {
			t.Fatalf("after CloseSend: %v", err)
		}
	}
}

// TestHookUnattended: the hook listener takes unattended=1 in the query,
// as toolgate-hook --unattended sends it and an HTTP hook's URL may say;
// a value that is not a boolean is a failure (deny), not attended.
func TestHookUnattended(t *testing.T) {
	env := newEnv(t)
	addr := serveHookListener(t, env)
	post := func(query string) string {
		body := `{"session_id":"s","cwd":"/","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"make deploy"}}`
		c := http.Client{Timeout: 5 * time.Second}
		resp, err := c.Post("http://"+addr+"/hook/claude-code?mode=auto"+query, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatalf("no answer: %v", err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for query, want := range map[string]string{
		"":                   `"permissionDecision":"ask"`,
		"&unattended=0":      `"permissionDecision":"ask"`,
		"&unattended=1":      `"permissionDecision":"deny","permissionDecisionReason":"denied because nobody can answer`,
		"&unattended=true":   `"permissionDecision":"deny","permissionDecisionReason":"denied because nobody can answer`,
		"&unattended=always": `"permissionDecision":"deny","permissionDecisionReason":"toolgate could not decide: unattended \"always\": want 1 or 0`,
	} {
		if got := post(query); !strings.Contains(got, want) {
			t.Errorf("%q: %s, want %s", query, got, want)
		}
	}
}
