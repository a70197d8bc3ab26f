package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// TestServeUnattestedFiles: --unattested-files unseen stops a loopback
// client that sends no attestation from counting as sharing the server's
// disk (a proxy or a sidecar's neighbour on loopback is not the agent).
func TestServeUnattestedFiles(t *testing.T) {
	project := t.TempDir()
	if err := os.WriteFile(filepath.Join(project, "README.md"), []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	read := func(addr string) *pb.CheckResponse {
		t.Helper()
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		in, _ := structpb.NewStruct(map[string]any{"file_path": filepath.Join(project, "README.md")})
		resp, err := pb.NewPermissionServiceClient(conn).Check(t.Context(), &pb.CheckRequest{
			Tool: &pb.ToolCall{Name: "Read", Input: in}, WorkingDirectory: project})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if r := read(startServe(t)); r.GetDecision() != pb.Decision_DECISION_ALLOW {
		t.Errorf("default: %v (%s), want ALLOW", r.GetDecision(), r.GetReason())
	}
	if r := read(startServe(t, "--unattested-files", "unseen")); r.GetDecision() == pb.Decision_DECISION_ALLOW || !strings.Contains(r.GetReason(), "not visible to this server") {
		t.Errorf("--unattested-files unseen: %v (%s)", r.GetDecision(), r.GetReason())
	}
	var out, errOut bytes.Buffer
	if code := run(t.Context(), []string{"serve", "--listen", "127.0.0.1:0", "--metrics-listen", "off", "--unattested-files", "trust"}, &out, &errOut); code == 0 || !strings.Contains(errOut.String(), "server.unattested_files") {
		t.Errorf("a bad value: exit %d, %q", code, errOut.String())
	}
}
