package webhook

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// Config is the approvals.webhook section of the config file.
type Config struct {
	// URLEnv names the environment variable holding the webhook URL. The
	// URL is a credential (whoever has it posts to the channel), so the
	// file names the variable, never the URL. Empty means no webhook.
	URLEnv string `yaml:"url_env"`
	// PageURL is the approvals web page's absolute http(s) URL; when set,
	// each message links to PAGE_URL/approvals/ID.
	PageURL string `yaml:"page_url"`
	// Timeout bounds each POST, and Close's wait for the queue to drain.
	Timeout time.Duration `yaml:"timeout"`
	// QueueSize is how many messages wait for the sender; more are
	// dropped (and counted) rather than slow down a check.
	QueueSize int `yaml:"queue_size"`
}

// Bounds Validate enforces.
const (
	MaxTimeout      = time.Minute
	MaxQueueSize    = 1 << 16
	MaxPageURLBytes = 512
)

// DefaultConfig returns the defaults: no webhook, a 5 s timeout, 256
// queued messages.
func DefaultConfig() Config {
	return Config{Timeout: 5 * time.Second, QueueSize: 256}
}

// Enabled reports whether a webhook is configured.
func (c *Config) Enabled() bool { return c.URLEnv != "" }

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Validate reports every bad field, naming its YAML path.
func (c *Config) Validate() error {
	var errs []error
	bad := func(field, format string, a ...any) {
		errs = append(errs, fmt.Errorf("approvals.webhook.%s: %s", field, fmt.Sprintf(format, a...)))
	}
	switch {
	case c.URLEnv == "":
	case strings.ContainsAny(c.URLEnv, ":/="):
		// Said without the value: it may be the webhook URL, a secret.
		bad("url_env", "names the environment variable that holds the URL, not the URL itself")
	case !envName.MatchString(c.URLEnv):
		bad("url_env", "must be an environment variable's name, got %q", c.URLEnv)
	}
	if c.PageURL != "" {
		if err := checkPageURL(c.PageURL); err != "" {
			bad("page_url", "%s", err)
		}
	}
	if c.Timeout <= 0 || c.Timeout > MaxTimeout {
		bad("timeout", "must be positive and at most %s, got %s", MaxTimeout, c.Timeout)
	}
	if c.QueueSize <= 0 || c.QueueSize > MaxQueueSize {
		bad("queue_size", "must be between 1 and %d, got %d", MaxQueueSize, c.QueueSize)
	}
	return errors.Join(errs...)
}

// checkPageURL says what is wrong with the page's URL, or "". It goes into
// a Slack link (<URL|label>), so it must not carry the characters that end
// one, and it is shown to everyone in the channel, so no credentials.
func checkPageURL(s string) string {
	if len(s) > MaxPageURLBytes {
		return fmt.Sprintf("is %d bytes, more than %d", len(s), MaxPageURLBytes)
	}
	u, err := url.Parse(s)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return fmt.Sprintf("must be an absolute http(s) URL, got %q", s)
	case u.User != nil:
		// Not echoed: it holds a password.
		return "must not hold credentials"
	case u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return fmt.Sprintf("must have no query or fragment (PAGE_URL/approvals/ID is appended), got %q", s)
	case strings.ContainsAny(s, "<>|& \t\r\n\"'`"):
		return fmt.Sprintf("must not contain spaces, quotes or any of <>|&, got %q", s)
	}
	return ""
}
