package server

import (
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
