// Package clientflags holds the connection flags of the commands that call
// a toolgate server (toolgate check, toolgate hook, toolgate-hook): the
// address, TLS and the bearer token. It imports neither gRPC nor protobuf,
// so that toolgate-hook, which links it, stays small.
package clientflags

import (
	"context"
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
	token, err := ReadToken(c.TokenFile, "--token-file")
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
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return nil, errors.New("--tls-cert and --tls-key go together")
	}
	return ClientTLS(c.TLSCA, c.TLSCert, c.TLSKey, "--tls-ca", "--tls-cert")
}

// ClientTLS is a client's TLS configuration: the server verified against
// the PEM CA in caFile (the system roots when empty), and the client's own
// certificate from certFile and keyFile when given. caName and certName
// are how errors name the files (a flag, a YAML path).
func ClientTLS(caFile, certFile, keyFile, caName, certName string) (*tls.Config, error) {
	conf := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", caName, err)
		}
		conf.RootCAs = x509.NewCertPool()
		if !conf.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: %s holds no PEM certificate", caName, caFile)
		}
	}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", certName, err)
		}
		conf.Certificates = []tls.Certificate{cert}
	}
	return conf, nil
}

// ReadToken reads the first non-empty line of path, the token alone;
// name is how errors name the file. The error never quotes the token.
func ReadToken(path, name string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	for line := range strings.Lines(string(data)) {
		if t := strings.TrimSpace(line); t != "" {
			if strings.ContainsAny(t, " \t") {
				return "", fmt.Errorf("%s: %s: want the token alone on its line", name, path)
			}
			return t, nil
		}
	}
	return "", fmt.Errorf("%s: %s is empty", name, path)
}

// Bearer sends a token with every gRPC call (it is a
// credentials.PerRPCCredentials, defined without importing gRPC).
// Secure refuses to send it over a connection without transport security.
type Bearer struct {
	Token  string
	Secure bool
}

// GetRequestMetadata is the authorization header.
func (b Bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.Token}, nil
}

// RequireTransportSecurity is Secure.
func (b Bearer) RequireTransportSecurity() bool { return b.Secure }

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
