package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/approvals/store"
	"github.com/toolgate/toolgate/approvals/store/pgtest"
	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/internal/testpki"
)

func readApprovalsDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "docs", "approvals.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// fencedBlocksAny returns a section's fenced blocks with their info
// strings, in order.
func fencedBlocksAny(section string) [][2]string {
	var out [][2]string
	for _, m := range regexp.MustCompile("(?ms)^```(\\w*)\n(.*?)^```").FindAllStringSubmatch(section, -1) {
		out = append(out, [2]string{m[1], m[2]})
	}
	return out
}

// linesInOrder reports the first line of want that got does not print,
// in order: "…" in a line stands for any text, and a line that is "…"
// alone for any lines.
func linesInOrder(got, want []string) string {
	i := 0
	for _, w := range want {
		if w == "…" {
			continue
		}
		found := false
		for ; i < len(got); i++ {
			if linesMatch([]string{got[i]}, []string{w}) {
				found = true
				i++
				break
			}
		}
		if !found {
			return w
		}
	}
	return ""
}

// TestApprovalsFlowDocs: the policy docs/approvals.md's "How an approval
// works" shows validates, and explain prints what the page shows of it.
func TestApprovalsFlowDocs(t *testing.T) {
	t.Setenv("TOOLGATE_UNATTENDED", "")
	section := markdownSection(t, readApprovalsDoc(t), "## How an approval works")
	yamls, consoles := fencedBlocks(section, "yaml"), fencedBlocks(section, "console")
	if len(yamls) != 1 || len(consoles) != 1 {
		t.Fatalf("want one yaml and one console block, found %d and %d", len(yamls), len(consoles))
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "toolgate.yaml"), []byte(yamls[0]), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	var out, errOut bytes.Buffer
	if code := run(t.Context(), []string{"validate", "toolgate.yaml"}, &out, &errOut); code != 0 {
		t.Fatalf("validate: exit %d: %s%s", code, out.String(), errOut.String())
	}
	cmd, want, _ := strings.Cut(strings.TrimSuffix(consoles[0], "\n"), "\n")
	args := shellWords(t, strings.TrimPrefix(cmd, "$ "))
	if args[0] != "toolgate" {
		t.Fatalf("%s: not a toolgate command", cmd)
	}
	out.Reset()
	errOut.Reset()
	if code := run(t.Context(), args[1:], &out, &errOut); code != exitAsk {
		t.Errorf("%s: exit %d, want %d (ask): %s", cmd, code, exitAsk, errOut.String())
	}
	if l := linesInOrder(strings.Split(out.String(), "\n"), strings.Split(want, "\n")); l != "" {
		t.Errorf("%s: the documentation's line %q is not printed (in that order):\n%s", cmd, l, out.String())
	}
}

// TestApprovalsFleetDocs runs the recipe of docs/approvals.md's
// "Approvals for a CI fleet" as the page gives it, on this machine's
// addresses and files: the centre's config validates and serves (over a
// throwaway PostgreSQL, TLS from a test CA, the webhook at a test
// receiver) with the token file shown; the runner's serve command starts
// a local toolgate on it; the agent's hook command from the settings
// shown waits for an approver, and alice's allow from the command line
// releases it with what "What the agent gets" shows; the webhook
// announced it with the page's link; the hook's default timeout gives
// the deny the page shows; the timeouts shown nest as the page says; and
// the centre exports every metric "Running it" lists.
func TestApprovalsFleetDocs(t *testing.T) {
	pgtest.SkipOrFail(t)
	doc := readApprovalsDoc(t)
	section := fencedSection(t, doc, "## Approvals for a CI fleet")
	blocks := fencedBlocksAny(section)
	var centreYAML, validateConsole, tokensText, serveCmd, settings, denyOut string
	for _, b := range blocks {
		switch {
		case b[0] == "yaml":
			centreYAML = b[1]
		case b[0] == "console":
			validateConsole = b[1]
		case b[0] == "" && strings.Contains(b[1], " approver\n"):
			tokensText = b[1]
		case b[0] == "sh":
			serveCmd = strings.TrimSpace(b[1])
		case b[0] == "json" && strings.Contains(b[1], `"hooks"`):
			settings = b[1]
		case b[0] == "json":
			denyOut = strings.TrimSpace(b[1])
		}
	}
	for name, v := range map[string]string{"centre yaml": centreYAML, "validate console": validateConsole, "token file": tokensText, "serve command": serveCmd, "settings": settings, "hook deny output": denyOut} {
		if v == "" {
			t.Fatalf("the section shows no %s", name)
		}
	}
	allowBlocks := jsonBlocks(markdownSection(t, doc, "## What the agent gets"))
	if len(allowBlocks) != 1 {
		t.Fatalf("What the agent gets: %d json blocks, want the printed allow", len(allowBlocks))
	}
	allowOut := strings.TrimSpace(allowBlocks[0])

	dir := t.TempDir()
	write := func(name, body string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}

	// 1. The centre's config validates as shown.
	centreFile := write("centre.yaml", centreYAML)
	t.Chdir(dir)
	cmd, want, _ := strings.Cut(validateConsole, "\n")
	var out, errOut bytes.Buffer
	run(t.Context(), shellWords(t, strings.TrimPrefix(cmd, "$ toolgate "))[0:2], &out, &errOut)
	if got := errOut.String() + out.String(); got != want {
		t.Errorf("%s printed\n%s\nthe docs show\n%s", cmd, got, want)
	}
	cc, err := config.Load(centreFile)
	if err != nil {
		t.Fatal(err)
	}
	u := cc.Policies["default"].Unattended
	if u == nil || u.OnAsk != config.OnAskApprove || u.ApprovalTimeout == 0 {
		t.Fatalf("the centre's default policy does not queue for approval: %+v", u)
	}
	approvalTimeout := u.ApprovalTimeout

	// 2. The token file, as shown: alice approves, ci-runner-7 is the
	// runner's, build-bot a client.
	tokens := write("tokens", tokensText)
	tokenOf := map[string]string{}
	for _, l := range strings.Split(tokensText, "\n") {
		if f := strings.Fields(l); len(f) == 3 && !strings.HasPrefix(l, "#") {
			tokenOf[f[0]+" "+f[2]] = f[1]
		}
	}
	alice, runner, bot := tokenOf["alice approver"], tokenOf["ci-runner-7 upstream"], tokenOf["build-bot client"]
	if alice == "" || runner == "" || bot == "" {
		t.Fatalf("the token file lacks alice (approver), ci-runner-7 (upstream) or build-bot (client): %v", tokenOf)
	}
	aliceFile, runnerFile, botFile := write("alice.token", alice+"\n"), write("upstream.token", runner+"\n"), write("bot.token", bot+"\n")

	// The centre, on this machine: its addresses, a test CA's
	// certificate, a throwaway database, a webhook receiver.
	pki := testpki.New(t)
	cluster, err := pgtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Stop() })
	dbURL, err := cluster.NewDatabase(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("TOOLGATE_POSTGRES_URL", dbURL)
	messages := make(chan string, 16)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		select {
		case messages <- string(b):
		default:
		}
	}))
	t.Cleanup(hook.Close)
	t.Setenv("TOOLGATE_WEBHOOK_URL", hook.URL)
	mine := strings.NewReplacer("0.0.0.0:50051", "127.0.0.1:0", "0.0.0.0:8443", "127.0.0.1:0",
		"/etc/toolgate/tls/tls.crt", pki.ServerCert, "/etc/toolgate/tls/tls.key", pki.ServerKey, "/etc/toolgate/tokens", tokens)
	centreRun := write("centre-run.yaml", mine.Replace(centreYAML))
	for _, v := range []string{"TOOLGATE_TLS_CA", "TOOLGATE_TLS_CERT", "TOOLGATE_TLS_KEY", "TOOLGATE_TOKEN_FILE", "TOOLGATE_UNATTENDED", "TOOLGATE_ADDR"} {
		t.Setenv(v, "")
	}
	centre, centreLogs := startServeLogs(t, "--config", centreRun, "--metrics-listen", "127.0.0.1:0")
	if !strings.Contains(centreLogs(), `"msg":"approvers' page"`) {
		t.Errorf("the centre serves no approvers' page:\n%s", centreLogs())
	}

	// 3. The runner's toolgate, by the command shown.
	args := shellWords(t, serveCmd)
	if len(args) < 2 || args[0] != "toolgate" || args[1] != "serve" {
		t.Fatalf("%q: not toolgate serve", serveCmd)
	}
	runnerFiles := strings.NewReplacer("toolgate.example.com:50051", centre, "/etc/toolgate/ca.pem", pki.CA,
		"/etc/toolgate/upstream.token", runnerFile, "/var/lib/toolgate", filepath.Join(dir, "state"))
	for i := range args {
		args[i] = runnerFiles.Replace(args[i])
	}
	local, localLogs := startServeLogs(t, args[2:]...)

	// 4. The hook command, and its timeouts nested as the page says.
	settingsFile := write("settings.json", settings)
	var s struct {
		Hooks map[string][]struct {
			Hooks []struct {
				Command string  `json:"command"`
				Timeout float64 `json:"timeout"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal([]byte(settings), &s); err != nil || len(s.Hooks["PreToolUse"]) != 1 || len(s.Hooks["PreToolUse"][0].Hooks) != 1 {
		t.Fatalf("the settings: %v %+v", err, s)
	}
	agentLimit := time.Duration(s.Hooks["PreToolUse"][0].Hooks[0].Timeout * float64(time.Second))
	hookArgs := shellWords(t, hookCommand(t, settingsFile, "PreToolUse", "Bash"))
	if len(hookArgs) < 3 || hookArgs[0] != "toolgate" || hookArgs[1] != "hook" || hookArgs[2] != "claude-code" {
		t.Fatalf("the hook command %q is not toolgate hook claude-code", hookArgs)
	}
	var hookTimeout time.Duration
	withoutTimeout := []string{"hook"}
	for i := 2; i < len(hookArgs); i++ {
		if hookArgs[i] == "--timeout" && i+1 < len(hookArgs) {
			if hookTimeout, err = time.ParseDuration(hookArgs[i+1]); err != nil {
				t.Fatal(err)
			}
			i++
			continue
		}
		withoutTimeout = append(withoutTimeout, hookArgs[i])
	}
	if !(agentLimit > hookTimeout && hookTimeout > approvalTimeout) {
		t.Errorf("the page's timeouts do not nest: the agent's %s, the hook's --timeout %s, approval_timeout %s", agentLimit, hookTimeout, approvalTimeout)
	}

	proj, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	input := func(id string) []byte {
		b, _ := json.Marshal(map[string]any{"session_id": "ci-nightly-42", "cwd": proj, "permission_mode": "default",
			"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": id,
			"tool_input": map[string]any{"command": "npm publish", "description": "Publish the package"}})
		return b
	}
	t.Setenv("TOOLGATE_ADDR", local)
	t.Setenv("CLAUDE_PROJECT_DIR", proj) // as Claude Code sets it for its hooks
	type hookResult struct {
		code        int
		out, stderr string
	}
	answered := make(chan hookResult, 1)
	go func() {
		var out, errOut bytes.Buffer
		stdin = bytes.NewReader(input("toolu_01Fleet"))
		code := run(t.Context(), hookArgs[1:], &out, &errOut)
		answered <- hookResult{code, out.String(), errOut.String()}
	}()

	// The approver sees it, and allows it from the command line.
	approver := func(token string, a ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := run(t.Context(), append(append([]string{"approvals"}, a...), "--addr", centre, "--tls-ca", pki.CA, "--token-file", token), &out, &errOut)
		return code, out.String(), errOut.String()
	}
	var id string
	waitFor(t, "the hook's question in the approvals list", func() bool {
		_, out, _ := approver(aliceFile, "list", "--json")
		var l struct {
			Approvals []struct {
				ID string `json:"id"`
			} `json:"approvals"`
		}
		if json.Unmarshal([]byte(out), &l) == nil && len(l.Approvals) == 1 {
			id = l.Approvals[0].ID
		}
		return id != ""
	})
	if code, _, errOut := approver(botFile, "list"); code != 1 {
		t.Errorf("a client's token listed the approvals: exit %d %s", code, errOut)
	}
	// The rule an allow as a rule would teach names the command, without
	// the description Claude Code adds to every call, as "Learned rules"
	// says.
	if _, out, _ := approver(aliceFile, "show", id); !strings.Contains(out, "Bash(npm publish)") || strings.Contains(out, `Bash({"command"`) {
		t.Errorf("approvals show %s: the rule is not the command alone:\n%s", id, out)
	}
	if code, out, errOut := approver(aliceFile, "allow", id); code != 0 {
		t.Fatalf("approvals allow %s: exit %d %s%s", id, code, out, errOut)
	}
	apID := regexp.MustCompile(`ap-[0-9a-f]{32}`)
	select {
	case r := <-answered:
		got := apID.ReplaceAllString(strings.TrimSpace(r.out), "ap-…")
		if r.code != 0 || !linesMatch([]string{got}, []string{allowOut}) {
			t.Errorf("the hook exited %d and printed\n%s%s\nthe page shows\n%s", r.code, r.out, r.stderr, allowOut)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the hook was not released by the allow\ncentre:\n%s\nlocal:\n%s", centreLogs(), localLogs())
	}
	select {
	case m := <-messages:
		if !strings.Contains(m, "https://toolgate.example.com:8443/approvals/"+id) {
			t.Errorf("the webhook's message does not link to the approval on the page: %s", m)
		}
	case <-time.After(10 * time.Second):
		t.Error("the webhook announced nothing")
	}

	// The runner's decision record reached the centre's store, linked to
	// its approval, as "The fleet's decisions" says.
	st, err := store.OpenPostgres(t.Context(), dbURL, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	host, _ := os.Hostname()
	waitFor(t, "the runner's decision record at the centre", func() bool {
		recs, err := st.QueryRecords(t.Context(), store.RecordFilter{Project: proj, Source: "approval"})
		return err == nil && len(recs) == 1 && recs[0].ApprovalID == id && recs[0].Decision == "allow" && strings.HasPrefix(recs[0].Host, host+" (as ")
	})

	// Without --timeout (5s), the check is denied before the hook's
	// deadline, as the page shows.
	start := time.Now()
	var o, e bytes.Buffer
	stdin = bytes.NewReader(input("toolu_02Fleet"))
	code := run(t.Context(), withoutTimeout, &o, &e)
	stdin = nil
	got := apID.ReplaceAllString(strings.TrimSpace(o.String()), "ap-…")
	if code != 0 || !linesMatch([]string{got}, []string{denyOut}) {
		t.Errorf("the hook without --timeout exited %d and printed\n%s%s\nthe page shows\n%s", code, o.String(), e.String(), denyOut)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Errorf("the hook without --timeout answered after %s, past its 5s deadline", waited)
	}

	// Every metric "Running it" lists is exported, with the labels shown.
	m := regexp.MustCompile(`"metrics_addr":"([^"]+)"`).FindStringSubmatch(centreLogs())
	if m == nil {
		t.Fatalf("no metrics address in the centre's serving line:\n%s", centreLogs())
	}
	resp, err := http.Get("http://" + m[1] + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	scraped, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	running := markdownSection(t, doc, "## Running it")
	names := regexp.MustCompile("`(toolgate_approvals_[a-z_]+)`").FindAllStringSubmatch(running, -1)
	if len(names) < 4 {
		t.Fatalf("Running it lists %d approvals metrics", len(names))
	}
	for _, n := range names {
		if !regexp.MustCompile(`(?m)^` + n[1] + `[{ ]`).Match(scraped) {
			t.Errorf("the centre exports no %s", n[1])
		}
	}
	for _, row := range regexp.MustCompile("(?m)^ *\\| `(toolgate_approvals_[a-z_]+)`[^|]*\\| `([a-z]+)`: (.*)\\|$").FindAllStringSubmatch(running, -1) {
		listed := map[string]bool{}
		for _, v := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(row[3], -1) {
			listed[v[1]] = true
			if !strings.Contains(string(scraped), row[1]+`{`+row[2]+`="`+v[1]+`"}`) {
				t.Errorf("the centre exports no %s{%s=%q}", row[1], row[2], v[1])
			}
		}
		// And the page lists every value the centre exports.
		for _, v := range regexp.MustCompile(`(?m)^`+row[1]+`\{`+row[2]+`="([a-z_]+)"\}`).FindAllStringSubmatch(string(scraped), -1) {
			if !listed[v[1]] {
				t.Errorf("the centre exports %s{%s=%q}, which Running it does not list", row[1], row[2], v[1])
			}
		}
	}
	if !strings.Contains(string(scraped), `toolgate_approvals_outcomes_total{outcome="call_deadline"} 1`) {
		t.Errorf("the hook's deadline is not counted as call_deadline:\n%s", scraped)
	}
}
