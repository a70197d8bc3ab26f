package main

import (
	"flag"
	"path/filepath"

	"github.com/toolgate/toolgate/upstream"
)

// upstreamFlags make serve a local toolgate: the flags win over the
// config's upstream section, field by field.
type upstreamFlags struct {
	addr, tlsCA, tlsCert, tlsKey, tokenFile, stateDir string
	tls                                               bool
}

func addUpstreamFlags(fs *flag.FlagSet) *upstreamFlags {
	u := &upstreamFlags{}
	fs.StringVar(&u.addr, "upstream", "", "address of the central toolgate: serve as a local toolgate that forwards what its stages leave open there (upstream.address)")
	fs.BoolVar(&u.tls, "upstream-tls", false, "connect to the upstream with TLS, verifying it against the system roots (upstream.tls.system_roots)")
	fs.StringVar(&u.tlsCA, "upstream-tls-ca", "", "PEM CA to verify the upstream with; implies TLS (upstream.tls.ca_file)")
	fs.StringVar(&u.tlsCert, "upstream-tls-cert", "", "PEM client certificate for the upstream's mutual TLS (upstream.tls.cert_file)")
	fs.StringVar(&u.tlsKey, "upstream-tls-key", "", "PEM private key of --upstream-tls-cert (upstream.tls.key_file)")
	fs.StringVar(&u.tokenFile, "upstream-token-file", "", "file holding the bearer token for the upstream (upstream.token_file)")
	fs.StringVar(&u.stateDir, "state-dir", "", "directory keeping the last good policy set received from the upstream (upstream.state_dir)")
	return u
}

func (u *upstreamFlags) apply(c *upstream.Config) {
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&c.Address, u.addr)
	set(&c.TLS.CAFile, u.tlsCA)
	set(&c.TLS.CertFile, u.tlsCert)
	set(&c.TLS.KeyFile, u.tlsKey)
	set(&c.TokenFile, u.tokenFile)
	if u.stateDir != "" {
		// Relative to where serve started, not to wherever it runs later.
		if abs, err := filepath.Abs(u.stateDir); err == nil {
			c.StateDir = abs
		}
	}
	if u.tls {
		c.TLS.SystemRoots = true
	}
}
