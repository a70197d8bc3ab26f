package app

import (
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// socketDir is a short directory for sockets: sun_path holds 107 bytes,
// and t.TempDir's names are long.
func socketDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "tg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	return d
}

// A server with unix_socket answers there as on TCP, the socket file has
// the configured mode from its creation, agents may not touch it, and
// the file goes with the server.
func TestUnixSocketServes(t *testing.T) {
	sock := filepath.Join(socketDir(t), "toolgate.sock")
	cfg := loadConfig(t, configFile(t, t.TempDir(), localOnly+policyNoRules))
	cfg.Server.UnixSocket = sock
	cfg.Server.UnixSocketMode = "0660"
	r := start(t, cfg)
	fi, err := os.Lstat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Type() != fs.ModeSocket || fi.Mode().Perm()&^0o660 != 0 {
		t.Errorf("socket file %v, want a socket with no bits beyond 0660", fi.Mode())
	}
	conn, err := grpc.NewClient("unix:"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := pb.NewPermissionServiceClient(conn)
	project := t.TempDir()
	for _, tt := range []struct {
		command string
		want    pb.Decision
	}{
		{"ls", pb.Decision_DECISION_ALLOW},
		{"rm -f " + sock, pb.Decision_DECISION_DENY},
		{"ln -sf /dev/null " + sock, pb.Decision_DECISION_DENY},
		{"mv " + sock + " /tmp/x", pb.Decision_DECISION_DENY},
	} {
		in, _ := structpb.NewStruct(map[string]any{"command": tt.command})
		res, err := client.Check(t.Context(), &pb.CheckRequest{Tool: &pb.ToolCall{Name: "Bash", Input: in}, WorkingDirectory: project, Mode: pb.PermissionMode_PERMISSION_MODE_BYPASS})
		if err != nil {
			t.Fatalf("%s over the unix socket: %v", tt.command, err)
		}
		if res.GetDecision() != tt.want {
			t.Errorf("%s in bypass mode: %v, want %v", tt.command, res, tt.want)
		}
	}
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Errorf("the socket file is still there after the server stopped: %v", err)
	}
}

// What is at the socket's path when the server starts: a socket no server
// answers on is replaced; a live one, or anything that is not a socket, is
// an error and left as it was.
func TestUnixSocketPathTaken(t *testing.T) {
	dir := socketDir(t)
	stale := filepath.Join(dir, "stale.sock")
	l, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	_ = l.Close()
	if ul, err := listenUnix("server.unix_socket", stale, 0o600); err != nil {
		t.Errorf("stale socket: %v", err)
	} else {
		_ = ul.Close()
	}

	live := filepath.Join(dir, "live.sock")
	ll, err := net.Listen("unix", live)
	if err != nil {
		t.Fatal(err)
	}
	defer ll.Close()
	go func() {
		for {
			c, err := ll.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	if ul, err := listenUnix("server.unix_socket", live, 0o600); err == nil {
		_ = ul.Close()
		t.Error("a socket a server listens on was taken over")
	} else if !strings.Contains(err.Error(), "a server is listening") {
		t.Errorf("live socket: %v", err)
	}

	file := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(file, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	if ul, err := listenUnix("server.unix_socket", file, 0o600); err == nil {
		_ = ul.Close()
		t.Error("a regular file at the socket's path was replaced")
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "keep me" {
		t.Errorf("the regular file was changed: %q, %v", b, err)
	}
}

// Closing removes the socket file only while the path still names it.
func TestUnixSocketCloseLeavesAReplacement(t *testing.T) {
	sock := filepath.Join(socketDir(t), "s.sock")
	ul, err := listenUnix("server.unix_socket", sock, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(sock); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sock, []byte("other"), 0o600); err != nil {
		t.Fatal(err)
	}
	_ = ul.Close()
	if b, err := os.ReadFile(sock); err != nil || string(b) != "other" {
		t.Errorf("close removed or changed a file it did not bind: %q, %v", b, err)
	}
}
