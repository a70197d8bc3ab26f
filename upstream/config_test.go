package upstream

import (
	"strings"
	"testing"
)

// TestConfigValidate: each bad field is named by its YAML path; a token
// never goes in plaintext beyond loopback.
func TestConfigValidate(t *testing.T) {
	ok := func(c Config) Config {
		d := DefaultConfig()
		d.Address, d.TLS, d.TokenFile, d.StateDir = c.Address, c.TLS, c.TokenFile, c.StateDir
		return d
	}
	for _, tc := range []struct {
		c    Config
		want string // "" for valid
	}{
		{Config{}, ""},
		{Config{Address: "127.0.0.1:7000", TokenFile: "/t"}, ""},
		{Config{Address: "localhost:7000", TokenFile: "/t"}, ""},
		{Config{Address: "unix:/run/tg.sock", TokenFile: "/t"}, ""},
		{Config{Address: "centre.example:443", TokenFile: "/t", TLS: TLS{SystemRoots: true}}, ""},
		{Config{Address: "centre.example:443", TokenFile: "/t"}, "upstream.token_file: refusing to send a token in plaintext"},
		{Config{Address: "dns:///centre.example:443", TokenFile: "/t"}, "upstream.token_file"},
		{Config{Address: "centre.example"}, "upstream.address: must be host:port"},
		{Config{TokenFile: "/t"}, "upstream.address: is required"},
		{Config{Address: "a:1", TLS: TLS{CertFile: "/c"}}, "upstream.tls: cert_file and key_file go together"},
		{Config{Address: "a:1", StateDir: "rel"}, "upstream.state_dir: must be an absolute path"},
	} {
		c := ok(tc.c)
		err := c.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.c, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: %v, want %q", tc.c, err, tc.want)
		}
	}
	c := DefaultConfig()
	c.Timeout = 0
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "upstream.timeout") {
		t.Errorf("zero timeout: %v", err)
	}
}

// TestConfigSpoolCap: the decision records' spool has a positive cap,
// 256 MiB by default.
func TestConfigSpoolCap(t *testing.T) {
	c := DefaultConfig()
	if c.RecordsSpoolMaxMB != 256 {
		t.Errorf("default records_spool_max_mb = %d, want 256", c.RecordsSpoolMaxMB)
	}
	c.RecordsSpoolMaxMB = 0
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "upstream.records_spool_max_mb") {
		t.Errorf("zero cap: %v", err)
	}
}
