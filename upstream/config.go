// Package upstream is a local toolgate's link to a central one (toolgate
// serve --upstream ADDR): a classifier that forwards the checks no local
// stage could decide to the centre's UpstreamService, and the
// subscription to the centre's named policies. It imports the engine's
// types and the generated API, never the server.
package upstream

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"time"

	"github.com/toolgate/toolgate/internal/clientflags"
)

// Config is the upstream section: where the central toolgate is and how
// to reach it. Field paths in errors match the YAML config (upstream.*).
type Config struct {
	// Address is the centre's gRPC address (host:port, dns:///host:port);
	// empty means this server has no upstream.
	Address string `yaml:"address"`
	TLS     TLS    `yaml:"tls"`
	// TokenFile holds the bearer token sent with every call (its first
	// non-empty line). It is never sent in plaintext beyond loopback.
	TokenFile string `yaml:"token_file"`
	// Timeout bounds one Classify call to the centre; it should exceed the
	// centre's classifier.timeout, and never extends a check's deadline.
	Timeout time.Duration `yaml:"timeout"`
	// StateDir keeps the last good policy set received from the centre,
	// loaded at start when the centre is down, and the spool of decision
	// records not yet acknowledged by the centre; empty keeps none (and
	// ships no decision records).
	StateDir string `yaml:"state_dir"`
	// RecordsSpoolMaxMB caps the spool of decision records in the state
	// directory: past it, the oldest are dropped and counted in
	// toolgate_upstream_records_dropped_total{reason="spool_full"}.
	RecordsSpoolMaxMB int `yaml:"records_spool_max_mb"`
}

// TLS is how the centre is verified and how this server proves itself.
// TLS is on when any field is set.
type TLS struct {
	// SystemRoots verifies the centre against the system's roots.
	SystemRoots bool `yaml:"system_roots"`
	// CAFile verifies the centre against this PEM CA instead.
	CAFile string `yaml:"ca_file"`
	// CertFile and KeyFile are a PEM client certificate and its key, for
	// a centre that requires mutual TLS.
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
}

// Enabled reports whether TLS is on.
func (t TLS) Enabled() bool {
	return t.SystemRoots || t.CAFile != "" || t.CertFile != "" || t.KeyFile != ""
}

// DefaultConfig returns the defaults: no upstream.
func DefaultConfig() Config {
	return Config{Timeout: 8 * time.Second, RecordsSpoolMaxMB: 256}
}

// Enabled reports whether an upstream is configured.
func (c *Config) Enabled() bool { return c.Address != "" }

// Validate reports every bad field.
func (c *Config) Validate() error {
	var errs []error
	bad := func(field, format string, a ...any) {
		errs = append(errs, fmt.Errorf("upstream.%s: %s", field, fmt.Sprintf(format, a...)))
	}
	if c.Timeout <= 0 {
		bad("timeout", "must be positive, got %s", c.Timeout)
	}
	if c.RecordsSpoolMaxMB <= 0 {
		bad("records_spool_max_mb", "must be positive, got %d", c.RecordsSpoolMaxMB)
	}
	if !c.Enabled() {
		if c.TokenFile != "" || c.TLS.Enabled() || c.StateDir != "" {
			bad("address", "is required when other upstream fields are set")
		}
		return errors.Join(errs...)
	}
	if strings.HasPrefix(c.Address, "unix:") {
		if !filepath.IsAbs(strings.TrimPrefix(strings.TrimPrefix(c.Address, "unix:"), "//")) {
			bad("address", "a Unix socket address must be absolute (unix:/path), got %q", c.Address)
		}
	} else if _, _, err := net.SplitHostPort(strings.TrimPrefix(c.Address, "dns:///")); err != nil {
		bad("address", "must be host:port, got %q", c.Address)
	}
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		bad("tls", "cert_file and key_file go together")
	}
	if c.TokenFile != "" && !c.TLS.Enabled() && !clientflags.LoopbackHost(c.Address) {
		bad("token_file", "refusing to send a token in plaintext to %s: set upstream.tls (system_roots or ca_file)", c.Address)
	}
	if c.StateDir != "" && !filepath.IsAbs(c.StateDir) {
		bad("state_dir", "must be an absolute path, got %q", c.StateDir)
	}
	return errors.Join(errs...)
}
