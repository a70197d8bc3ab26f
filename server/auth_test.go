package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	"github.com/toolgate/toolgate/engine"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
	"github.com/toolgate/toolgate/internal/testpki"
)

func TestParseTokens(t *testing.T) {
	const secret = "s3cr3t-0123456789abcdef"
	tests := []struct {
		name, file, err string
	}{
		{"ok", "# clients\n\nci " + secret + "\n  laptop  other-token-0123456789\n", ""},
		{"unknown role", "ci " + secret + " extra\n", "want client, upstream or approver"},
		{"four fields", "ci " + secret + " client x\n", "want NAME TOKEN [ROLE]"},
		{"one field", secret + "\n", "want NAME TOKEN"},
		{"short token", "ci short\n", "shorter than 16 bytes"},
		{"same name", "ci " + secret + "\nci other-token-0123456789\n", "appears twice"},
		{"same token", "ci " + secret + "\nlaptop " + secret + "\n", "appears twice"},
		{"empty", "# nothing\n", "no tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok, err := ParseTokens(strings.NewReader(tt.file), "tokens.txt")
			if tt.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				if name, ok := tok.Lookup(secret); !ok || name != "ci" {
					t.Errorf("Lookup(secret) = %q %v", name, ok)
				}
				if name, ok := tok.Lookup("other-token-0123456789"); !ok || name != "laptop" {
					t.Errorf("Lookup(other) = %q %v", name, ok)
				}
				for _, bad := range []string{"", secret[:len(secret)-1], secret + "x", strings.ToUpper(secret)} {
					if _, ok := tok.Lookup(bad); ok {
						t.Errorf("Lookup(%q) accepted", bad)
					}
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), "tokens.txt") {
				t.Fatalf("error %v, want one naming the file and %q", err, tt.err)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error quotes the token: %v", err)
			}
		})
	}
}

// serveTCP serves cfg on a loopback port and returns the address.
func serveTCP(t *testing.T, cfg Config, log *zap.Logger) string {
	t.Helper()
	eng, err := engine.New(engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(cfg, eng, log)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	t.Cleanup(func() {
		srv.Shutdown(context.Background())
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return lis.Addr().String()
}

func dial(t *testing.T, addr string, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	if len(opts) == 0 {
		opts = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	}
	conn, err := grpc.NewClient(addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func readReq(t *testing.T) *pb.CheckRequest {
	r := checkReq(t, "", "Read", map[string]any{"file_path": os.TempDir() + "/a.go"})
	r.WorkingDirectory = os.TempDir()
	return r
}

// TestTokenRoles: in a token file that names roles, a client token calls
// the permission API and not UpstreamService, an upstream token the
// reverse (PermissionDenied, naming the role); in a file without roles
// any token calls both.
func TestTokenRoles(t *testing.T) {
	call := func(conn *grpc.ClientConn, tok string) (check, classify, watch codes.Code) {
		ctx := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+tok)
		_, err := pb.NewPermissionServiceClient(conn).Check(ctx, readReq(t))
		check = status.Code(err)
		_, err = pb.NewUpstreamServiceClient(conn).Classify(ctx, &pb.ClassifyRequest{Check: readReq(t)})
		classify = status.Code(err)
		// A permitted watch waits for a set this server never has: it
		// is ended here once the refusal would have come back.
		wctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		ws, err := pb.NewUpstreamServiceClient(conn).WatchPolicies(wctx, &pb.WatchPoliciesRequest{})
		if err == nil {
			_, err = ws.Recv()
		}
		return check, classify, status.Code(err)
	}
	serve := func(file string) *grpc.ClientConn {
		path := filepath.Join(t.TempDir(), "tokens")
		if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg := DefaultConfig()
		cfg.TokenFile = path
		srv := dial(t, serveTCP(t, cfg, zap.NewNop()))
		return srv
	}
	conn := serve("laptop token-for-laptop-0123456789\nedge-1 token-for-edge1-0123456789 upstream\n")
	if c, cl, w := call(conn, "token-for-laptop-0123456789"); c != codes.OK || cl != codes.PermissionDenied || w != codes.PermissionDenied {
		t.Errorf("client token: Check %v, Classify %v, WatchPolicies %v", c, cl, w)
	}
	if c, cl, w := call(conn, "token-for-edge1-0123456789"); c != codes.PermissionDenied || cl == codes.PermissionDenied || cl == codes.Unauthenticated || w != codes.DeadlineExceeded {
		t.Errorf("upstream token: Check %v, Classify %v, WatchPolicies %v", c, cl, w)
	}
	tok, err := ParseTokens(strings.NewReader("edge-1 token-for-edge1-0123456789 upstream\n"), "tokens")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tok.Lookup("token-for-edge1-0123456789"); ok {
		t.Error("an upstream token is a client of the permission API (the hook listener's Lookup)")
	}
	conn = serve("laptop token-for-laptop-0123456789\n")
	if c, cl, _ := call(conn, "token-for-laptop-0123456789"); c != codes.OK || cl == codes.PermissionDenied || cl == codes.Unauthenticated {
		t.Errorf("token of a file without roles: Check %v, Classify %v", c, cl)
	}
}

func TestTokenAuth(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(path, []byte("ci-runner token-for-ci-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.TokenFile = path
	core, logs := observer.New(zap.InfoLevel)
	conn := dial(t, serveTCP(t, cfg, zap.New(core)))
	client := pb.NewPermissionServiceClient(conn)
	withToken := func(tok string) context.Context {
		return metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+tok)
	}

	for name, ctx := range map[string]context.Context{
		"no token":     t.Context(),
		"wrong token":  withToken("token-for-ci-0123456780"),
		"wrong scheme": metadata.AppendToOutgoingContext(t.Context(), "authorization", "Basic token-for-ci-0123456789"),
	} {
		if _, err := client.Check(ctx, readReq(t)); status.Code(err) != codes.Unauthenticated {
			t.Errorf("%s: Check got %v, want Unauthenticated", name, err)
		}
		stream, err := client.CheckStream(ctx)
		if err == nil {
			_, err = stream.Recv()
		}
		if status.Code(err) != codes.Unauthenticated {
			t.Errorf("%s: CheckStream got %v, want Unauthenticated", name, err)
		}
	}
	// Reflection lists the API: it needs a token too.
	refl, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(t.Context())
	if err == nil {
		// A refused stream fails Send with io.EOF; Recv has the status.
		_ = refl.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}})
		_, err = refl.Recv()
	}
	if status.Code(err) != codes.Unauthenticated {
		t.Errorf("reflection without a token: %v, want Unauthenticated", err)
	}
	resp, err := client.Check(withToken("token-for-ci-0123456789"), readReq(t))
	if err != nil || resp.GetDecision() != pb.Decision_DECISION_ALLOW {
		t.Fatalf("with the token: %v %v", resp, err)
	}
	h, err := healthpb.NewHealthClient(conn).Check(t.Context(), &healthpb.HealthCheckRequest{})
	if err != nil || h.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health without a token: %v %v", h, err)
	}
	decisions := logs.FilterMessage("decision").All()
	if len(decisions) != 1 || decisions[0].ContextMap()["client"] != "ci-runner" {
		t.Errorf("decision log lines %v, want one naming client ci-runner", decisions)
	}
	for _, e := range logs.All() {
		for k, v := range e.ContextMap() {
			if s, ok := v.(string); ok && strings.Contains(s, "0123456789") {
				t.Errorf("log %q field %s holds a token: %q", e.Message, k, s)
			}
		}
	}
}

func TestTokenFileErrors(t *testing.T) {
	cfg := DefaultConfig()
	cfg.TokenFile = filepath.Join(t.TempDir(), "missing")
	eng, _ := engine.New(engine.Config{})
	if _, err := New(cfg, eng, zap.NewNop()); err == nil || !strings.Contains(err.Error(), "server.token_file") {
		t.Fatalf("missing token file: %v", err)
	}
}

func clientTLS(t *testing.T, p testpki.PKI, withCert bool) grpc.DialOption {
	t.Helper()
	pem, _ := os.ReadFile(p.CA)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	conf := &tls.Config{RootCAs: roots}
	if withCert {
		cert, err := tls.LoadX509KeyPair(p.ClientCert, p.ClientKey)
		if err != nil {
			t.Fatal(err)
		}
		conf.Certificates = []tls.Certificate{cert}
	}
	return grpc.WithTransportCredentials(credentials.NewTLS(conf))
}

func TestTLS(t *testing.T) {
	p := testpki.New(t)
	cfg := DefaultConfig()
	cfg.TLS = TLSConfig{CertFile: p.ServerCert, KeyFile: p.ServerKey}
	addr := serveTCP(t, cfg, zap.NewNop())

	ok := pb.NewPermissionServiceClient(dial(t, addr, clientTLS(t, p, false)))
	if resp, err := ok.Check(t.Context(), readReq(t)); err != nil || resp.GetDecision() != pb.Decision_DECISION_ALLOW {
		t.Fatalf("TLS client: %v %v", resp, err)
	}
	plain := pb.NewPermissionServiceClient(dial(t, addr))
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, err := plain.Check(ctx, readReq(t)); status.Code(err) != codes.Unavailable {
		t.Fatalf("plaintext client against TLS: %v, want Unavailable", err)
	}
}

func TestMutualTLS(t *testing.T) {
	p := testpki.New(t)
	cfg := DefaultConfig()
	cfg.TLS = TLSConfig{CertFile: p.ServerCert, KeyFile: p.ServerKey, ClientCAFile: p.CA}
	core, logs := observer.New(zap.InfoLevel)
	addr := serveTCP(t, cfg, zap.New(core))

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	anon := pb.NewPermissionServiceClient(dial(t, addr, clientTLS(t, p, false)))
	if _, err := anon.Check(ctx, readReq(t)); status.Code(err) != codes.Unavailable {
		t.Fatalf("client without a certificate: %v, want Unavailable (handshake refused)", err)
	}
	client := pb.NewPermissionServiceClient(dial(t, addr, clientTLS(t, p, true)))
	if resp, err := client.Check(ctx, readReq(t)); err != nil || resp.GetDecision() != pb.Decision_DECISION_ALLOW {
		t.Fatalf("client with a certificate: %v %v", resp, err)
	}
	decisions := logs.FilterMessage("decision").All()
	if len(decisions) != 1 || decisions[0].ContextMap()["client"] != testpki.ClientName {
		t.Errorf("decision log %v, want client agent-runtime from the certificate", decisions)
	}
}

func TestTLSConfigErrors(t *testing.T) {
	p := testpki.New(t)
	eng, _ := engine.New(engine.Config{})
	tests := []struct {
		name string
		tls  TLSConfig
		want string
	}{
		{"cert without key", TLSConfig{CertFile: p.ServerCert}, "cert_file and key_file go together"},
		{"client CA without cert", TLSConfig{ClientCAFile: p.CA}, "needs cert_file and key_file"},
		{"missing cert", TLSConfig{CertFile: filepath.Join(p.Dir, "nope.pem"), KeyFile: p.ServerKey}, "server.tls"},
		{"key that does not match", TLSConfig{CertFile: p.ServerCert, KeyFile: p.ClientKey}, "server.tls"},
		{"CA file without PEM", TLSConfig{CertFile: p.ServerCert, KeyFile: p.ServerKey, ClientCAFile: p.ServerKey}, "holds no PEM certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.TLS = tt.tls
			if _, err := New(cfg, eng, zap.NewNop()); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
}

// TestApproverRole: only a token of role approver may call the approvers'
// service or sign in as an approver, and it may call nothing else; in a
// file without roles no token approves.
func TestApproverRole(t *testing.T) {
	approvals, permission, upstream := pb.ApprovalService_ServiceDesc.ServiceName, pb.PermissionService_ServiceDesc.ServiceName, pb.UpstreamService_ServiceDesc.ServiceName
	tok, err := ParseTokens(strings.NewReader("laptop token-for-laptop-0123456789\nedge-1 token-for-edge1-0123456789 upstream\nalice token-for-alice-0123456789 approver\n"), "tokens")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		token              string
		approve, perm, ups bool
	}{
		{"token-for-laptop-0123456789", false, true, false},
		{"token-for-edge1-0123456789", false, false, true},
		{"token-for-alice-0123456789", true, false, false},
	} {
		e, _ := tok.find(tc.token)
		if got := [3]bool{tok.mayCall(e, approvals), tok.mayCall(e, permission), tok.mayCall(e, upstream)}; got != [3]bool{tc.approve, tc.perm, tc.ups} {
			t.Errorf("%s: may call approvals, permission, upstream = %v", e.name, got)
		}
		if name, ok := tok.Approver(tc.token); ok != tc.approve || ok && name != "alice" {
			t.Errorf("%s: Approver = %q, %v", e.name, name, ok)
		}
	}
	if _, ok := tok.Lookup("token-for-alice-0123456789"); ok {
		t.Error("an approver token is a client of the permission API")
	}
	plain, err := ParseTokens(strings.NewReader("laptop token-for-laptop-0123456789\n"), "tokens")
	if err != nil {
		t.Fatal(err)
	}
	e, _ := plain.find("token-for-laptop-0123456789")
	if plain.mayCall(e, approvals) {
		t.Error("a token of a file without roles may approve")
	}
	if _, ok := plain.Approver("token-for-laptop-0123456789"); ok {
		t.Error("a token of a file without roles signs in as an approver")
	}
}
