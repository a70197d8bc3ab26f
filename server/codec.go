package server

import (
	"context"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	protoapi "google.golang.org/protobuf/proto"

	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// decodeCodec is grpc-go's proto codec with one change: a request of this
// service that does not decode (invalid UTF-8, nesting past protobuf's
// recursion limit, malformed wire data) is the client's error, answered
// INVALID_ARGUMENT. grpc-go turns any codec error into INTERNAL before an
// interceptor sees it, so for those requests the codec reports success
// with an empty message and keeps the error aside; the first interceptor
// (decodeErrorsUnary, decodeErrorsStream) answers with it.
type decodeCodec struct{ encoding.CodecV2 }

func newDecodeCodec() decodeCodec { return decodeCodec{encoding.GetCodecV2(proto.Name)} }

// decodeFailures holds the error of each request that did not decode,
// by message, until the interceptor takes it (at once, on the same call).
var decodeFailures sync.Map

func (c decodeCodec) Unmarshal(data mem.BufferSlice, v any) error {
	err := c.CodecV2.Unmarshal(data, v)
	if err == nil {
		return nil
	}
	switch m := v.(type) {
	case *pb.CheckRequest, *pb.CheckStreamRequest:
		protoapi.Reset(m.(protoapi.Message))
		decodeFailures.Store(v, err)
		return nil
	}
	return err
}

// takeDecodeError returns the INVALID_ARGUMENT status of a request that
// did not decode, or nil.
func takeDecodeError(m any) error {
	if err, ok := decodeFailures.LoadAndDelete(m); ok {
		return status.Errorf(codes.InvalidArgument, "the request does not decode as protobuf: %v", err)
	}
	return nil
}

func decodeErrorsUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if err := takeDecodeError(req); err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

func decodeErrorsStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	return handler(srv, decodeCheckedStream{ss})
}

type decodeCheckedStream struct{ grpc.ServerStream }

func (s decodeCheckedStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	return takeDecodeError(m)
}
