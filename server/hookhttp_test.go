package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
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
		{"network with tokens", func(c *Config) { c.Hook.Listen = "0.0.0.0:50052"; c.TokenFile = "/etc/toolgate/tokens" }, ""},
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
