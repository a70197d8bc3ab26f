package web_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/approvals/web"
	"github.com/toolgate/toolgate/internal/testpki"
)

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		name string
		edit func(*web.Config)
		want string // "" means valid
	}{
		{"defaults: no page", func(*web.Config) {}, ""},
		{"loopback without TLS", func(c *web.Config) { c.Listen = "127.0.0.1:8443" }, ""},
		{"localhost without TLS", func(c *web.Config) { c.Listen = "localhost:8443" }, ""},
		{"IPv6 loopback", func(c *web.Config) { c.Listen = "[::1]:8443" }, ""},
		{"every interface without TLS", func(c *web.Config) { c.Listen = ":8443" }, "approvals.web.listen"},
		{"a network address without TLS", func(c *web.Config) { c.Listen = "10.0.0.5:8443" }, "approvals.web.listen"},
		{"a network address with TLS", func(c *web.Config) {
			c.Listen, c.TLSCertFile, c.TLSKeyFile = "0.0.0.0:8443", "/etc/tg/cert.pem", "/etc/tg/key.pem"
		}, ""},
		{"a certificate without its key", func(c *web.Config) { c.TLSCertFile = "/etc/tg/cert.pem" }, "approvals.web.tls_cert_file"},
		{"not host:port", func(c *web.Config) { c.Listen = "127.0.0.1" }, "approvals.web.listen"},
		{"no session lifetime", func(c *web.Config) { c.SessionTTL = 0 }, "approvals.web.session_ttl"},
		{"a session of a month", func(c *web.Config) { c.SessionTTL = 30 * 24 * time.Hour }, "approvals.web.session_ttl"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := web.DefaultConfig()
			tc.edit(&c)
			err := c.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want+":")):
				t.Fatalf("error %v, want one naming %s", err, tc.want)
			}
		})
	}
	if d := web.DefaultConfig(); d.SessionTTL != 8*time.Hour || d.Listen != "" {
		t.Errorf("defaults %+v", d)
	}
}

func TestServeTLS(t *testing.T) {
	pki := testpki.New(t)
	cfg := web.Config{Listen: "127.0.0.1:0", TLSCertFile: pki.ServerCert, TLSKeyFile: pki.ServerKey, SessionTTL: time.Hour}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	lis, err := web.Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tk := newTokens()
	h := web.New(web.Options{Queue: emptyQueue{}, Authenticate: tk.authenticate, Secure: cfg.TLSEnabled()})
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- web.Serve(ctx, lis, h, nil) }()

	caPEM, err := os.ReadFile(pki.CA)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	resp, err := client.Get("https://" + lis.Addr().String() + "/login")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `name="token"`) {
		t.Fatalf("login page over TLS: %s", resp.Status)
	}
	// An approver logs in over TLS: the session is a __Host- cookie, sent
	// back over TLS.
	jar, _ := cookiejar.New(nil)
	client.Jar = jar
	base := "https://" + lis.Addr().String()
	req, _ := http.NewRequest(http.MethodPost, base+"/login", strings.NewReader(url.Values{"token": {approverToken}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	resp, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/approvals" || !strings.Contains(string(body), "Nothing is waiting") {
		t.Fatalf("login over TLS ended at %s: %s\n%s", resp.Request.URL, resp.Status, body)
	}
	u, _ := url.Parse(base)
	if cs := jar.Cookies(u); len(cs) != 1 || cs[0].Name != "__Host-toolgate_approver" {
		t.Fatalf("cookies %v", cs)
	}
	// Plain HTTP to the TLS listener gets no page.
	if resp, err := http.Get("http://" + lis.Addr().String() + "/login"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Error("the TLS listener served plain HTTP")
		}
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

func TestListenRefusesBadCertificate(t *testing.T) {
	dir := t.TempDir()
	cfg := web.Config{Listen: "127.0.0.1:0", TLSCertFile: dir + "/none.pem", TLSKeyFile: dir + "/none.key"}
	if lis, err := web.Listen(cfg); err == nil {
		lis.Close()
		t.Fatal("listened without a certificate")
	} else if !strings.Contains(err.Error(), "approvals.web.tls_cert_file") {
		t.Fatalf("error %v does not name the field", err)
	}
}
