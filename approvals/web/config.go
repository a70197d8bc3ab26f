package web

import (
	"errors"
	"fmt"
	"net"
	"time"
)

// Config is the approvers' page (the approvals.web section of the config
// file; field paths in errors are approvals.web.*).
type Config struct {
	// Listen is the address of the page's own HTTP listener; empty serves
	// no page.
	Listen string `yaml:"listen"`
	// TLSCertFile and TLSKeyFile are PEM files. They are required unless
	// Listen is a loopback address: an approver's token and session
	// cookie must not cross the network in clear.
	TLSCertFile string `yaml:"tls_cert_file"`
	TLSKeyFile  string `yaml:"tls_key_file"`
	// SessionTTL is how long a login lasts.
	SessionTTL time.Duration `yaml:"session_ttl"`
}

// MaxSessionTTL bounds SessionTTL: a stolen session cookie is an
// approver's power until it expires.
const MaxSessionTTL = 7 * 24 * time.Hour

// DefaultConfig returns the defaults: no page, sessions of 8 hours.
func DefaultConfig() Config {
	return Config{SessionTTL: 8 * time.Hour}
}

// TLSEnabled reports whether the page is served over TLS (its cookies are
// then Secure).
func (c Config) TLSEnabled() bool { return c.TLSCertFile != "" }

// Validate reports every bad field.
func (c *Config) Validate() error {
	var errs []error
	bad := func(field, format string, a ...any) {
		errs = append(errs, fmt.Errorf("approvals.web.%s: %s", field, fmt.Sprintf(format, a...)))
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		bad("tls_cert_file", "tls_cert_file and tls_key_file go together")
	}
	if c.Listen != "" {
		host, _, err := net.SplitHostPort(c.Listen)
		switch {
		case err != nil:
			bad("listen", "%q is not host:port: %v", c.Listen, err)
		case !c.TLSEnabled() && !loopbackHost(host):
			bad("listen", "%q is not a loopback address; a page reachable from the network needs tls_cert_file and tls_key_file (an approver's token and session would cross the network in clear)", c.Listen)
		}
	}
	if c.SessionTTL <= 0 || c.SessionTTL > MaxSessionTTL {
		bad("session_ttl", "must be positive and at most %s, got %s", MaxSessionTTL, c.SessionTTL)
	}
	return errors.Join(errs...)
}

// loopbackHost reports whether host names this machine only. An empty
// host (":8443") listens on every interface.
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
