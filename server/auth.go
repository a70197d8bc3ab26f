package server

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/auth"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/selector"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// minTokenBytes keeps guessable tokens out of token files.
const minTokenBytes = 16

// Tokens maps bearer tokens to client names and roles.
type Tokens struct {
	entries []tokenEntry
	// scoped is set when any line names a role: then each token calls
	// only its role's service. A file without roles lets any token call
	// both, as before roles existed.
	scoped bool
}

type tokenEntry struct {
	name string
	role string
	sum  [sha256.Size]byte
}

// Token roles, the optional third column of a token file.
const (
	// RoleClient calls the permission API (Check, CheckStream, the hook
	// listener): agents, hooks, clients. The role of a line without one.
	RoleClient = "client"
	// RoleUpstream calls toolgate.v1.UpstreamService only: a local
	// toolgate whose upstream this server is.
	RoleUpstream = "upstream"
	// RoleApprover calls toolgate.v1.ApprovalService and signs in to the
	// approvals page, nothing else: a person who answers unattended
	// agents' questions. Only a token of this role approves, in any file.
	RoleApprover = "approver"
)

// LoadTokens reads a token file: one "NAME TOKEN [ROLE]" per line (ROLE
// client, the default, upstream or approver), blank lines and lines
// starting with # ignored.
func LoadTokens(path string) (*Tokens, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("server.token_file: %w", err)
	}
	defer f.Close()
	return ParseTokens(f, path)
}

// ParseTokens parses a token file read from r; name is used in errors,
// which never quote a token.
func ParseTokens(r io.Reader, name string) (*Tokens, error) {
	t := &Tokens{}
	names := map[string]bool{}
	sums := map[[sha256.Size]byte]bool{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 && len(fields) != 3 {
			return nil, fmt.Errorf("%s:%d: want NAME TOKEN [ROLE], got %d fields", name, n, len(fields))
		}
		client, token, role := fields[0], fields[1], RoleClient
		if len(fields) == 3 {
			if role = fields[2]; role != RoleClient && role != RoleUpstream && role != RoleApprover {
				return nil, fmt.Errorf("%s:%d: the role of %q is %q: want %s, %s or %s", name, n, client, role, RoleClient, RoleUpstream, RoleApprover)
			}
			t.scoped = true
		}
		if len(token) < minTokenBytes {
			return nil, fmt.Errorf("%s:%d: the token of %q is shorter than %d bytes", name, n, client, minTokenBytes)
		}
		sum := sha256.Sum256([]byte(token))
		if names[client] || sums[sum] {
			return nil, fmt.Errorf("%s:%d: client %q or its token appears twice", name, n, client)
		}
		names[client], sums[sum] = true, true
		t.entries = append(t.entries, tokenEntry{name: client, role: role, sum: sum})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(t.entries) == 0 {
		return nil, fmt.Errorf("%s: no tokens", name)
	}
	return t, nil
}

// Lookup returns the client a token belongs to, for the permission API:
// a token whose role is upstream only is not one of its clients.
func (t *Tokens) Lookup(token string) (string, bool) {
	e, ok := t.find(token)
	if !ok || !t.mayCall(e, pb.PermissionService_ServiceDesc.ServiceName) {
		return "", false
	}
	return e.name, true
}

// find returns a token's entry. Comparing hashes of equal length, over
// every entry, keeps the time independent of the token.
func (t *Tokens) find(token string) (tokenEntry, bool) {
	sum := sha256.Sum256([]byte(token))
	found := -1
	for i, e := range t.entries {
		if subtle.ConstantTimeCompare(sum[:], e.sum[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return tokenEntry{}, false
	}
	return t.entries[found], true
}

// Approver returns the approver a token belongs to: only a token of role
// approver is one.
func (t *Tokens) Approver(token string) (string, bool) {
	e, ok := t.find(token)
	if !ok || e.role != RoleApprover {
		return "", false
	}
	return e.name, true
}

// mayCall reports whether e's role may call service: in a file without
// roles, any token may call any service but the approvers'. Approving
// takes a token of role approver, which calls nothing else.
func (t *Tokens) mayCall(e tokenEntry, service string) bool {
	if service == pb.ApprovalService_ServiceDesc.ServiceName || e.role == RoleApprover {
		return service == pb.ApprovalService_ServiceDesc.ServiceName && e.role == RoleApprover
	}
	if !t.scoped {
		return true
	}
	if service == pb.UpstreamService_ServiceDesc.ServiceName {
		return e.role == RoleUpstream
	}
	return e.role == RoleClient
}

type clientKey struct{}

type approverKey struct{}

// ApproverFromContext returns the approver a call authenticated as: the
// name of a token of role approver; "" for anyone else, and on a server
// without a token file.
func ApproverFromContext(ctx context.Context) string {
	name, _ := ctx.Value(approverKey{}).(string)
	return name
}

// ClientFromContext returns the authenticated client's name: the token's
// name, else the verified client certificate's common name, else "".
func ClientFromContext(ctx context.Context) string {
	if name, ok := ctx.Value(clientKey{}).(string); ok {
		return name
	}
	return certClient(ctx)
}

func certClient(ctx context.Context) string {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return ""
	}
	ti, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(ti.State.VerifiedChains) == 0 || len(ti.State.VerifiedChains[0]) == 0 {
		return ""
	}
	return ti.State.VerifiedChains[0][0].Subject.CommonName
}

// authInterceptors require a known bearer token on every call except
// health checks, which probes and load balancers make without one.
func authInterceptors(tokens *Tokens) (grpc.UnaryServerInterceptor, grpc.StreamServerInterceptor) {
	check := func(ctx context.Context) (context.Context, error) {
		token, err := auth.AuthFromMD(ctx, "bearer")
		if err != nil {
			return nil, status.Error(codes.Unauthenticated, "a bearer token is required (authorization: Bearer TOKEN)")
		}
		e, ok := tokens.find(token)
		if !ok {
			return nil, status.Error(codes.Unauthenticated, "unknown bearer token")
		}
		method, _ := grpc.Method(ctx)
		if service, _, _ := strings.Cut(strings.TrimPrefix(method, "/"), "/"); !tokens.mayCall(e, service) {
			return nil, status.Errorf(codes.PermissionDenied, "client %q has role %s, which may not call %s", e.name, e.role, service)
		}
		ctx = context.WithValue(ctx, clientKey{}, e.name)
		if e.role == RoleApprover {
			ctx = context.WithValue(ctx, approverKey{}, e.name)
		}
		return ctx, nil
	}
	notHealth := selector.MatchFunc(func(_ context.Context, c interceptors.CallMeta) bool {
		return c.Service != healthpb.Health_ServiceDesc.ServiceName
	})
	return selector.UnaryServerInterceptor(auth.UnaryServerInterceptor(check), notHealth),
		selector.StreamServerInterceptor(auth.StreamServerInterceptor(check), notHealth)
}

// tlsCredentials loads the server's certificate and, for mutual TLS, the
// client CA.
func tlsCredentials(c TLSConfig) (credentials.TransportCredentials, error) {
	conf, err := tlsConfig(c)
	if err != nil {
		return nil, err
	}
	return credentials.NewTLS(conf), nil
}

// tlsConfig is the server's TLS configuration: its certificate and, for
// mutual TLS, the client CA.
func tlsConfig(c TLSConfig) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("server.tls: %w", err)
	}
	conf := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if c.ClientCAFile != "" {
		pem, err := os.ReadFile(c.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("server.tls.client_ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("server.tls.client_ca_file: %s holds no PEM certificate", c.ClientCAFile)
		}
		conf.ClientCAs = pool
		conf.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return conf, nil
}
