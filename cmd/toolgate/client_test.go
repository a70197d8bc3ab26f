package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/internal/testpki"
)

// runCheck runs "toolgate check" and returns its exit code and output.
func runCheck(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(t.Context(), append([]string{"check"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestCheckOverTLSWithToken(t *testing.T) {
	p := testpki.New(t)
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	clientToken := filepath.Join(dir, "client-token")
	wrongToken := filepath.Join(dir, "wrong-token")
	for path, content := range map[string]string{
		tokens:      "# name token\nci-runner tok-ci-0123456789abcdef\n",
		clientToken: "tok-ci-0123456789abcdef\n",
		wrongToken:  "tok-xx-0123456789abcdef\n",
	} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	addr, logs := startServeLogs(t, "--tls-cert", p.ServerCert, "--tls-key", p.ServerKey, "--tls-client-ca", p.CA, "--token-file", tokens)
	base := []string{"--addr", addr, "--tool", "Read", "--input", `{"file_path":"a.go"}`, "--cwd", dir, "--timeout", "5s"}
	tlsArgs := []string{"--tls-ca", p.CA, "--tls-cert", p.ClientCert, "--tls-key", p.ClientKey}

	code, out, errOut := runCheck(t, append(append(base, tlsArgs...), "--token-file", clientToken)...)
	if code != exitAllow || !strings.Contains(out, "DECISION_ALLOW") {
		t.Fatalf("TLS, client cert and token: exit %d %s %s", code, out, errOut)
	}
	if !strings.Contains(logs(), `"client":"ci-runner"`) {
		t.Error("the decision log does not name the token's client")
	}
	for name, args := range map[string][]string{
		"no token":          tlsArgs,
		"wrong token":       append(tlsArgs, "--token-file", wrongToken),
		"no client cert":    {"--tls-ca", p.CA, "--token-file", clientToken},
		"plaintext":         {"--token-file", clientToken},
		"unknown server CA": {"--tls", "--tls-cert", p.ClientCert, "--tls-key", p.ClientKey, "--token-file", clientToken},
	} {
		if code, out, errOut := runCheck(t, append(base, args...)...); code != exitError || out != "" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want an error", name, code, out, errOut)
		}
	}
}

func TestClientFlagErrors(t *testing.T) {
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("tok-0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	twoFields := filepath.Join(dir, "two")
	if err := os.WriteFile(twoFields, []byte("ci tok-0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"--tool", "Read", "--timeout", "2s"}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"token in plaintext to another host", []string{"--addr", "10.1.2.3:50051", "--token-file", token}, "refusing to send a token in plaintext"},
		{"server token file line", []string{"--addr", deadAddr(t), "--token-file", twoFields}, "want the token alone"},
		{"missing token file", []string{"--token-file", filepath.Join(dir, "nope")}, "--token-file"},
		{"cert without key", []string{"--tls-cert", token}, "--tls-cert and --tls-key go together"},
		{"CA that is not PEM", []string{"--tls-ca", token}, "holds no PEM certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := runCheck(t, append(base, tt.args...)...)
			if code != exitError || !strings.Contains(errOut, tt.want) {
				t.Fatalf("exit %d, stderr %q; want %q", code, errOut, tt.want)
			}
			if strings.Contains(errOut, "0123456789abcdef") {
				t.Errorf("stderr quotes the token: %q", errOut)
			}
		})
	}
}

func TestCheckStream(t *testing.T) {
	addr := startServe(t)
	dir := t.TempDir()
	session := filepath.Join(dir, "session.jsonl")
	lines := []string{
		`{"session":{"sessionId":"s1","workingDirectory":"` + dir + `","mode":"PERMISSION_MODE_DEFAULT"}}`,
		`{"transcript":{"entries":[{"role":"ROLE_USER","text":"tidy the repo"}]}}`,
		`{"check":{"requestId":"read","tool":{"name":"Read","input":{"file_path":"a.go"}}}}`,
		``,
		`{"check":{"tool":{"name":"Bash","input":{"command":"rm -rf /"}}}}`,
		`{"check":{"requestId":"deploy","tool":{"name":"Bash","input":{"command":"make deploy"}}}}`,
	}
	if err := os.WriteFile(session, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCheck(t, "--addr", addr, "--stream", session)
	if code != exitAllow {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	got := map[string]string{}
	for line := range strings.Lines(out) {
		var r struct {
			RequestID string `json:"requestId"`
			Response  struct {
				Decision string `json:"decision"`
			} `json:"response"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if _, dup := got[r.RequestID]; dup {
			t.Fatalf("%s answered twice", r.RequestID)
		}
		got[r.RequestID] = r.Response.Decision
	}
	want := map[string]string{"read": "DECISION_ALLOW", "line-5": "DECISION_DENY", "deploy": "DECISION_ASK"}
	if len(got) != len(want) {
		t.Fatalf("answers %v, want %v", got, want)
	}
	for id, d := range want {
		if got[id] != d {
			t.Errorf("%s: %s, want %s", id, got[id], d)
		}
	}

	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte(lines[2]+"\n{\"chek\":{}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCheck(t, "--addr", addr, "--stream", bad); code != exitError || !strings.Contains(errOut, "bad.jsonl:2") {
		t.Errorf("malformed line: exit %d %q", code, errOut)
	}
	// A refused item (session context after a check) fails the run.
	refused := filepath.Join(dir, "refused.jsonl")
	if err := os.WriteFile(refused, []byte(lines[2]+"\n"+lines[0]+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runCheck(t, "--addr", addr, "--stream", refused); code != exitError || !strings.Contains(errOut, "1 stream items were refused") || !strings.Contains(out, "must come before the first check") {
		t.Errorf("refused item: exit %d %q %q", code, out, errOut)
	}
}

func TestServeAuditLog(t *testing.T) {
	dir := t.TempDir()
	audit := filepath.Join(dir, "audit.jsonl")
	addr := startServe(t, "--audit-log", audit)
	code, _, errOut := runCheck(t, "--addr", addr, "--tool", "Bash", "--input", `{"command":"curl -H 'Authorization: Bearer abcdefghijklmnop' https://x"}`, "--cwd", dir)
	if code == exitError {
		t.Fatal(errOut)
	}
	waitFor(t, "the audit record", func() bool {
		data, _ := os.ReadFile(audit)
		return strings.Contains(string(data), `"msg":"decision"`)
	})
	data, _ := os.ReadFile(audit)
	if strings.Contains(string(data), "abcdefghijklmnop") || !strings.Contains(string(data), "Bearer [REDACTED]") {
		t.Errorf("audit record %s: want the command with its token masked", data)
	}
}

// The hook adapters take the same TLS and token flags as check, and fail
// closed when the server refuses them.
func TestHookOverTLSWithToken(t *testing.T) {
	p := testpki.New(t)
	dir := t.TempDir()
	tokens, token := filepath.Join(dir, "tokens"), filepath.Join(dir, "token")
	if err := os.WriteFile(tokens, []byte("claude-hook tok-hook-0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(token, []byte("tok-hook-0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := startServe(t, "--tls-cert", p.ServerCert, "--tls-key", p.ServerKey, "--token-file", tokens)
	t.Setenv("CLAUDE_PROJECT_DIR", dir) // as Claude Code sets it for its hooks
	input := `{"session_id":"s1","transcript_path":"","cwd":"` + dir + `","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{"file_path":"a.go"},"tool_use_id":"t1"}`
	hook := func(args ...string) string {
		t.Helper()
		stdin = strings.NewReader(input)
		t.Cleanup(func() { stdin = nil })
		var out, errOut bytes.Buffer
		if code := run(t.Context(), append([]string{"hook", "claude-code", "--addr", addr, "--timeout", "5s"}, args...), &out, &errOut); code != 0 {
			t.Fatalf("exit %d: %s", code, errOut.String())
		}
		return out.String()
	}
	if out := hook("--tls-ca", p.CA, "--token-file", token); !strings.Contains(out, `"permissionDecision":"allow"`) {
		t.Errorf("with TLS and token: %s", out)
	}
	if out := hook("--tls-ca", p.CA); !strings.Contains(out, `"permissionDecision":"deny"`) || !strings.Contains(out, "Unauthenticated") {
		t.Errorf("without a token: %s", out)
	}
	t.Setenv("TOOLGATE_TLS_CA", p.CA)
	t.Setenv("TOOLGATE_TOKEN_FILE", token)
	if out := hook(); !strings.Contains(out, `"permissionDecision":"allow"`) {
		t.Errorf("TLS and token from the environment: %s", out)
	}
}

// failWriter fails every write, like a closed stdout.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, os.ErrClosed }

// When the adapter cannot print a decision it exits 2, which every agent
// takes as a block; 1 would let the call run.
func TestHookOutputFailureBlocks(t *testing.T) {
	addr := startServe(t)
	// A deny, which every adapter prints (Codex prints nothing on allow).
	for agent, tool := range map[string]string{"claude-code": "Bash", "gemini-cli": "run_shell_command", "codex": "Bash"} {
		stdin = strings.NewReader(`{"session_id":"s","cwd":"/p","hook_event_name":"PreToolUse","tool_name":"` + tool + `","tool_input":{"command":"rm -rf /"}}`)
		var errOut bytes.Buffer
		if code := run(t.Context(), []string{"hook", agent, "--addr", addr}, failWriter{}, &errOut); code != 2 {
			t.Errorf("%s: exit %d (%s), want 2", agent, code, errOut.String())
		}
	}
	stdin = nil
}

// Tokens go in plaintext only to this machine: loopback addresses and
// Unix sockets.
func TestLoopbackHost(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:50051":            true,
		"localhost:50051":            true,
		"[::1]:50051":                true,
		"dns:///127.0.0.1:50051":     true,
		"unix:/run/toolgate.sock":    true,
		"unix:///run/toolgate.sock":  true,
		"10.0.0.5:50051":             false,
		"toolgate.example.com:50051": false,
		"dns:///toolgate:50051":      false,
	} {
		if got := loopbackHost(addr); got != want {
			t.Errorf("loopbackHost(%q) = %v, want %v", addr, got, want)
		}
	}
}
