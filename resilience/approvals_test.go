package resilience

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/toolgate/toolgate/approvals/store"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
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

// sqliteSection and postgresSection are a centre's approvals section.
func sqliteSection(path string) string {
	return "approvals:\n  store: sqlite\n  sqlite_path: " + path + "\n"
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
