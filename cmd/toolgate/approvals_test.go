package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/toolgate/toolgate/approvals"
	"github.com/toolgate/toolgate/approvals/store"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/server"
)

// approvalsServer is a central server with an approval queue over SQLite,
// on a loopback port, and token files for its approvers and a client.
type approvalsServer struct {
	addr    string
	q       *approvals.Queue
	waiting chan string
	// offset moves the queue's clock (the time approvals are queued).
	offset atomic.Int64
	// alice, bob and laptop are files holding those tokens.
	alice, bob, laptop string
}

type originKey struct{}

// startApprovals serves the approvers' API over a queue of its own. The
// app does not serve it yet, so the server is built here with
// server.WithApprovals; tokens false gives a server without a token file.
func startApprovals(t *testing.T, tokens bool) *approvalsServer {
	t.Helper()
	s := &approvalsServer{waiting: make(chan string, 16)}
	dir := t.TempDir()
	st, err := store.OpenSQLite(t.Context(), filepath.Join(dir, "approvals.db"), store.Options{Waiting: func(id string) {
		select {
		case s.waiting <- id:
		default:
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	s.q = approvals.New(st, approvals.Options{
		Origin: func(ctx context.Context) string { o, _ := ctx.Value(originKey{}).(string); return o },
		Now:    func() time.Time { return time.Now().Add(time.Duration(s.offset.Load())) },
	})
	cfg := server.DefaultConfig()
	cfg.ShutdownTimeout = 5 * time.Second
	files := map[string]string{
		"alice.token":  "token-for-alice-0123456789\n",
		"bob.token":    "token-for-bob-0123456789\n",
		"laptop.token": "token-for-laptop-0123456789\n",
		"tokens":       "laptop token-for-laptop-0123456789\nalice token-for-alice-0123456789 approver\nbob token-for-bob-0123456789 approver\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s.alice, s.bob, s.laptop = filepath.Join(dir, "alice.token"), filepath.Join(dir, "bob.token"), filepath.Join(dir, "laptop.token")
	if tokens {
		cfg.TokenFile = filepath.Join(dir, "tokens")
	}
	eng, err := engine.New(engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(cfg, eng, zap.NewNop(), server.WithApprovals(s.q))
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	t.Cleanup(func() {
		srv.Shutdown(context.Background())
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
		st.Close()
	})
	s.addr = lis.Addr().String()
	return s
}

// queued is a check waiting on its approval.
type queued struct {
	id   string
	done chan engine.ApprovalVerdict
}

// ask queues an unattended check's question, from host, for cmd in
// project, as the engine would, and returns once the check waits on it.
func (s *approvalsServer) ask(t *testing.T, host, project, cmd, reason string) queued {
	t.Helper()
	in := &engine.ApprovalInput{
		Request: &engine.Request{RequestID: "toolu_01", SessionID: "s-1", WorkingDirectory: project, Unattended: true,
			Tool:       engine.ToolCall{Name: "Bash", Input: map[string]any{"command": cmd}},
			Transcript: []engine.TranscriptEntry{{Role: engine.RoleUser, Text: "ship it"}}},
		Kind: engine.KindShell, Policy: "ci",
		Asked:   engine.Result{Decision: engine.Ask, Source: engine.SourceNoClassifier, Reason: reason},
		Timeout: 30 * time.Minute, OnTimeout: engine.Deny,
	}
	q := queued{done: make(chan engine.ApprovalVerdict, 1)}
	go func() {
		v, err := s.q.Approve(context.WithValue(context.Background(), originKey{}, host), in)
		if err != nil {
			t.Errorf("Approve: %v", err)
		}
		q.done <- v
	}()
	select {
	case q.id = <-s.waiting:
	case <-time.After(10 * time.Second):
		t.Fatal("the check never waited for its approval")
	}
	// Each queued check is answered before the test ends (goleak).
	t.Cleanup(func() {
		if _, err := s.q.Answer(context.Background(), q.id, approvals.Answer{By: "cleanup"}); err == nil {
			<-q.done
		}
	})
	return q
}

func runApprovals(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(t.Context(), append([]string{"approvals"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestApprovalsCLIAllow: an approver lists the pending call, reads it in
// full, allows it, and the waiting check gets ALLOW with the approver's
// name; answering again is refused, naming the first answer.
func TestApprovalsCLIAllow(t *testing.T) {
	s := startApprovals(t, true)
	q := s.ask(t, "runner-7", "/work/app", "npm publish", "matches ask rule Bash(npm publish:*)")
	as := []string{"--addr", s.addr, "--token-file", s.alice}

	code, out, errOut := runApprovals(t, append([]string{"list"}, as...)...)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if code != approvalsOK || errOut != "" || len(lines) != 2 {
		t.Fatalf("list: exit %d\n%s%s", code, out, errOut)
	}
	if f := strings.Fields(lines[0]); strings.Join(f, " ") != "ID AGE EXPIRES TOOL HOST PROJECT INPUT REASON" {
		t.Errorf("header %q", lines[0])
	}
	if f := strings.Fields(lines[1]); len(f) < 8 || f[0] != q.id || f[2] != "29m" || f[3] != "Bash" || f[4] != "runner-7" || f[5] != "/work/app" ||
		!strings.Contains(lines[1], "npm publish  matches ask rule Bash(npm publish:*)") {
		t.Errorf("row %q", lines[1])
	}

	code, out, errOut = runApprovals(t, append([]string{"list", "--json"}, as...)...)
	var listed struct {
		Approvals []struct{ ID, Status, Tool, Input, Host, Rule string }
	}
	if err := json.Unmarshal([]byte(out), &listed); err != nil || code != approvalsOK || len(listed.Approvals) != 1 {
		t.Fatalf("list --json: exit %d (%v)\n%s%s", code, err, out, errOut)
	}
	if a := listed.Approvals[0]; a.ID != q.id || a.Status != "pending" || a.Input != "npm publish" || a.Host != "runner-7" || a.Rule != "Bash(npm publish)" {
		t.Errorf("list --json: %+v", a)
	}

	code, out, _ = runApprovals(t, append([]string{"show", q.id}, as...)...)
	for _, want := range []string{"id:         " + q.id + "\n", "status:     pending\n", "input:      npm publish\n", "last words: ship it\n",
		"rule:       Bash(npm publish) (allow --as-rule teaches)\n", "), then deny\n"} {
		if code != approvalsOK || !strings.Contains(out, want) {
			t.Errorf("show: exit %d, lacks %q:\n%s", code, want, out)
		}
	}

	// Flags after the id are read too.
	code, out, errOut = runApprovals(t, append([]string{"allow", q.id}, as...)...)
	if code != approvalsOK || out != q.id+": allowed by alice (once)\n" || errOut != "" {
		t.Fatalf("allow: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if v := <-q.done; v.Decision != engine.Allow || v.Source != engine.SourceApproval || v.Info.By != "alice" {
		t.Fatalf("the check got %+v", v)
	}
	code, out, errOut = runApprovals(t, "deny", "--addr", s.addr, "--token-file", s.bob, q.id)
	if code != approvalsRefused || out != "" || !strings.HasPrefix(errOut, "toolgate approvals deny: approval "+q.id+" is settled already: allowed by alice (once) at ") {
		t.Errorf("second answer: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, _ = runApprovals(t, append([]string{"show", q.id}, as...)...)
	if code != approvalsOK || !strings.Contains(out, "settled:    allowed by alice (once) at ") || strings.Contains(out, "deadline:") {
		t.Errorf("show after the answer: exit %d\n%s", code, out)
	}
	if code, out, _ := runApprovals(t, append([]string{"list"}, as...)...); code != approvalsOK || out != "no approvals pending\n" {
		t.Errorf("list after the answer: exit %d, %q", code, out)
	}
}

// TestApprovalsCLIDeny: deny releases the check with DENY and the
// approver's name.
func TestApprovalsCLIDeny(t *testing.T) {
	s := startApprovals(t, true)
	q := s.ask(t, "runner-7", "/work/app", "npm publish", "asked")
	code, out, errOut := runApprovals(t, "deny", q.id, "--addr", s.addr, "--token-file", s.bob, "--json")
	var resp struct {
		Approval struct{ Status, AnsweredBy, How string }
	}
	if err := json.Unmarshal([]byte(out), &resp); err != nil || code != approvalsOK || resp.Approval.Status != "denied" || resp.Approval.AnsweredBy != "bob" {
		t.Fatalf("deny --json: exit %d (%v)\n%s%s", code, err, out, errOut)
	}
	if v := <-q.done; v.Decision != engine.Deny || v.Source != engine.SourceApproval || v.Info.By != "bob" {
		t.Fatalf("the check got %+v", v)
	}
}

// TestApprovalsCLIRules: allow --as-rule teaches a rule for its life;
// rules lists it; delete-rule withdraws it.
func TestApprovalsCLIRules(t *testing.T) {
	s := startApprovals(t, true)
	as := []string{"--addr", s.addr, "--token-file", s.alice}
	if code, out, _ := runApprovals(t, append([]string{"rules"}, as...)...); code != approvalsOK || out != "no learned rules in force\n" {
		t.Errorf("rules before: exit %d, %q", code, out)
	}
	q := s.ask(t, "runner-9", "/work/infra", "terraform plan", "asked")
	code, out, errOut := runApprovals(t, append([]string{"allow", q.id, "--as-rule", "--rule-ttl", "8h"}, as...)...)
	if code != approvalsOK || out != q.id+": allowed by alice (rule)\nlearned rule: Bash(terraform plan) in /work/infra (toolgate approvals rules lists it)\n" {
		t.Fatalf("allow --as-rule: exit %d\n%s%s", code, out, errOut)
	}
	if v := <-q.done; v.Decision != engine.Allow || v.Info.How != engine.HowRule {
		t.Fatalf("the check got %+v", v)
	}
	code, out, _ = runApprovals(t, append([]string{"rules"}, as...)...)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if code != approvalsOK || len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "ID EXPIRES BY PROJECT POLICY RULE" {
		t.Fatalf("rules: exit %d\n%s", code, out)
	}
	if f := strings.Fields(lines[1]); len(f) != 7 || !strings.HasPrefix(f[0], "rule-") || f[1] != "7h59m" || f[2] != "alice" || f[3] != "/work/infra" || f[4] != "ci" ||
		f[5]+" "+f[6] != "Bash(terraform plan)" {
		t.Errorf("rule row %q", lines[1])
	}
	code, out, _ = runApprovals(t, append([]string{"rules", "--json"}, as...)...)
	var rules struct {
		Rules []struct{ ID, Rule, CreatedBy string }
	}
	if err := json.Unmarshal([]byte(out), &rules); err != nil || code != approvalsOK || len(rules.Rules) != 1 || rules.Rules[0].CreatedBy != "alice" {
		t.Fatalf("rules --json: exit %d (%v)\n%s", code, err, out)
	}
	id := rules.Rules[0].ID
	if code, out, errOut := runApprovals(t, append([]string{"delete-rule", id}, as...)...); code != approvalsOK || out != "deleted "+id+"\n" {
		t.Fatalf("delete-rule: exit %d %q %q", code, out, errOut)
	}
	if code, out, _ := runApprovals(t, append([]string{"rules"}, as...)...); code != approvalsOK || out != "no learned rules in force\n" {
		t.Errorf("rules after delete: exit %d, %q", code, out)
	}
	if code, _, errOut := runApprovals(t, append([]string{"delete-rule", id}, as...)...); code != approvalsRefused || errOut != "toolgate approvals delete-rule: learned rule "+id+": not found\n" {
		t.Errorf("delete-rule again: exit %d, %q", code, errOut)
	}
}

// TestApprovalsCLIRefused: a client's token, no token, and a server
// without a token file are refused (exit 1), and the pending approval
// stays pending; the token never reaches the output.
func TestApprovalsCLIRefused(t *testing.T) {
	t.Setenv("TOOLGATE_TOKEN_FILE", "")
	s := startApprovals(t, true)
	q := s.ask(t, "runner-7", "/work/app", "npm publish", "asked")
	open := startApprovals(t, false)
	oq := open.ask(t, "runner-7", "/work/app", "npm publish", "asked")
	for _, tc := range []struct {
		name string
		args []string
		msg  string
	}{
		{"client token", []string{"allow", q.id, "--addr", s.addr, "--token-file", s.laptop}, `client "laptop" has role client, which may not call toolgate.v1.ApprovalService`},
		{"no token", []string{"allow", q.id, "--addr", s.addr}, "a bearer token is required"},
		{"list, client token", []string{"list", "--addr", s.addr, "--token-file", s.laptop}, "may not call toolgate.v1.ApprovalService"},
		{"no token file", []string{"allow", oq.id, "--addr", open.addr, "--token-file", open.alice}, "approving takes a token of role approver"},
		{"no token file, list", []string{"list", "--addr", open.addr}, "approving takes a token of role approver"},
	} {
		code, out, errOut := runApprovals(t, tc.args...)
		if code != approvalsRefused || out != "" || !strings.Contains(errOut, tc.msg) || strings.Contains(errOut, "token-for-") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 1 with %q", tc.name, code, out, errOut, tc.msg)
		}
	}
	for _, p := range []struct {
		q  *approvals.Queue
		id string
	}{{s.q, q.id}, {open.q, oq.id}} {
		if a, err := p.q.Get(t.Context(), p.id); err != nil || a.Status != store.StatusPending {
			t.Errorf("after refused answers: %+v, %v", a, err)
		}
	}
}

// TestApprovalsCLIUsage: wrong arguments exit 2 before or after asking
// the server; a server that cannot be reached exits 3.
func TestApprovalsCLIUsage(t *testing.T) {
	s := startApprovals(t, true)
	q := s.ask(t, "runner-7", "/work/app", "npm publish", "asked")
	as := []string{"--addr", s.addr, "--token-file", s.alice}
	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no subcommand", nil, approvalsUsage, "Usage: toolgate approvals list"},
		{"unknown subcommand", []string{"approve", q.id}, approvalsUsage, `toolgate approvals: unknown subcommand "approve"`},
		{"no id", append([]string{"allow"}, as...), approvalsUsage, "toolgate approvals allow: an ID is required\nUsage: toolgate approvals allow ID"},
		{"two ids", append([]string{"deny", q.id, "ap-2"}, as...), approvalsUsage, `unexpected arguments ["ap-2"`},
		{"list with an id", append([]string{"list", q.id}, as...), approvalsUsage, "unexpected arguments"},
		{"long id", append([]string{"show", strings.Repeat("a", 129)}, as...), approvalsUsage, "ID must be 1 to 128 bytes"},
		{"limit", append([]string{"list", "--limit", "5000"}, as...), approvalsUsage, "--limit 5000: want 0 to 1000"},
		{"ttl without rule", append([]string{"allow", q.id, "--rule-ttl", "8h"}, as...), approvalsUsage, "--rule-ttl goes with --as-rule"},
		{"ttl fraction", append([]string{"allow", q.id, "--as-rule", "--rule-ttl", "1.5s"}, as...), approvalsUsage, "want a positive whole number of seconds"},
		{"ttl too short (the server says)", append([]string{"allow", q.id, "--as-rule", "--rule-ttl", "30s"}, as...), approvalsUsage, "a learned rule lives between 1m and"},
		{"bad flag", []string{"rules", "--bogus"}, approvalsUsage, "flag provided but not defined: -bogus"},
		{"unknown id", append([]string{"show", "ap-nothere"}, as...), approvalsRefused, "toolgate approvals show: approval ap-nothere: not found"},
		{"no server", []string{"list", "--addr", deadAddr(t), "--token-file", s.alice, "--timeout", "2s"}, approvalsFailed, "toolgate approvals list: "},
	} {
		code, out, errOut := runApprovals(t, tc.args...)
		if code != tc.code || out != "" || !strings.Contains(errOut, tc.msg) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit %d with %q", tc.name, code, out, errOut, tc.code, tc.msg)
		}
	}
	if a, err := s.q.Get(t.Context(), q.id); err != nil || a.Status != store.StatusPending {
		t.Errorf("after refused answers: %+v, %v", a, err)
	}
}

// TestApprovalsCLITerminal: the agent's text cannot drive the approver's
// terminal or hide part of the call: escape sequences, bidirectional
// overrides and line breaks are shown as escapes.
func TestApprovalsCLITerminal(t *testing.T) {
	s := startApprovals(t, true)
	q := s.ask(t, "runner-7", "/work/app", "rm -rf x\x1b[2K\rls\u202e\ttxt.exe\ncurl evil", "asked\x1b]0;owned\x07")
	for _, sub := range [][]string{{"list"}, {"show", q.id}} {
		code, out, _ := runApprovals(t, append(sub, "--addr", s.addr, "--token-file", s.alice)...)
		if code != approvalsOK || strings.ContainsAny(out, "\x1b\r\u202e\t\x07") {
			t.Errorf("%s printed control or format characters:\n%q", sub[0], out)
		}
		if !strings.Contains(out, `rm -rf x\x1b[2K\x0dls\u202e\x09txt.exe`) {
			t.Errorf("%s does not show the escapes:\n%s", sub[0], out)
		}
	}
	_, out, _ := runApprovals(t, "show", q.id, "--addr", s.addr, "--token-file", s.alice)
	// show keeps the input's lines, indented under its field.
	if !strings.Contains(out, "txt.exe\n              curl evil\n") {
		t.Errorf("show:\n%s", out)
	}
}

func TestSafeText(t *testing.T) {
	for _, tc := range []struct {
		in        string
		multiline bool
		want      string
	}{
		{"npm publish", false, "npm publish"},
		{"a\nb", false, `a\x0ab`},
		{"a\nb", true, "a\nb"},
		{"\x1b[31mred", true, `\x1b[31mred`},
		{"\u009b31m", false, `\x9b31m`},
		{"x\u200by\u2028z", false, `x\u200by\u2028z`},
		{"bad\xffutf8", false, `bad\xffutf8`},
		{"naïve ✓", false, "naïve ✓"},
	} {
		if got := safeText(tc.in, tc.multiline); got != tc.want {
			t.Errorf("safeText(%q, %v) = %q, want %q", tc.in, tc.multiline, got, tc.want)
		}
	}
}

func TestSpan(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Second: "0s", 45 * time.Second: "45s", 12*time.Minute + 5*time.Second: "12m",
		3*time.Hour + 5*time.Minute: "3h5m", 51 * time.Hour: "2d3h",
	} {
		if got := span(d); got != want {
			t.Errorf("span(%s) = %q, want %q", d, got, want)
		}
	}
}
