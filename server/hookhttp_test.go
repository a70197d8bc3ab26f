package server

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/stallfs"
)

func TestHookConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		mut  func(*Config)
		want string // "" for valid
	}{
		{"off", func(*Config) {}, ""},
		{"loopback", func(c *Config) { c.Hook.Listen = "127.0.0.1:50052" }, ""},
		{"localhost", func(c *Config) { c.Hook.Listen = "localhost:50052" }, ""},
		{"ipv6 loopback", func(c *Config) { c.Hook.Listen = "[::1]:50052" }, ""},
		{"network without tokens", func(c *Config) { c.Hook.Listen = "0.0.0.0:50052" }, "server.hook.listen"},
		{"host without tokens", func(c *Config) { c.Hook.Listen = "toolgate.internal:50052" }, "server.hook.listen"},
		{"network with tokens, no TLS", func(c *Config) { c.Hook.Listen = "0.0.0.0:50052"; c.TokenFile = "/etc/toolgate/tokens" }, "server.hook.listen"},
		{"network with tokens and TLS", func(c *Config) {
			c.Hook.Listen = "0.0.0.0:50052"
			c.TokenFile = "/etc/toolgate/tokens"
			c.TLS.CertFile, c.TLS.KeyFile = "/etc/toolgate/tls.crt", "/etc/toolgate/tls.key"
		}, ""},
		{"not host:port", func(c *Config) { c.Hook.Listen = "50052" }, "server.hook.listen"},
		{"relative socket", func(c *Config) { c.Hook.UnixSocket = "hook.sock" }, "server.hook.unix_socket"},
		{"long socket", func(c *Config) { c.Hook.UnixSocket = "/" + strings.Repeat("s", 200) }, "server.hook.unix_socket"},
		{"timeout", func(c *Config) { c.Hook.Timeout = 0 }, "server.hook.timeout"},
		{"in flight", func(c *Config) { c.Hook.MaxInFlight = 0 }, "server.hook.max_in_flight"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.mut(&c)
			err := c.Validate()
			if tc.want == "" && err != nil {
				t.Errorf("Validate: %v, want nil", err)
			}
			if tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("Validate: %v, want an error naming %s", err, tc.want)
			}
		})
	}
	if got := DefaultConfig().Hook; got.Enabled() || got.Timeout != 30*time.Second {
		t.Errorf("default hook config %+v: want off, timeout 30s", got)
	}
}

// TestHookInFlightBound: a hook request over server.hook.max_in_flight is
// answered at once with the failure, a deny, and served once a slot is
// free again.
func TestHookInFlightBound(t *testing.T) {
	env := newEnv(t, withConfig(func(c *Config) { c.Hook.MaxInFlight = 1 }))
	h := env.srv.HookHandler()
	post := func() string {
		body := `{"session_id":"s","cwd":"/","hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{"file_path":"/etc/hostname"}}`
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:50052/hook/claude-code", strings.NewReader(body))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
		return rec.Body.String()
	}
	env.srv.hookSlots <- struct{}{} // the one slot, taken
	if got, want := post(), `"permissionDecision":"deny","permissionDecisionReason":"toolgate could not decide: server 127.0.0.1:50052 refused the request as over a limit (ResourceExhausted)"`; !strings.Contains(got, want) {
		t.Errorf("over the bound: %s, want %s", got, want)
	}
	<-env.srv.hookSlots
	if got := post(); strings.Contains(got, "could not decide") || !strings.Contains(got, `"permissionDecision"`) {
		t.Errorf("with a slot free: %s, want a decision", got)
	}
}

// TestHookRefusesBrowsers: a request a web page could make (marked by the
// browser, or to a name that DNS rebinding points here) is answered with
// the failure, a deny, and decides nothing; an agent's request is decided.
// With tokens, which a page cannot send, a name is fine.
func TestHookRefusesBrowsers(t *testing.T) {
	body := `{"session_id":"s","cwd":"/","hook_event_name":"PreToolUse","tool_name":"TodoWrite","tool_input":{"todos":[]}}`
	post := func(h http.Handler, url string, header map[string]string) string {
		t.Helper()
		req := httptest.NewRequest(http.MethodPost, url, strings.NewReader(body))
		for k, v := range header {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
		return rec.Body.String()
	}
	const allowed = `"permissionDecision":"allow"`
	h := newEnv(t).srv.HookHandler()
	for _, tc := range []struct {
		name, url string
		header    map[string]string
		want      string // in the answer
	}{
		{"agent over loopback", "http://127.0.0.1:50052/hook/claude-code", nil, allowed},
		{"agent to localhost", "http://localhost:50052/hook/claude-code", nil, allowed},
		{"agent over IPv6 loopback", "http://[::1]:50052/hook/claude-code", nil, allowed},
		{"agent posting with Node's fetch", "http://127.0.0.1:50052/hook/claude-code", map[string]string{"Sec-Fetch-Mode": "cors", "User-Agent": "node"}, allowed},
		{"a page's form", "http://127.0.0.1:50052/hook/claude-code", map[string]string{"Origin": "https://evil.example"}, "came from a web browser"},
		{"a page's fetch", "http://127.0.0.1:50052/hook/claude-code", map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors"}, "came from a web browser"},
		{"DNS rebinding", "http://rebind.evil.example:50052/hook/claude-code", nil, "is a name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := post(h, tc.url, tc.header)
			if !strings.Contains(got, tc.want) {
				t.Fatalf("answer %s, want %q", got, tc.want)
			}
			if tc.want != allowed && !strings.Contains(got, `"permissionDecision":"deny"`) {
				t.Fatalf("answer %s, want a deny", got)
			}
		})
	}
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte("agent 0123456789abcdef0123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	withTokens := newEnv(t, withConfig(func(c *Config) { c.TokenFile = tokens })).srv.HookHandler()
	if got := post(withTokens, "http://toolgate.internal:50052/hook/claude-code", map[string]string{"Authorization": "Bearer 0123456789abcdef0123"}); !strings.Contains(got, allowed) {
		t.Errorf("a name with a token: %s", got)
	}
	if got := post(withTokens, "http://toolgate.internal:50052/hook/claude-code", map[string]string{"Authorization": "Bearer 0123456789abcdef0123", "Origin": "https://evil.example"}); !strings.Contains(got, "came from a web browser") {
		t.Errorf("a browser with a token: %s", got)
	}
}

// postHook posts a Claude Code PreToolUse input naming transcript to the
// hook listener at addr, and returns the answer, failing the test when
// none comes within 5 s.
func postHook(t *testing.T, addr, transcript, tool, input string) string {
	t.Helper()
	body := fmt.Sprintf(`{"session_id":"s","transcript_path":%q,"cwd":"/","hook_event_name":"PreToolUse","tool_name":%q,"tool_input":%s}`, transcript, tool, input)
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Post("http://"+addr+"/hook/claude-code?mode=auto", "application/json", strings.NewReader(body))
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

// serveHookListener serves env's hook listener on a loopback port.
func serveHookListener(t *testing.T, env *testEnv) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = env.srv.ServeHook(lis) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		env.srv.shutdownHook(ctx)
	})
	return lis.Addr().String()
}

// TestHookTranscriptOnlyForPeersHere: the hook listener reads the
// transcript a caller names only when its paths are this machine's: with
// server.unattested_files: unseen (a proxy on loopback makes every peer
// look local) a file of the server's is not read and sent to the model.
func TestHookTranscriptOnlyForPeersHere(t *testing.T) {
	transcript := filepath.Join(t.TempDir(), "session.jsonl")
	if err := os.WriteFile(transcript, []byte(`{"type":"user","cwd":"/","message":{"role":"user","content":"SERVER-SIDE TEXT"}}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		unattested string
		read       bool
	}{{UnattestedLocalPeers, true}, {UnattestedUnseen, false}} {
		t.Run(tc.unattested, func(t *testing.T) {
			fc := newFakeClassifier()
			env := newEnv(t, withClassifier(fc), withConfig(func(c *Config) { c.UnattestedFiles = tc.unattested }))
			addr := serveHookListener(t, env)
			if got := postHook(t, addr, transcript, "Bash", `{"command":"npm install left-pad"}`); !strings.Contains(got, `"permissionDecision":"allow"`) {
				t.Fatalf("answer %s, want the fake classifier's allow", got)
			}
			read := false
			for _, in := range fc.inputs() {
				for _, e := range in.Request.Transcript {
					read = read || strings.Contains(e.Text, "SERVER-SIDE TEXT")
				}
			}
			if read != tc.read {
				t.Fatalf("transcript read: %v, want %v", read, tc.read)
			}
		})
	}
}

// TestHookTranscriptOnStalledMount: a transcript path on a file system
// that never answers (FUSE) is refused before it is entered, so hooks
// naming it are answered at once and hold no slot: the hooks after them
// are decided.
func TestHookTranscriptOnStalledMount(t *testing.T) {
	env := newEnv(t, withConfig(func(c *Config) {
		c.Hook.Timeout = time.Second
		c.Hook.MaxInFlight = 2
	}))
	addr := serveHookListener(t, env)
	// Mounted last, so unmounted first: a handler stuck in it (the bug
	// this test is about) is let go before the server is stopped.
	mnt := filepath.Join(t.TempDir(), "mnt")
	stallfs.MountAt(t, mnt)
	for i := range 4 {
		if got := postHook(t, addr, filepath.Join(mnt, fmt.Sprint("t", i, ".jsonl")), "TodoWrite", `{"todos":[]}`); !strings.Contains(got, `"permissionDecision":"allow"`) {
			t.Fatalf("hook %d naming a transcript on the stalled mount: %s", i, got)
		}
	}
	if got := postHook(t, addr, "/nonexistent.jsonl", "TodoWrite", `{"todos":[]}`); !strings.Contains(got, `"permissionDecision":"allow"`) {
		t.Fatalf("an ordinary hook after them: %s", got)
	}
}
