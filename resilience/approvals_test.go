package resilience

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/toolgate/toolgate/approvals/store"
	"github.com/toolgate/toolgate/approvals/store/pgtest"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
	"github.com/toolgate/toolgate/internal/browsertest"
	"github.com/toolgate/toolgate/internal/clientflags"
)

// The approvals end to end, every piece its own process: a central
// toolgate with an approvals section (SQLite or PostgreSQL), a local
// toolgate (serve --upstream) in front of the agent, and the approvers'
// CLI, gRPC service and web page. The local server has no config: it
// decides under the centre's policies, which ask about npm publish and
// queue an unattended check's question for an approver.

// The centre's token file: who may do what there.
var approvalTokens = []struct{ name, token, role string }{
	{"alice", "approver-alice-6f1d2c9e8b7a", "approver"},
	{"bob", "approver-bob-3a8e5f0d1c6b", "approver"},
	{"agent", "client-agent-9c4b7e2a1f5d", "client"},
	{"ci-runner", "upstream-ci-2d7f0b9e4a6c", "upstream"},
}

// approvalPolicies queue unattended questions about npm publish for an
// approver: under default for a minute, denied when nobody answers; under
// nightly (TestApprovalTimeout) for 2 s, allowed when nobody answers.
func approvalPolicies(defaultTimeout string) string {
	return "policies:\n" +
		"  default:\n    permissions:\n      ask: [\"Bash(npm publish:*)\"]\n" +
		"    unattended: {on_ask: approve, approval_timeout: " + defaultTimeout + "}\n" +
		"  nightly:\n    permissions:\n      ask: [\"Bash(npm publish:*)\"]\n" +
		"    unattended: {on_ask: approve, approval_timeout: 2s, on_timeout: allow}\n"
}

// pgURLEnv is the variable the centres read their PostgreSQL URL from.
const pgURLEnv = "TOOLGATE_POSTGRES_URL"

// approvalRig holds what one test's processes share: the binary, the
// centre's token file and one file per token for the clients.
type approvalRig struct {
	t      *testing.T
	bin    string
	dir    string
	tokens string            // the centre's server.token_file
	token  map[string]string // name: a file holding that token alone
}

func newApprovalRig(t *testing.T) *approvalRig {
	t.Helper()
	r := &approvalRig{t: t, bin: sharedToolgate(t), dir: t.TempDir(), token: map[string]string{}}
	var lines strings.Builder
	for _, tk := range approvalTokens {
		fmt.Fprintf(&lines, "%s %s %s\n", tk.name, tk.token, tk.role)
		f := filepath.Join(r.dir, tk.name+".token")
		if err := os.WriteFile(f, []byte(tk.token+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		r.token[tk.name] = f
	}
	r.tokens = filepath.Join(r.dir, "tokens")
	if err := os.WriteFile(r.tokens, []byte(lines.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return r
}

func tokenOf(name string) string {
	for _, tk := range approvalTokens {
		if tk.name == name {
			return tk.token
		}
	}
	panic("no token named " + name)
}

// sqliteSection and postgresSection are a centre's approvals section.
func sqliteSection(path string) string {
	return "approvals:\n  store: sqlite\n  sqlite_path: " + path + "\n"
}

func postgresSection() string {
	return "approvals:\n  store: postgres\n  postgres_url_env: " + pgURLEnv + "\n  poll_interval: 500ms\n"
}

// centreConfig writes a centre's config file (listening on listen) and
// returns its path.
func (r *approvalRig) centreConfig(name, listen, approvals, policies string) string {
	r.t.Helper()
	yaml := "server:\n  listen: " + listen + "\n  metrics_listen: \"\"\n  shutdown_timeout: 2s\n  token_file: " + r.tokens + "\n" + approvals + policies
	path := filepath.Join(r.dir, name+".yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		r.t.Fatal(err)
	}
	return path
}

// startCentre runs serve with the config at cfg; pgURL, when not empty,
// is the PostgreSQL database's URL, passed in the environment as the
// config says.
func (r *approvalRig) startCentre(cfg, pgURL string) *served {
	r.t.Helper()
	env := append(os.Environ(), "OPENAI_API_KEY=sk-resilience")
	if pgURL != "" {
		env = append(env, pgURLEnv+"="+pgURL)
	}
	return startServeEnv(r.t, r.bin, env, "--config", cfg)
}

// startLocal runs a local toolgate whose upstream is the centre at addr,
// without a config of its own, and returns it with a client.
func (r *approvalRig) startLocal(addr string) (*served, pb.PermissionServiceClient) {
	r.t.Helper()
	local := startServe(r.t, r.bin, "--upstream", addr, "--upstream-token-file", r.token["ci-runner"],
		"--state-dir", filepath.Join(r.t.TempDir(), "state"), "--listen", "127.0.0.1:0", "--metrics-listen", "off")
	return local, dialReady(r.t, local)
}

// approvals is a gRPC ApprovalService client of the server at addr,
// calling with the token named who.
func (r *approvalRig) approvals(addr, who string) pb.ApprovalServiceClient {
	r.t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(clientflags.Bearer{Token: tokenOf(who)}))
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { _ = conn.Close() })
	return pb.NewApprovalServiceClient(conn)
}

// cli runs the toolgate binary (toolgate args...) and returns its
// combined output.
func (r *approvalRig) cli(args ...string) (string, error) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(r.t.Context(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, r.bin, args...).CombinedOutput()
	return string(out), err
}

// project is a fresh project directory, symlinks resolved.
func (r *approvalRig) project() string {
	r.t.Helper()
	p, err := filepath.EvalSymlinks(r.t.TempDir())
	if err != nil {
		r.t.Fatal(err)
	}
	return p
}

// askUnattended sends an unattended Bash check in the background; its
// outcome arrives on the channel. The call's deadline is far beyond any
// wait under test, so that a hang fails the test instead of stalling it.
func askUnattended(t *testing.T, client pb.PermissionServiceClient, requestID, cmd, proj, policy string) <-chan answer {
	t.Helper()
	in, err := structpb.NewStruct(map[string]any{"command": cmd})
	if err != nil {
		t.Fatal(err)
	}
	req := &pb.CheckRequest{RequestId: requestID, SessionId: "ci-nightly-42", Tool: &pb.ToolCall{Name: "Bash", Input: in},
		WorkingDirectory: proj, Policy: policy, Unattended: true}
	ch := make(chan answer, 1)
	go func() {
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Second)
		defer cancel()
		resp, err := client.Check(ctx, req)
		ch <- answer{resp, err}
	}()
	return ch
}

// await returns the check's outcome, failing the test when it takes
// longer than d or failed; logs are the processes whose output helps.
func await(t *testing.T, ch <-chan answer, d time.Duration, logs ...*served) *pb.CheckResponse {
	t.Helper()
	select {
	case a := <-ch:
		if a.err != nil {
			t.Fatalf("the check failed: %v\n%s", a.err, logsOf(logs...))
		}
		return a.resp
	case <-time.After(d):
		t.Fatalf("the check was not answered within %s\n%s", d, logsOf(logs...))
	}
	return nil
}

// stillWaiting fails the test when the check has already been answered.
func stillWaiting(t *testing.T, ch <-chan answer, what string, logs ...*served) {
	t.Helper()
	select {
	case a := <-ch:
		t.Fatalf("%s, the check was answered: %v, %v\n%s", what, a.resp, a.err, logsOf(logs...))
	default:
	}
}

func logsOf(logs ...*served) string {
	var b strings.Builder
	for i, s := range logs {
		fmt.Fprintf(&b, "--- process %d:\n%s\n", i, tail(s.log(), 3000))
	}
	return b.String()
}

// wantApproval checks a check's outcome: decision, source, the approver
// and how the approval decided.
func wantApproval(t *testing.T, what string, resp *pb.CheckResponse, d pb.Decision, src pb.DecisionSource, approver, how string) {
	t.Helper()
	a := resp.GetApproval()
	if resp.GetDecision() != d || resp.GetSource() != src || a.GetApprover() != approver || a.GetHow() != how {
		t.Fatalf("%s: %v/%v approver %q how %q (%s), want %v/%v approver %q how %q", what, resp.GetDecision(), resp.GetSource(),
			a.GetApprover(), a.GetHow(), resp.GetReason(), d, src, approver, how)
	}
}

// openSQLite opens the centre's SQLite store to watch it; the centre
// keeps it open too.
func openSQLite(t *testing.T, path string) store.Store {
	t.Helper()
	st, err := store.OpenSQLite(t.Context(), path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func openPostgres(t *testing.T, url string) store.Store {
	t.Helper()
	st, err := store.OpenPostgres(t.Context(), url, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// waitPending polls the store until it holds exactly n pending approvals
// and returns them.
func waitPending(t *testing.T, st store.Store, n int, logs ...*served) []store.Pending {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got, err := st.ListPending(t.Context(), 0)
		if err == nil && len(got) == n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("want %d pending approvals, the store has %d (%v)\n%s", n, len(got), err, logsOf(logs...))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// freeAddr is a loopback address with a port free now, for a server that
// must come back on the same address after a restart.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// refuseConnections listens on addr, closing each connection as it comes,
// until n came or 20 s passed, and returns how many came.
func refuseConnections(t *testing.T, addr string, n int) int {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("holding the stopped centre's address: %v", err)
	}
	defer l.Close()
	came, done := make(chan struct{}), make(chan struct{})
	defer close(done)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
			select {
			case came <- struct{}{}:
			case <-done:
				return
			}
		}
	}()
	timeout := time.After(20 * time.Second)
	for got := 0; ; got++ {
		if got == n {
			return got
		}
		select {
		case <-came:
		case <-timeout:
			return got
		}
	}
}

// The PostgreSQL cluster, started once by the first test that needs it
// and stopped by TestMain; each test makes its own database in it.
var pg struct {
	once    sync.Once
	cluster *pgtest.Cluster
	err     error
}

// pgDatabase returns the URL of a new, empty database, or skips (fails
// when TOOLGATE_POSTGRES_REQUIRED=1) when PostgreSQL is not installed.
func pgDatabase(t *testing.T) string {
	t.Helper()
	pgtest.SkipOrFail(t)
	pg.once.Do(func() { pg.cluster, pg.err = pgtest.Start() })
	if pg.err != nil {
		t.Fatal(pg.err)
	}
	url, err := pg.cluster.NewDatabase(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return url
}

func stopPostgres() {
	if pg.cluster != nil {
		_ = pg.cluster.Stop()
	}
}

// TestApprovalTimeout: an unattended check through a local server waits
// at the centre; nobody answers; when the policy's approval_timeout (2 s)
// passes it gets the policy's outcome, with the timeout's source: deny by
// default, allow under a policy with on_timeout: allow.
func TestApprovalTimeout(t *testing.T) {
	r := newApprovalRig(t)
	db := filepath.Join(r.dir, "approvals.db")
	centre := r.startCentre(r.centreConfig("centre", "127.0.0.1:0", sqliteSection(db), approvalPolicies("2s")), "")
	defer stopServed(t, centre)
	local, client := r.startLocal(centre.addr)
	defer stopServed(t, local)
	st := openSQLite(t, db)
	proj := r.project()

	start := time.Now()
	denied := askUnattended(t, client, "toolu_timeout_1", "npm publish", proj, "")
	allowed := askUnattended(t, client, "toolu_timeout_2", "npm publish", proj, "nightly")
	for _, c := range []struct {
		ch   <-chan answer
		want pb.Decision
	}{{denied, pb.Decision_DECISION_DENY}, {allowed, pb.Decision_DECISION_ALLOW}} {
		resp := await(t, c.ch, 30*time.Second, centre, local)
		waited := time.Since(start)
		wantApproval(t, "nobody answered", resp, c.want, pb.DecisionSource_DECISION_SOURCE_APPROVAL_TIMEOUT, "", "timeout")
		// It waited the policy's time out, not less.
		if waited < 2*time.Second {
			t.Errorf("answered %s after the check, before the 2s approval_timeout", waited)
		}
		p, err := st.GetPending(t.Context(), resp.GetApproval().GetId())
		if err != nil {
			t.Fatalf("the approval %q of %v: %v", resp.GetApproval().GetId(), resp, err)
		}
		outcome := store.OutcomeDeny
		if c.want == pb.Decision_DECISION_ALLOW {
			outcome = store.OutcomeAllow
		}
		if p.Status != store.StatusExpired || p.Answer.Outcome != outcome || p.Display != "npm publish" || p.Project != proj {
			t.Errorf("the approval after its timeout: %+v", p)
		}
	}
}

// TestApprovalDenyFromCLI: an unattended check waits at the centre; the
// CLI (toolgate approvals deny) with a client's token is refused and the
// check keeps waiting; with an approver's token it denies the check,
// which returns DENY with the approval's source and the approver's name.
func TestApprovalDenyFromCLI(t *testing.T) {
	r := newApprovalRig(t)
	db := filepath.Join(r.dir, "approvals.db")
	centre := r.startCentre(r.centreConfig("centre", "127.0.0.1:0", sqliteSection(db), approvalPolicies("1m")), "")
	defer stopServed(t, centre)
	local, client := r.startLocal(centre.addr)
	defer stopServed(t, local)
	st := openSQLite(t, db)

	ch := askUnattended(t, client, "toolu_cli_1", "npm publish", r.project(), "")
	p := waitPending(t, st, 1, centre, local)[0]

	// The approver sees it in the list.
	out, err := r.cli("approvals", "list", "--addr", centre.addr, "--token-file", r.token["alice"])
	if err != nil || !strings.Contains(out, p.ID) || !strings.Contains(out, "npm publish") {
		t.Fatalf("toolgate approvals list: %v\n%s", err, out)
	}

	// A client's token (and an upstream's) is not an approver's.
	for _, who := range []string{"agent", "ci-runner"} {
		out, err := r.cli("approvals", "deny", p.ID, "--addr", centre.addr, "--token-file", r.token[who])
		// Exit status 1 is a refusal (2 a usage error, 3 no server).
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			t.Fatalf("toolgate approvals deny with %s's token: %v, want exit status 1 (refused)\n%s", who, err, out)
		}
		t.Logf("with %s's token: %v: %s", who, err, strings.TrimSpace(out))
	}
	got, err := st.GetPending(t.Context(), p.ID)
	if err != nil || got.Status != store.StatusPending {
		t.Fatalf("after the refused answers the approval is %+v, %v", got, err)
	}
	stillWaiting(t, ch, "after the refused answers", centre, local)

	out, err = r.cli("approvals", "deny", p.ID, "--addr", centre.addr, "--token-file", r.token["alice"])
	if err != nil {
		t.Fatalf("toolgate approvals deny: %v\n%s", err, out)
	}
	resp := await(t, ch, 20*time.Second, centre, local)
	wantApproval(t, "denied from the CLI", resp, pb.Decision_DECISION_DENY, pb.DecisionSource_DECISION_SOURCE_APPROVAL, "alice", "once")
	if resp.GetApproval().GetId() != p.ID {
		t.Errorf("the answer names approval %q, want %q", resp.GetApproval().GetId(), p.ID)
	}
}

// TestApprovalSurvivesRestart: a check waits at the centre; the centre
// is stopped (SIGTERM, or SIGKILL) and started again on the same store
// and address; the approval is still listed there, and answering it
// releases the check the local server kept waiting on (its upstream
// approver asks the centre again and joins the same approval) with ALLOW.
// Over SQLite and over PostgreSQL.
func TestApprovalSurvivesRestart(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		for _, kill := range []bool{false, true} {
			name := backend + "/SIGTERM"
			if kill {
				name = backend + "/SIGKILL"
			}
			t.Run(name, func(t *testing.T) {
				r := newApprovalRig(t)
				var (
					section, url string
					st           store.Store
				)
				if backend == "sqlite" {
					db := filepath.Join(r.dir, "approvals.db")
					section, st = sqliteSection(db), openSQLite(t, db)
				} else {
					url = pgDatabase(t)
					section = postgresSection()
					st = openPostgres(t, url)
				}
				cfg := r.centreConfig("centre", freeAddr(t), section, approvalPolicies("1m"))
				centre := r.startCentre(cfg, url)
				local, client := r.startLocal(centre.addr)
				defer stopServed(t, local)

				ch := askUnattended(t, client, "toolu_restart_1", "npm publish", r.project(), "")
				p := waitPending(t, st, 1, centre, local)[0]

				if kill {
					if err := centre.cmd.Process.Kill(); err != nil {
						t.Fatal(err)
					}
					select {
					case <-centre.exited:
					case <-time.After(10 * time.Second):
						t.Fatal("the killed centre did not exit")
					}
				} else {
					stopServed(t, centre)
				}
				// The centre stays down until the local server has tried
				// to reach it twice at its address (held here, each
				// connection refused at once): the check must outlive
				// attempts that fail, and the back-off they leave.
				if n := refuseConnections(t, centre.addr, 2); n < 2 {
					t.Fatalf("the local server tried the stopped centre %d times in 20 s\n%s", n, logsOf(local))
				}
				stillWaiting(t, ch, "with the centre stopped", centre, local)

				again := r.startCentre(cfg, url)
				defer stopServed(t, again)
				ap := r.approvals(again.addr, "alice")
				list, err := ap.ListApprovals(t.Context(), &pb.ListApprovalsRequest{})
				if err != nil {
					t.Fatalf("ListApprovals after the restart: %v\n%s", err, logsOf(again))
				}
				if len(list.GetApprovals()) != 1 || list.GetApprovals()[0].GetId() != p.ID || list.GetApprovals()[0].GetStatus() != "pending" {
					t.Fatalf("after the restart the centre lists %v, want the pending %s", list.GetApprovals(), p.ID)
				}
				if _, err := ap.AnswerApproval(t.Context(), &pb.AnswerApprovalRequest{Id: p.ID, Answer: pb.ApprovalAnswer_APPROVAL_ANSWER_ALLOW_ONCE}); err != nil {
					t.Fatalf("AnswerApproval: %v", err)
				}
				resp := await(t, ch, 20*time.Second, centre, again, local)
				wantApproval(t, "answered after the restart", resp, pb.Decision_DECISION_ALLOW, pb.DecisionSource_DECISION_SOURCE_APPROVAL, "alice", "once")
				if resp.GetApproval().GetId() != p.ID {
					t.Errorf("the answer names approval %q, want the one queued before the restart, %q", resp.GetApproval().GetId(), p.ID)
				}
			})
		}
	}
}

// TestApprovalTwoReplicas: two centres over one PostgreSQL database; the
// local server's upstream is replica A, where its check waits; an
// approver answers through replica B, and the check on A is released
// with ALLOW and B's approver's name.
func TestApprovalTwoReplicas(t *testing.T) {
	url := pgDatabase(t)
	r := newApprovalRig(t)
	st := openPostgres(t, url)
	a := r.startCentre(r.centreConfig("a", "127.0.0.1:0", postgresSection(), approvalPolicies("1m")), url)
	defer stopServed(t, a)
	b := r.startCentre(r.centreConfig("b", "127.0.0.1:0", postgresSection(), approvalPolicies("1m")), url)
	defer stopServed(t, b)
	local, client := r.startLocal(a.addr)
	defer stopServed(t, local)

	ch := askUnattended(t, client, "toolu_replicas_1", "npm publish", r.project(), "")
	p := waitPending(t, st, 1, a, b, local)[0]
	list, err := r.approvals(b.addr, "bob").ListApprovals(t.Context(), &pb.ListApprovalsRequest{})
	if err != nil || len(list.GetApprovals()) != 1 || list.GetApprovals()[0].GetId() != p.ID {
		t.Fatalf("replica B lists %v, %v; want %s", list.GetApprovals(), err, p.ID)
	}
	out, err := r.cli("approvals", "allow", p.ID, "--addr", b.addr, "--token-file", r.token["bob"])
	if err != nil {
		t.Fatalf("toolgate approvals allow on replica B: %v\n%s", err, out)
	}
	resp := await(t, ch, 20*time.Second, a, b, local)
	wantApproval(t, "answered on the other replica", resp, pb.Decision_DECISION_ALLOW, pb.DecisionSource_DECISION_SOURCE_APPROVAL, "bob", "once")
}

// TestLearnedRuleEndToEnd: allow as a rule from the CLI; the next
// identical unattended call (a new request) is allowed at once by the
// learned rule; the rules list shows it with its expiry; a different
// command is queued again.
func TestLearnedRuleEndToEnd(t *testing.T) {
	r := newApprovalRig(t)
	db := filepath.Join(r.dir, "approvals.db")
	centre := r.startCentre(r.centreConfig("centre", "127.0.0.1:0", sqliteSection(db), approvalPolicies("1m")), "")
	defer stopServed(t, centre)
	local, client := r.startLocal(centre.addr)
	defer stopServed(t, local)
	st := openSQLite(t, db)
	proj := r.project()

	ch := askUnattended(t, client, "toolu_rule_1", "npm publish", proj, "")
	p := waitPending(t, st, 1, centre, local)[0]
	taught := time.Now()
	out, err := r.cli("approvals", "allow", p.ID, "--as-rule", "--rule-ttl", "1m", "--addr", centre.addr, "--token-file", r.token["alice"])
	if err != nil {
		t.Fatalf("toolgate approvals allow --as-rule: %v\n%s", err, out)
	}
	resp := await(t, ch, 20*time.Second, centre, local)
	wantApproval(t, "allowed as a rule", resp, pb.Decision_DECISION_ALLOW, pb.DecisionSource_DECISION_SOURCE_APPROVAL, "alice", "rule")

	// The same call, a new request: the rule answers without a wait (a
	// queued question would wait the minute for an approver).
	again := await(t, askUnattended(t, client, "toolu_rule_2", "npm publish", proj, ""), 20*time.Second, centre, local)
	wantApproval(t, "the identical call", again, pb.Decision_DECISION_ALLOW, pb.DecisionSource_DECISION_SOURCE_APPROVAL, "alice", "learned")
	if again.GetMatchedRule() != "Bash(npm publish)" {
		t.Errorf("the identical call matched %q, want the learned Bash(npm publish)", again.GetMatchedRule())
	}

	// The rule, listed with its expiry: about a minute after it was taught.
	out, err = r.cli("approvals", "rules", "--addr", centre.addr, "--token-file", r.token["alice"])
	if err != nil || !strings.Contains(out, "Bash(npm publish)") || !strings.Contains(out, "EXPIRES") {
		t.Errorf("toolgate approvals rules: %v\n%s", err, out)
	}
	out, err = r.cli("approvals", "rules", "--json", "--addr", centre.addr, "--token-file", r.token["alice"])
	if err != nil {
		t.Fatalf("toolgate approvals rules --json: %v\n%s", err, out)
	}
	var rules pb.ListLearnedRulesResponse
	if err := protojson.Unmarshal([]byte(out), &rules); err != nil || len(rules.GetRules()) != 1 {
		t.Fatalf("toolgate approvals rules --json: %v\n%s", err, out)
	}
	lr := rules.GetRules()[0]
	expires := time.UnixMicro(lr.GetExpiresUnixMicros())
	if lr.GetRule() != "Bash(npm publish)" || lr.GetProject() != proj || lr.GetCreatedBy() != "alice" || lr.GetApprovalId() != p.ID ||
		expires.Before(taught.Add(time.Minute-time.Second)) || expires.After(time.Now().Add(time.Minute+time.Second)) {
		t.Errorf("learned rule %v, expiring %s (taught at %s, for a minute)", lr, expires, taught)
	}

	// Another command is not the rule's: it is queued.
	other := askUnattended(t, client, "toolu_rule_3", "npm publish --tag beta", proj, "")
	q := waitPending(t, st, 1, centre, local)[0]
	if q.Display != "npm publish --tag beta" {
		t.Fatalf("queued %q, want npm publish --tag beta", q.Display)
	}
	stillWaiting(t, other, "queued", centre, local)
	if out, err := r.cli("approvals", "deny", q.ID, "--addr", centre.addr, "--token-file", r.token["alice"]); err != nil {
		t.Fatalf("toolgate approvals deny: %v\n%s", err, out)
	}
	wantApproval(t, "the other command", await(t, other, 20*time.Second, centre, local), pb.Decision_DECISION_DENY, pb.DecisionSource_DECISION_SOURCE_APPROVAL, "alice", "once")
}

// loggedAddr is the address in s's first log line with message msg, which
// comes before serving.
func loggedAddr(t *testing.T, s *served, msg string) string {
	t.Helper()
	for line := range strings.SplitSeq(s.log(), "\n") {
		var l struct{ Msg, Addr string }
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == msg && l.Addr != "" {
			return l.Addr
		}
	}
	t.Fatalf("no %q line with an address in the log\n%s", msg, tail(s.log(), 3000))
	return ""
}

// TestApprovalInBrowser: an unattended check waits at the centre; an
// approver opens the centre's approvals page in a headless Chromium, logs
// in with an approver's token, and clicks allow on the pending call; the
// check returns ALLOW with the approval's source and that approver.
func TestApprovalInBrowser(t *testing.T) {
	browser := browsertest.Start(t)
	r := newApprovalRig(t)
	db := filepath.Join(r.dir, "approvals.db")
	centre := r.startCentre(r.centreConfig("centre", "127.0.0.1:0", sqliteSection(db)+"  web:\n    listen: 127.0.0.1:0\n", approvalPolicies("1m")), "")
	defer stopServed(t, centre)
	page := loggedAddr(t, centre, "approvers' page")
	local, client := r.startLocal(centre.addr)
	defer stopServed(t, local)
	st := openSQLite(t, db)

	ch := askUnattended(t, client, "toolu_browser_1", "npm publish", r.project(), "")
	p := waitPending(t, st, 1, centre, local)[0]

	run := func(what string, a chromedp.Action[chromedp.Void]) {
		t.Helper()
		ctx, cancel := context.WithTimeout(browser, 20*time.Second)
		defer cancel()
		if _, err := chromedp.Run(ctx, a); err != nil {
			dump, _ := chromedp.Run(browser, chromedp.Evaluate[string](`location.href + "\n" + document.documentElement.outerHTML`))
			t.Fatalf("%s: %v\n%s\n%s", what, err, dump, logsOf(centre))
		}
	}
	pending := "#p-" + p.ID
	run("open the page, log in", chromedp.Steps(
		chromedp.Navigate("http://"+page+"/approvals"),
		chromedp.WaitVisible(chromedp.CSS(`#token`)),
		chromedp.SendKeys(chromedp.CSS(`#token`), tokenOf("alice")),
		chromedp.Click(chromedp.CSS(`#login`)),
		chromedp.WaitVisible(chromedp.CSS(pending)),
	))
	stillWaiting(t, ch, "before the click", centre, local)
	run("allow once", chromedp.Steps(
		chromedp.Click(chromedp.CSS(pending+` button[value=allow]`)),
		chromedp.WaitVisible(chromedp.CSS(`p.message`)),
	))
	resp := await(t, ch, 20*time.Second, centre, local)
	wantApproval(t, "allowed in the browser", resp, pb.Decision_DECISION_ALLOW, pb.DecisionSource_DECISION_SOURCE_APPROVAL, "alice", "once")
	if resp.GetApproval().GetId() != p.ID {
		t.Errorf("the answer names approval %q, want %q", resp.GetApproval().GetId(), p.ID)
	}
}
