package upstream

import (
	"crypto/tls"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/toolgate/toolgate/internal/clientflags"
)

// MaxRecvMsgBytes caps a message received from the centre.
const MaxRecvMsgBytes = MaxDocumentBytes + 64<<10

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
	// Said explicitly: the biggest answer is a policy set (at most
	// MaxDocumentBytes); anything much bigger is a broken centre's.
	opts := []grpc.DialOption{grpc.WithTransportCredentials(creds), grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxRecvMsgBytes)),
		// Reconnecting at most maxBackoff apart, as the policy watch
		// does: gRPC's default grows to two minutes, which a check
		// waiting for an approver across a restart of the centre would
		// wait out after the answer.
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.Config{BaseDelay: minBackoff, Multiplier: 1.6, Jitter: 0.2, MaxDelay: maxBackoff},
			MinConnectTimeout: 5 * time.Second})}
	if c.TokenFile != "" {
		token, err := clientflags.ReadToken(c.TokenFile, "upstream.token_file")
		if err != nil {
			return nil, err
		}
		opts = append(opts, grpc.WithPerRPCCredentials(clientflags.Bearer{Token: token, Secure: c.TLS.Enabled()}))
	}
	conn, err := grpc.NewClient(c.Address, opts...)
	if err != nil {
		return nil, fmt.Errorf("upstream.address: %w", err)
	}
	return conn, nil
}

func (t TLS) config() (*tls.Config, error) {
	return clientflags.ClientTLS(t.CAFile, t.CertFile, t.KeyFile, "upstream.tls.ca_file", "upstream.tls.cert_file")
}
