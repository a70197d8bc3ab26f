package server

import (
	"net"
	"strings"
	"testing"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/toolgate/toolgate/engine"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// BenchmarkLargeCheckWindow sends a 3.5 MB check (a transcript of 60 KB
// entries) over loopback TCP with the fixed default windows, and with
// 16 MiB ones (what BDP estimation grows to), for what the fixed window
// costs a large message.
func BenchmarkLargeCheckWindow(b *testing.B) {
	for _, bc := range []struct {
		name           string
		stream, connWn int32
	}{
		{"default", DefaultConfig().StreamWindowBytes, DefaultConfig().ConnWindowBytes},
		{"16MiB", 16 << 20, 16 << 20},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.StreamWindowBytes, cfg.ConnWindowBytes = bc.stream, bc.connWn
			eng, err := engine.New(engine.Config{})
			if err != nil {
				b.Fatal(err)
			}
			srv, err := New(cfg, eng, zap.NewNop())
			if err != nil {
				b.Fatal(err)
			}
			lis, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			served := make(chan error, 1)
			go func() { served <- srv.Serve(lis) }()
			defer func() {
				srv.Shutdown(b.Context())
				<-served
			}()
			conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = conn.Close() }()
			client := pb.NewPermissionServiceClient(conn)
			req := &pb.CheckRequest{Tool: &pb.ToolCall{Name: "TodoWrite"}}
			for range 58 {
				req.Transcript = append(req.Transcript, &pb.TranscriptEntry{Role: pb.Role_ROLE_USER, Text: strings.Repeat("x", 60_000)})
			}
			b.SetBytes(int64(58 * 60_000))
			for b.Loop() {
				if _, err := client.Check(b.Context(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
