package server

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/toolgate/toolgate/engine"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// BenchmarkCheckAudit is the cost of one check answered locally without
// and with the audit log: with it, the handler encodes the record and
// hands it to the audit writer.
func BenchmarkCheckAudit(b *testing.B) {
	for _, audit := range []bool{false, true} {
		name := "off"
		if audit {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			cfg := DefaultConfig()
			if audit {
				cfg.Audit.File = filepath.Join(b.TempDir(), "audit.jsonl")
			}
			eng, err := engine.New(engine.Config{})
			if err != nil {
				b.Fatal(err)
			}
			srv, err := New(cfg, eng, zap.NewNop())
			if err != nil {
				b.Fatal(err)
			}
			lis := bufconn.Listen(1 << 20)
			served := make(chan error, 1)
			go func() { served <- srv.Serve(inProcess{lis}) }()
			conn, err := grpc.NewClient("passthrough:///bufconn",
				grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
				grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				b.Fatal(err)
			}
			defer func() {
				srv.Shutdown(context.Background())
				<-served
				_ = conn.Close()
			}()
			client := pb.NewPermissionServiceClient(conn)
			in, _ := structpb.NewStruct(map[string]any{"file_path": "/usr/include/stdio.h"})
			req := &pb.CheckRequest{Tool: &pb.ToolCall{Name: "Read", Input: in}, WorkingDirectory: os.TempDir()}
			for b.Loop() {
				if _, err := client.Check(context.Background(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
