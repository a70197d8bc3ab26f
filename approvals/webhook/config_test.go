package webhook

import (
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	def := DefaultConfig()
	if err := def.Validate(); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
	if def.Enabled() || def.Timeout != 5*time.Second || def.QueueSize != 256 {
		t.Fatalf("defaults %+v: want disabled, 5s, 256", def)
	}
	for _, c := range []struct {
		name   string
		mutate func(*Config)
		want   string // "" means valid
	}{
		{"enabled", func(c *Config) { c.URLEnv = "TOOLGATE_SLACK_WEBHOOK_URL" }, ""},
		{"page url", func(c *Config) { c.PageURL = "https://toolgate.example.com/" }, ""},
		{"page url with a path", func(c *Config) { c.PageURL = "http://10.0.0.1:8443/toolgate" }, ""},
		{"the URL for the variable", func(c *Config) { c.URLEnv = "https://hooks.slack.com/services/T0/B0/s3cret" }, "approvals.webhook.url_env: names the environment variable that holds the URL, not the URL itself"},
		{"the URL without a scheme", func(c *Config) { c.URLEnv = "hooks.slack.com/services/T0/B0/s3cret" }, "approvals.webhook.url_env: names the environment variable"},
		{"not a variable name", func(c *Config) { c.URLEnv = "SLACK URL" }, `approvals.webhook.url_env: must be an environment variable's name, got "SLACK URL"`},
		{"relative page url", func(c *Config) { c.PageURL = "/approvals" }, "approvals.webhook.page_url: must be an absolute http(s) URL"},
		{"page url of another scheme", func(c *Config) { c.PageURL = "javascript:alert(1)" }, "approvals.webhook.page_url: must be an absolute http(s) URL"},
		{"page url with credentials", func(c *Config) { c.PageURL = "https://admin:s3cret@toolgate.example.com" }, "approvals.webhook.page_url: must not hold credentials"},
		{"page url with a query", func(c *Config) { c.PageURL = "https://toolgate.example.com/?x=1" }, "approvals.webhook.page_url: must have no query or fragment"},
		{"page url that ends a Slack link", func(c *Config) { c.PageURL = "https://toolgate.example.com/a|b" }, "approvals.webhook.page_url: must not contain"},
		{"page url too long", func(c *Config) { c.PageURL = "https://toolgate.example.com/" + strings.Repeat("a", MaxPageURLBytes) }, "approvals.webhook.page_url: is 541 bytes, more than 512"},
		{"zero timeout", func(c *Config) { c.Timeout = 0 }, "approvals.webhook.timeout: must be positive and at most 1m0s, got 0s"},
		{"long timeout", func(c *Config) { c.Timeout = time.Hour }, "approvals.webhook.timeout: must be positive"},
		{"zero queue", func(c *Config) { c.QueueSize = 0 }, "approvals.webhook.queue_size: must be between 1 and 65536, got 0"},
		{"huge queue", func(c *Config) { c.QueueSize = 1 << 20 }, "approvals.webhook.queue_size: must be between 1 and 65536"},
	} {
		cfg := DefaultConfig()
		c.mutate(&cfg)
		err := cfg.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		case err != nil && strings.Contains(err.Error(), "s3cret"):
			t.Errorf("%s: the error shows the secret: %v", c.name, err)
		}
	}
}

// TestNewResolvesTheURL: the variable must hold an http(s) URL; the
// errors name the variable and never show its value.
func TestNewResolvesTheURL(t *testing.T) {
	cfg := DefaultConfig()
	if _, err := New(cfg, nil, nil, nil); err == nil || !strings.Contains(err.Error(), "approvals.webhook.url_env") {
		t.Errorf("a disabled webhook: %v, want an error naming approvals.webhook.url_env", err)
	}
	cfg.Timeout = 0
	if _, err := New(cfg, nil, nil, nil); err == nil || !strings.Contains(err.Error(), "approvals.webhook.timeout") {
		t.Errorf("an invalid config: %v, want Validate's error", err)
	}
	cfg = DefaultConfig()
	cfg.URLEnv = "HOOK_URL"
	for _, v := range []string{"", "hooks.slack.com/services/s3cret", "ftp://hooks.example/s3cret", "https:///s3cret", "http://[::1/s3cret"} {
		_, err := New(cfg, func(name string) string {
			if name != "HOOK_URL" {
				t.Errorf("read %s", name)
			}
			return v
		}, nil, nil)
		switch {
		case err == nil:
			t.Errorf("%q: no error", v)
		case !strings.Contains(err.Error(), "approvals.webhook.url_env: the environment variable HOOK_URL"):
			t.Errorf("%q: %v, want it to name the variable", v, err)
		case strings.Contains(err.Error(), "s3cret"):
			t.Errorf("%q: the error shows the URL: %v", v, err)
		}
	}
}
