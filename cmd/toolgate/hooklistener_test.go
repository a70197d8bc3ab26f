package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/testpki"
)

// unixPost posts body to path on the hook listener at the Unix socket sock.
func unixPost(t *testing.T, sock, path string, header http.Header, body []byte) (int, string) {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://localhost"+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(data)
}

func recordedInput(t *testing.T, name string) []byte {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("testdata", "hook"))
	if err != nil {
		t.Fatal(err)
	}
	input, err := os.ReadFile(filepath.Join(root, name))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.ReplaceAll(input, []byte("$TESTDATA"), []byte(root))
}

// TestHookListenerFailsClosed: what Claude Code's HTTP hook posts is
// answered 200 in its own format whatever goes wrong (Claude Code runs the
// call on an error status unless the hook says onFailure block); only a
// path that names no agent, or a method other than POST, is an error.
func TestHookListenerFailsClosed(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "hook.sock")
	startServe(t, "--hook-unix-socket", sock)
	deny := recordedInput(t, "claude-code/deny-rule.json")
	tests := []struct {
		name, path string
		body       []byte
		code       int
		want       string
	}{
		{"decision", "/hook/claude-code", deny, 200, `"permissionDecision":"deny","permissionDecisionReason":"denied by rule Bash(rm -rf /)"`},
		{"bad input", "/hook/claude-code", []byte(`{"hook_event_name":"PreToolUse"`), 200, `"permissionDecision":"deny","permissionDecisionReason":"toolgate could not decide: hook input: not a JSON object`},
		{"bad input, on_error ask", "/hook/claude-code?on_error=ask", []byte(`[]`), 200, `"permissionDecision":"ask","permissionDecisionReason":"toolgate could not decide: hook input`},
		{"bad on_error", "/hook/claude-code?on_error=allow", deny, 200, `"permissionDecision":"deny","permissionDecisionReason":"toolgate could not decide: on_error \"allow\": want deny or ask"`},
		{"bad mode", "/hook/claude-code?mode=yolo", deny, 200, `"permissionDecision":"deny","permissionDecisionReason":"toolgate could not decide: mode \"yolo\"`},
		{"too large", "/hook/codex", bytes.Repeat([]byte(" "), 16<<20+10), 200, `"permissionDecision":"deny","permissionDecisionReason":"toolgate could not decide: hook input: larger than 16777216 bytes"`},
		{"gemini", "/hook/gemini-cli", []byte(`{}`), 200, `{"decision":"deny","reason":"toolgate could not decide: hook input`},
		{"no such agent", "/hook/cursor", deny, 404, "no such hook"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := unixPost(t, sock, tc.path, nil, tc.body)
			if code != tc.code || !strings.Contains(body, tc.want) {
				t.Errorf("%d %q; want %d and %q", code, body, tc.code, tc.want)
			}
		})
	}
}

// TestHookListenerTokens: with server tokens, the hook listener takes the
// gRPC listener's bearer tokens, over TLS; a missing or unknown token is a
// deny (a failure in the agent's format), never a decision.
func TestHookListenerTokens(t *testing.T) {
	p := testpki.New(t)
	dir := t.TempDir()
	tokens, good, bad := filepath.Join(dir, "tokens"), filepath.Join(dir, "good"), filepath.Join(dir, "bad")
	for path, content := range map[string]string{
		tokens: "laptop tok-hook-0123456789abcdef\n",
		good:   "tok-hook-0123456789abcdef\n",
		bad:    "tok-nope-0123456789abcdef\n",
	} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	_, logs := startServeLogs(t, "--tls-cert", p.ServerCert, "--tls-key", p.ServerKey, "--token-file", tokens, "--hook-listen", "127.0.0.1:0")
	addr := hookAddr(t, logs)
	input := recordedInput(t, "claude-code/deny-rule.json")
	base := []string{"claude-code", "--addr", addr, "--tls-ca", p.CA, "--timeout", "10s"}

	code, out, errOut := runHookBinary(t, input, append(base, "--token-file", good)...)
	if code != 0 || !strings.Contains(out, `"permissionDecision":"deny"`) || strings.Contains(out, "could not decide") {
		t.Fatalf("with the token: exit %d %q %q", code, out, errOut)
	}
	if !strings.Contains(logs(), `"client":"laptop"`) {
		t.Error("the decision log does not name the token's client")
	}
	for name, args := range map[string][]string{
		"no token":    nil,
		"wrong token": {"--token-file", bad},
	} {
		code, out, errOut := runHookBinary(t, input, append(base, args...)...)
		if code != 0 || !strings.Contains(out, `"permissionDecision":"deny","permissionDecisionReason":"toolgate could not decide: server `+addr+` refused the credentials (Unauthenticated)`) {
			t.Errorf("%s: exit %d %q %q", name, code, out, errOut)
		}
	}
	// Plaintext to a TLS listener is no answer.
	code, out, errOut = runHookBinary(t, input, "claude-code", "--addr", addr, "--token-file", good, "--timeout", "10s")
	if code != 0 || !strings.Contains(out, `"permissionDecision":"deny","permissionDecisionReason":"toolgate could not decide: server `+addr) {
		t.Errorf("plaintext: exit %d %q %q", code, out, errOut)
	}
}

// hookAddr is the hook listener's address, from the server's log: its
// line may come after the gRPC listener's, which startServeLogs waits for.
func hookAddr(t *testing.T, logs func() string) string {
	t.Helper()
	re := regexp.MustCompile(`"msg":"serving hooks over HTTP","addr":"([^"]+)"`)
	var m []string
	waitFor(t, "the hook listener's log line", func() bool { m = re.FindStringSubmatch(logs()); return m != nil })
	return m[1]
}

// TestHookBinaryNeverHangs: a listener that takes the connection and never
// answers gets the on-error decision once --timeout passes.
func TestHookBinaryNeverHangs(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	done := make(chan struct{})
	var code int
	var out string
	go func() {
		defer close(done)
		code, out, _ = runHookBinary(t, recordedInput(t, "claude-code/deny-rule.json"), "claude-code", "--addr", l.Addr().String(), "--timeout", "300ms", "--on-error", "ask")
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("toolgate-hook did not return after its --timeout")
	}
	if want := `"permissionDecision":"ask","permissionDecisionReason":"toolgate could not decide: server ` + l.Addr().String() + ` did not answer within --timeout (DeadlineExceeded)"`; code != 0 || !strings.Contains(out, want) {
		t.Errorf("exit %d %q; want %q", code, out, want)
	}
}

// TestHookBinaryNotAListener: an HTTP server that is not toolgate's hook
// listener (a wrong --addr) gives no decision, whatever it answers.
func TestHookBinaryNotAListener(t *testing.T) {
	for name, h := range map[string]http.HandlerFunc{
		"200 html": func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "<html>hello</html>") },
		"200 json": func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, `{"tool":"Bash"}`) },
		"500":      func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(500) },
	} {
		t.Run(name, func(t *testing.T) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			srv := &http.Server{Handler: h}
			go func() { _ = srv.Serve(l) }()
			t.Cleanup(func() { _ = srv.Close() })
			code, out, errOut := runHookBinary(t, recordedInput(t, "claude-code/deny-rule.json"), "claude-code", "--addr", l.Addr().String())
			if want := `"permissionDecision":"deny","permissionDecisionReason":"toolgate could not decide: server ` + l.Addr().String() + ` failed to decide (Unknown)"`; code != 0 || !strings.Contains(out, want) {
				t.Errorf("exit %d %q %q; want %q", code, out, errOut, want)
			}
		})
	}
}

// TestServeHookTimeoutFlag: --hook-timeout sets server.hook.timeout (a
// value the config refuses is refused, naming the setting).
func TestServeHookTimeoutFlag(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"serve", "--hook-timeout", "-1s", "--listen", "127.0.0.1:0", "--metrics-listen", "off"}, &stdout, &stderr)
	if code == 0 || !strings.Contains(stderr.String(), "server.hook.timeout: must be positive, got -1s") {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
}
