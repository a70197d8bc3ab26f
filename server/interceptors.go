package server

import (
	"context"
	"runtime/debug"
	"strings"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// recoveryHandler turns a panic into Internal, logging the stack but never
// the request.
func recoveryHandler(log *zap.Logger) recovery.RecoveryHandlerFuncContext {
	return func(ctx context.Context, p any) error {
		log.Error("panic in handler", zap.Any("panic", p), zap.ByteString("stack", debug.Stack()))
		return status.Error(codes.Internal, "internal error")
	}
}

// quiet reports methods that are not access-logged: health checks poll.
func quiet(method string) bool {
	return strings.HasPrefix(method, "/grpc.health.v1.Health/")
}

// accessLogUnary logs one line per unary RPC. A Check that succeeded has
// its decision line already, so its rpc line is debug: one line per check.
func accessLogUnary(log *zap.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		start := time.Now()
		resp, err := handler(ctx, req)
		if quiet(info.FullMethod) {
			return resp, err
		}
		level := zap.InfoLevel
		if err == nil && info.FullMethod == pb.PermissionService_Check_FullMethodName || status.Code(err) == codes.Canceled {
			// A cancelled call is the client's choice, and one line each
			// would let a client flood the log.
			level = zap.DebugLevel
		}
		ce := log.Check(level, "rpc")
		if ce == nil {
			return resp, err
		}
		fields := []zap.Field{
			zap.String("method", info.FullMethod),
			zap.Stringer("code", status.Code(err)),
			zap.Int64("duration_us", time.Since(start).Microseconds()),
		}
		if r, ok := req.(*pb.CheckRequest); ok {
			// decide fills in a generated id, so this is the id the client saw.
			fields = append(fields, zap.String("request_id", r.GetRequestId()))
		}
		if err != nil {
			fields = append(fields, zap.String("error", status.Convert(err).Message()))
		}
		ce.Write(fields...)
		return resp, err
	}
}

// accessLogStream logs one line per streaming RPC, when it ends.
func accessLogStream(log *zap.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		start := time.Now()
		err := handler(srv, ss)
		if quiet(info.FullMethod) {
			return err
		}
		level := zap.InfoLevel
		if status.Code(err) == codes.Canceled {
			level = zap.DebugLevel
		}
		ce := log.Check(level, "rpc")
		if ce == nil {
			return err
		}
		fields := []zap.Field{
			zap.String("method", info.FullMethod),
			zap.Stringer("code", status.Code(err)),
			zap.Int64("duration_us", time.Since(start).Microseconds()),
		}
		if err != nil {
			fields = append(fields, zap.String("error", status.Convert(err).Message()))
		}
		ce.Write(fields...)
		return err
	}
}
