package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// recordingService answers every check ALLOW and keeps what it was sent.
type recordingService struct {
	pb.UnimplementedPermissionServiceServer
	mu   sync.Mutex
	reqs []*pb.CheckRequest
}

func (s *recordingService) Check(_ context.Context, req *pb.CheckRequest) (*pb.CheckResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, req)
	return &pb.CheckResponse{RequestId: req.GetRequestId(), Decision: pb.Decision_DECISION_ALLOW, Reason: "recorded"}, nil
}

func (s *recordingService) last(t *testing.T) *pb.CheckRequest {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.reqs) == 0 {
		t.Fatal("the server got no check")
	}
	return s.reqs[len(s.reqs)-1]
}

func startRecording(t *testing.T) (*recordingService, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	svc := &recordingService{}
	srv := grpc.NewServer()
	pb.RegisterPermissionServiceServer(srv, svc)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	return svc, l.Addr().String()
}

// wantAttestation is dir as this process sees it, read independently of
// internal/attest.
func wantAttestation(t *testing.T, dir string) *pb.Attestation {
	t.Helper()
	id, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		t.Skipf("no boot id here: %v", err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	var ns, root syscall.Stat_t
	if err := syscall.Stat("/proc/self/ns/mnt", &ns); err != nil {
		t.Skipf("no mount namespace here: %v", err)
	}
	if err := syscall.Stat("/", &root); err != nil {
		t.Fatal(err)
	}
	return &pb.Attestation{BootId: strings.TrimSpace(string(id)), WorkingDirectoryDevice: uint64(st.Dev), WorkingDirectoryInode: st.Ino,
		MountNamespace: ns.Ino, RootDevice: uint64(root.Dev), RootInode: root.Ino}
}

// TestClientsAttest: toolgate check and toolgate hook say where they stand
// for the check's working directory, so that a server can tell whether it
// sees the agent's files; a directory they cannot stat gets none.
func TestClientsAttest(t *testing.T) {
	svc, addr := startRecording(t)
	dir := t.TempDir()
	want := wantAttestation(t, dir)

	if code, out, errOut := runCheck(t, "--addr", addr, "--tool", "Read", "--input", `{"file_path":"a.go"}`, "--cwd", dir); code != exitAllow {
		t.Fatalf("check: exit %d %s %s", code, out, errOut)
	}
	if got := svc.last(t).GetAttestation(); !proto.Equal(got, want) {
		t.Errorf("check sent attestation %v, want %v", got, want)
	}

	t.Setenv("CLAUDE_PROJECT_DIR", dir)
	input := fmt.Sprintf(`{"session_id":"s","cwd":%q,"hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{"file_path":"a.go"}}`, dir)
	if code, out, errOut := runHookCmd(t, []byte(input), "claude-code", "--addr", addr); code != 0 || !strings.Contains(out, `"allow"`) {
		t.Fatalf("hook: exit %d %s %s", code, out, errOut)
	}
	req := svc.last(t)
	if req.GetWorkingDirectory() != dir || !proto.Equal(req.GetAttestation(), want) {
		t.Errorf("hook sent working directory %q with attestation %v, want %q with %v", req.GetWorkingDirectory(), req.GetAttestation(), dir, want)
	}

	gone := dir + "/missing"
	if code, out, errOut := runCheck(t, "--addr", addr, "--tool", "Read", "--input", `{"file_path":"a.go"}`, "--cwd", gone); code != exitAllow {
		t.Fatalf("check: exit %d %s %s", code, out, errOut)
	}
	if got := svc.last(t).GetAttestation(); got != nil {
		t.Errorf("check of a missing directory sent attestation %v, want none", got)
	}
}
