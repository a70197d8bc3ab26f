package server

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/toolgate/toolgate/engine"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// attestation is what a client beside the agent sends for dir.
func attestation(t *testing.T, dir string) *pb.Attestation {
	t.Helper()
	id, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		t.Skipf("no boot id to attest: %v", err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	var ns, root syscall.Stat_t
	if err := syscall.Stat("/proc/self/ns/mnt", &ns); err != nil {
		t.Skipf("no mount namespace to attest: %v", err)
	}
	if err := syscall.Stat("/", &root); err != nil {
		t.Fatal(err)
	}
	return &pb.Attestation{BootId: strings.TrimSpace(string(id)), WorkingDirectoryDevice: uint64(st.Dev), WorkingDirectoryInode: st.Ino,
		MountNamespace: ns.Ino, RootDevice: uint64(root.Dev), RootInode: root.Ino}
}

// remoteEnv serves srv over an in-memory connection that does not say it
// is from this machine: a client across the network, as the server sees
// one.
func remoteEnv(t *testing.T, cfg Config) *testEnv {
	t.Helper()
	eng, err := engine.New(engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(cfg, eng, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	return serveOver(t, srv, false)
}

// TestFilesByPeer: a Write inside a project on this machine is allowed by
// accept-edits only when the server has reason to think it sees the
// client's files: an attestation that matches, or a peer on this machine
// (unless the configuration counts none). Otherwise the answer says the
// files are not visible.
func TestFilesByPeer(t *testing.T) {
	project := t.TempDir()
	other := t.TempDir()
	write := func(wd string, a *pb.Attestation) *pb.CheckRequest {
		r := checkReq(t, "w", "Write", map[string]any{"file_path": filepath.Join(project, "x.txt"), "content": "x"})
		r.WorkingDirectory, r.Attestation = wd, a
		return r
	}
	unseenCfg := DefaultConfig()
	unseenCfg.UnattestedFiles = UnattestedUnseen
	loopback := serveTCP(t, DefaultConfig(), zap.NewNop())
	loopbackUnseen := serveTCP(t, unseenCfg, zap.NewNop())
	dial := func(addr string) pb.PermissionServiceClient {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return pb.NewPermissionServiceClient(conn)
	}
	remote := remoteEnv(t, DefaultConfig()).client
	wrongKernel := attestation(t, project)
	wrongKernel.BootId = "not-this-kernel"
	cases := []struct {
		name   string
		client pb.PermissionServiceClient
		req    *pb.CheckRequest
		seen   bool
	}{
		{"loopback, no attestation", dial(loopback), write(project, nil), true},
		{"loopback, missing working directory", dial(loopback), write(filepath.Join(project, "gone"), nil), false},
		{"loopback, attested", dial(loopback), write(project, attestation(t, project)), true},
		{"loopback, attested another directory", dial(loopback), write(project, attestation(t, other)), false},
		{"loopback, attested another kernel", dial(loopback), write(project, wrongKernel), false},
		{"loopback with unattested_files unseen", dial(loopbackUnseen), write(project, nil), false},
		{"loopback with unattested_files unseen, attested", dial(loopbackUnseen), write(project, attestation(t, project)), true},
		{"remote, no attestation", remote, write(project, nil), false},
		{"remote, attested", remote, write(project, attestation(t, project)), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := tc.client.Check(t.Context(), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			allowed := resp.GetDecision() == pb.Decision_DECISION_ALLOW && resp.GetSource() == pb.DecisionSource_DECISION_SOURCE_ACCEPT_EDITS
			if allowed != tc.seen {
				t.Fatalf("got %v/%v %q, want allowed by accept-edits %v", resp.GetDecision(), resp.GetSource(), resp.GetReason(), tc.seen)
			}
			if !tc.seen && !strings.Contains(resp.GetReason(), "not visible to this server") {
				t.Fatalf("reason %q does not say the files are not visible", resp.GetReason())
			}
		})
	}
}

// TestStreamSessionAttestation: a stream's session attests its working
// directory for the checks that use it; a check naming another working
// directory does not borrow it.
func TestStreamSessionAttestation(t *testing.T) {
	project := t.TempDir()
	other := t.TempDir()
	env := remoteEnv(t, DefaultConfig())
	s, err := env.client.CheckStream(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Send(&pb.CheckStreamRequest{Kind: &pb.CheckStreamRequest_Session{Session: &pb.SessionContext{
		WorkingDirectory: project, Attestation: attestation(t, project)}}}); err != nil {
		t.Fatal(err)
	}
	inSession := checkReq(t, "session", "Write", map[string]any{"file_path": filepath.Join(project, "x.txt"), "content": "x"})
	inSession.WorkingDirectory = ""
	elsewhere := checkReq(t, "elsewhere", "Write", map[string]any{"file_path": filepath.Join(other, "x.txt"), "content": "x"})
	elsewhere.WorkingDirectory = other
	sendCheck(t, s, inSession)
	sendCheck(t, s, elsewhere)
	got := map[string]*pb.CheckResponse{}
	for range 2 {
		r := recv(t, s)
		got[r.GetRequestId()] = r.GetResponse()
	}
	if r := got["session"]; r.GetDecision() != pb.Decision_DECISION_ALLOW || r.GetSource() != pb.DecisionSource_DECISION_SOURCE_ACCEPT_EDITS {
		t.Errorf("check in the session's directory: %v", r)
	}
	if r := got["elsewhere"]; r.GetDecision() == pb.Decision_DECISION_ALLOW || !strings.Contains(r.GetReason(), "not visible to this server") {
		t.Errorf("check in another directory: %v", r)
	}
}
