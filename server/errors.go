package server

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/toolgate/toolgate/engine"
)

// statusFromError is the one place that turns a failure to decide into a
// gRPC status. Unknown errors are Internal and their text is not leaked.
func statusFromError(err error) *status.Status {
	var v *validationError
	switch {
	case errors.As(err, &v), errors.Is(err, engine.ErrInvalidRequest), errors.Is(err, engine.ErrUnknownPolicy):
		return status.New(codes.InvalidArgument, err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.New(codes.DeadlineExceeded, "deadline exceeded before a decision")
	case errors.Is(err, context.Canceled):
		return status.New(codes.Canceled, "call cancelled before a decision")
	case errors.Is(err, engine.ErrApprovalInterrupted):
		// A local server asks again, and joins the same approval.
		return status.New(codes.Unavailable, "the server is shutting down while the call waits for an approver; ask again: the approval stays queued")
	}
	if s, ok := status.FromError(err); ok {
		return s
	}
	return status.New(codes.Internal, "internal error")
}
