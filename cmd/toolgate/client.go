package main

import (
	"flag"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/toolgate/toolgate/internal/clientflags"
)

// clientFlags are the connection flags of the commands that call a server
// (check, hook); toolgate-hook shares them.
type clientFlags = clientflags.Flags

func addClientFlags(fs *flag.FlagSet) *clientFlags { return clientflags.Add(fs) }

func loopbackHost(addr string) bool { return clientflags.LoopbackHost(addr) }

// dial connects lazily; errors here are about the flags and files.
func dial(c *clientFlags) (*grpc.ClientConn, error) {
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	if c.UseTLS() {
		conf, err := c.TLSConfig()
		if err != nil {
			return nil, err
		}
		opts[0] = grpc.WithTransportCredentials(credentials.NewTLS(conf))
	}
	token, err := c.Token()
	if err != nil {
		return nil, err
	}
	if token != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(clientflags.Bearer{Token: token, Secure: c.UseTLS()}))
	}
	return grpc.NewClient(c.Addr, opts...)
}
