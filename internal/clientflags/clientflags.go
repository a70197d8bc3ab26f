// Package clientflags holds the connection flags of the commands that call
// a toolgate server (toolgate check, toolgate hook, toolgate-hook): the
// address, TLS and the bearer token. It imports neither gRPC nor protobuf,
// so that toolgate-hook, which links it, stays small.
package clientflags

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
)

// Flags are the connection flags.
type Flags struct {
	Addr      string
	TLS       bool
	TLSCA     string
	TLSCert   string
	TLSKey    string
	TokenFile string
}

// Add defines the flags on fs, --addr for the gRPC listener.
func Add(fs *flag.FlagSet) *Flags {
	return AddFor(fs, "TOOLGATE_ADDR", "127.0.0.1:50051", "server address")
}

// AddFor defines the flags on fs with --addr's environment variable,
// default and description.
func AddFor(fs *flag.FlagSet, addrEnv, addrDefault, addrUsage string) *Flags {
	c := &Flags{}
	fs.StringVar(&c.Addr, "addr", envOr(addrEnv, addrDefault), addrUsage+" (env "+addrEnv+")")
	fs.BoolVar(&c.TLS, "tls", false, "connect with TLS, verifying the server against the system roots")
	fs.StringVar(&c.TLSCA, "tls-ca", envOr("TOOLGATE_TLS_CA", ""), "PEM CA to verify the server with; implies --tls (env TOOLGATE_TLS_CA)")
	fs.StringVar(&c.TLSCert, "tls-cert", envOr("TOOLGATE_TLS_CERT", ""), "PEM client certificate for mutual TLS; implies --tls (env TOOLGATE_TLS_CERT)")
	fs.StringVar(&c.TLSKey, "tls-key", envOr("TOOLGATE_TLS_KEY", ""), "PEM private key of --tls-cert (env TOOLGATE_TLS_KEY)")
	fs.StringVar(&c.TokenFile, "token-file", envOr("TOOLGATE_TOKEN_FILE", ""), "file holding the bearer token (env TOOLGATE_TOKEN_FILE)")
	return c
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// UseTLS reports whether the flags ask for TLS.
func (c *Flags) UseTLS() bool { return c.TLS || c.TLSCA != "" || c.TLSCert != "" }

// Token reads the bearer token of --token-file, "" without one. A token
// goes in plaintext only to this machine (LoopbackHost).
func (c *Flags) Token() (string, error) {
	if c.TokenFile == "" {
		return "", nil
	}
	token, err := readToken(c.TokenFile)
	if err != nil {
		return "", err
	}
	if !c.UseTLS() && !LoopbackHost(c.Addr) {
		return "", fmt.Errorf("refusing to send a token in plaintext to %s: use --tls", c.Addr)
	}
	return token, nil
}

// TLSConfig is the client TLS configuration the flags describe.
func (c *Flags) TLSConfig() (*tls.Config, error) {
	conf := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.TLSCA != "" {
		pem, err := os.ReadFile(c.TLSCA)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		conf.RootCAs = x509.NewCertPool()
		if !conf.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-ca: %s holds no PEM certificate", c.TLSCA)
		}
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return nil, errors.New("--tls-cert and --tls-key go together")
	}
	if c.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(c.TLSCert, c.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert: %w", err)
		}
		conf.Certificates = []tls.Certificate{cert}
	}
	return conf, nil
}

// readToken reads the first non-empty line; the error never quotes it.
func readToken(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("--token-file: %w", err)
	}
	for line := range strings.Lines(string(data)) {
		if t := strings.TrimSpace(line); t != "" {
			if strings.ContainsAny(t, " \t") {
				return "", fmt.Errorf("--token-file: %s: want the token alone on its line", path)
			}
			return t, nil
		}
	}
	return "", fmt.Errorf("--token-file: %s is empty", path)
}

// LoopbackHost reports whether addr names this machine, where plaintext
// does not cross a network: a loopback address or a Unix socket.
func LoopbackHost(addr string) bool {
	if strings.HasPrefix(addr, "unix:") {
		return true
	}
	host, _, err := net.SplitHostPort(strings.TrimPrefix(addr, "dns:///"))
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
