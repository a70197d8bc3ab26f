// Command bareserver serves toolgate.v1.PermissionService with constant
// answers and nothing else: no validation, no engine, no logging. It is the
// physical limit of the transport on a machine, against which make bench
// compares toolgate. Check answers one fixed ALLOW; CheckStream answers
// each check with the same, from the receiving goroutine. Health and
// reflection are registered as in toolgate, so the same ghz settings work
// against both.
//
//	bareserver --listen 127.0.0.1:0
//
// It prints the bound address on stdout and stops gracefully on SIGINT or
// SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bareserver:", err)
		os.Exit(2)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("bareserver", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:0", "address to listen on (port 0 for a free one)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	lis, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	srv := grpc.NewServer()
	pb.RegisterPermissionServiceServer(srv, bare{})
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	reflection.Register(srv)
	fmt.Fprintln(stdout, lis.Addr().String())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		srv.GracefulStop()
	}()
	if err := srv.Serve(lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return err
	}
	return nil
}

// answer has the shape of a typical toolgate answer, so that both servers
// put about the same bytes on the wire.
func answer(requestID string) *pb.CheckResponse {
	return &pb.CheckResponse{
		RequestId:     requestID,
		Decision:      pb.Decision_DECISION_ALLOW,
		Reason:        "Read is a read-only tool",
		Source:        pb.DecisionSource_DECISION_SOURCE_SAFE_TOOL,
		DecisionId:    "BAREBAREBAREBAREBAREBAREBA",
		ToolKind:      "read",
		Policy:        "default",
		LatencyMicros: 1,
	}
}

// bare answers every check with a constant ALLOW.
type bare struct {
	pb.UnimplementedPermissionServiceServer
}

func (bare) Check(_ context.Context, req *pb.CheckRequest) (*pb.CheckResponse, error) {
	return answer(req.GetRequestId()), nil
}

func (bare) CheckStream(stream pb.PermissionService_CheckStreamServer) error {
	for {
		m, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		c := m.GetCheck()
		if c == nil {
			continue // session context and transcript appends need no answer
		}
		resp := &pb.CheckStreamResponse{RequestId: c.GetRequestId(), Result: &pb.CheckStreamResponse_Response{Response: answer(c.GetRequestId())}}
		if err := stream.Send(resp); err != nil {
			return err
		}
	}
}
