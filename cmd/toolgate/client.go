package main

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

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// clientFlags are the connection flags of the commands that call a server
// (check, hook).
type clientFlags struct {
	addr      string
	tls       bool
	tlsCA     string
	tlsCert   string
	tlsKey    string
	tokenFile string
}

func addClientFlags(fs *flag.FlagSet) *clientFlags {
	c := &clientFlags{}
	fs.StringVar(&c.addr, "addr", envOr("TOOLGATE_ADDR", "127.0.0.1:50051"), "server address (env TOOLGATE_ADDR)")
	fs.BoolVar(&c.tls, "tls", false, "connect with TLS, verifying the server against the system roots")
	fs.StringVar(&c.tlsCA, "tls-ca", envOr("TOOLGATE_TLS_CA", ""), "PEM CA to verify the server with; implies --tls (env TOOLGATE_TLS_CA)")
	fs.StringVar(&c.tlsCert, "tls-cert", envOr("TOOLGATE_TLS_CERT", ""), "PEM client certificate for mutual TLS; implies --tls (env TOOLGATE_TLS_CERT)")
	fs.StringVar(&c.tlsKey, "tls-key", envOr("TOOLGATE_TLS_KEY", ""), "PEM private key of --tls-cert (env TOOLGATE_TLS_KEY)")
	fs.StringVar(&c.tokenFile, "token-file", envOr("TOOLGATE_TOKEN_FILE", ""), "file holding the bearer token (env TOOLGATE_TOKEN_FILE)")
	return c
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// dial connects lazily; errors here are about the flags and files.
func (c *clientFlags) dial() (*grpc.ClientConn, error) {
	useTLS := c.tls || c.tlsCA != "" || c.tlsCert != ""
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	if useTLS {
		conf, err := c.tlsConfig()
		if err != nil {
			return nil, err
		}
		opts[0] = grpc.WithTransportCredentials(credentials.NewTLS(conf))
	}
	if c.tokenFile != "" {
		token, err := readToken(c.tokenFile)
		if err != nil {
			return nil, err
		}
		if !useTLS && !loopbackHost(c.addr) {
			return nil, fmt.Errorf("refusing to send a token in plaintext to %s: use --tls", c.addr)
		}
		opts = append(opts, grpc.WithPerRPCCredentials(bearer{token: token, secure: useTLS}))
	}
	return grpc.NewClient(c.addr, opts...)
}

func (c *clientFlags) tlsConfig() (*tls.Config, error) {
	conf := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.tlsCA != "" {
		pem, err := os.ReadFile(c.tlsCA)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		conf.RootCAs = x509.NewCertPool()
		if !conf.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-ca: %s holds no PEM certificate", c.tlsCA)
		}
	}
	if (c.tlsCert == "") != (c.tlsKey == "") {
		return nil, errors.New("--tls-cert and --tls-key go together")
	}
	if c.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(c.tlsCert, c.tlsKey)
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

// loopbackHost reports whether addr names this machine, where plaintext
// does not cross a network: a loopback address or a Unix socket.
func loopbackHost(addr string) bool {
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

// bearer sends the token with every call.
type bearer struct {
	token  string
	secure bool
}

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.token}, nil
}

func (b bearer) RequireTransportSecurity() bool { return b.secure }
