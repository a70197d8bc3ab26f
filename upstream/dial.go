package upstream

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// Dial makes the connection to the centre; it connects lazily, so errors
// here are about the config and its files. The rules are the CLI
// clients': TLS when any TLS field is set, and a token never in plaintext
// beyond loopback.
func Dial(c Config) (*grpc.ClientConn, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	creds := insecure.NewCredentials()
	if c.TLS.Enabled() {
		conf, err := c.TLS.config()
		if err != nil {
			return nil, err
		}
		creds = credentials.NewTLS(conf)
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(creds)}
	if c.TokenFile != "" {
		token, err := readToken(c.TokenFile)
		if err != nil {
			return nil, err
		}
		opts = append(opts, grpc.WithPerRPCCredentials(bearer{token: token, secure: c.TLS.Enabled()}))
	}
	conn, err := grpc.NewClient(c.Address, opts...)
	if err != nil {
		return nil, fmt.Errorf("upstream.address: %w", err)
	}
	return conn, nil
}

func (t TLS) config() (*tls.Config, error) {
	conf := &tls.Config{MinVersion: tls.VersionTLS12}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("upstream.tls.ca_file: %w", err)
		}
		conf.RootCAs = x509.NewCertPool()
		if !conf.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("upstream.tls.ca_file: %s holds no PEM certificate", t.CAFile)
		}
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("upstream.tls.cert_file: %w", err)
		}
		conf.Certificates = []tls.Certificate{cert}
	}
	return conf, nil
}

// readToken reads the first non-empty line; the error never quotes it.
func readToken(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("upstream.token_file: %w", err)
	}
	for line := range strings.Lines(string(data)) {
		if t := strings.TrimSpace(line); t != "" {
			if strings.ContainsAny(t, " \t") {
				return "", fmt.Errorf("upstream.token_file: %s: want the token alone on its line", path)
			}
			return t, nil
		}
	}
	return "", fmt.Errorf("upstream.token_file: %s is empty", path)
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
