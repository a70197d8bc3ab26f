package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/toolgate/toolgate/engine"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
	"github.com/toolgate/toolgate/redact"
)

// MaxShipRecords is the most decision records one ShipRecords call takes:
// the approvals store's limit on one append.
const MaxShipRecords = 1000

// maxRecordSkew is how far ahead of this server's clock a shipped
// record's time may be.
const maxRecordSkew = 5 * time.Minute

// maxRecordIDBytes is the approvals store's limit on a record's id.
const maxRecordIDBytes = 128

// Recorder takes a copy of every decision record this server makes (a
// local server's shipper to its upstream). It must not hold the check:
// it returns promptly whatever its disk does.
type Recorder interface {
	Record(*pb.DecisionRecord)
}

// RecordSink stores the decision records local servers ship (the centre's
// approvals store). It returns how many were new; records whose ids it
// holds already are ignored. ErrInvalidRecords in its error chain means
// the records were refused for what they hold.
type RecordSink func(ctx context.Context, recs []*pb.DecisionRecord) (int, error)

// ErrInvalidRecords marks a RecordSink error caused by the records
// themselves (INVALID_ARGUMENT), not the store (UNAVAILABLE).
var ErrInvalidRecords = errors.New("invalid decision records")

// WithRecorder hands every decision record to r.
func WithRecorder(r Recorder) Option { return func(o *options) { o.recorder = r } }

// WithRecordSink makes ShipRecords store the records with sink; without
// it, ShipRecords answers FAILED_PRECONDITION.
func WithRecordSink(sink RecordSink) Option { return func(o *options) { o.sink = sink } }

// record hands the decision's record to the recorder, when there is one.
func (s *Service) record(req *pb.CheckRequest, resp *pb.CheckResponse, res engine.Result, at time.Time) {
	if s.recorder == nil {
		return
	}
	s.recorder.Record(&pb.DecisionRecord{
		Id:             resp.GetDecisionId(),
		TimeUnixMicros: at.UnixMicro(),
		Project:        req.GetWorkingDirectory(),
		SessionId:      req.GetSessionId(),
		Tool:           req.GetTool().GetName(),
		Decision:       resp.GetDecision(),
		Source:         resp.GetSource(),
		Reason:         redact.String(resp.GetReason()),
		Policy:         res.Policy,
		PolicyVersion:  res.PolicyVersion,
		RequestId:      req.GetRequestId(),
		ApprovalId:     resp.GetApproval().GetId(),
		Approver:       resp.GetApproval().GetApprover(),
		// Kept in the record's data at the centre: the fleet's
		// decisions say which category decided.
		ClassifierCategory: resp.GetClassifier().GetCategory(),
	})
}

// ShipRecords stores a local server's decision records, ignoring ids
// stored already.
func (u *Upstream) ShipRecords(ctx context.Context, req *pb.ShipRecordsRequest) (*pb.ShipRecordsResponse, error) {
	if u.sink == nil {
		return nil, status.Error(codes.FailedPrecondition, "this server keeps no decision records: it has no approvals store")
	}
	recs := req.GetRecords()
	if len(recs) > MaxShipRecords {
		return nil, status.Errorf(codes.InvalidArgument, "%d records, over the limit of %d per call", len(recs), MaxShipRecords)
	}
	for i, r := range recs {
		if r.GetId() == "" || len(r.GetId()) > maxRecordIDBytes {
			return nil, status.Errorf(codes.InvalidArgument, "records[%d].id must be 1 to %d bytes", i, maxRecordIDBytes)
		}
	}
	if len(recs) == 0 {
		return &pb.ShipRecordsResponse{}, nil
	}
	// The host a record names is the sender's word; who sent it is the
	// server's: a record says both, so that no sender passes its records
	// off as another host's. A time in the future (which would sort first
	// and outlive every prune) is the time of receipt.
	origin, now := Origin(ctx), time.Now()
	for _, r := range recs {
		if origin != "" {
			r.Host = fmt.Sprintf("%s (as %s)", r.GetHost(), origin)
		}
		if r.GetTimeUnixMicros() > now.Add(maxRecordSkew).UnixMicro() {
			r.TimeUnixMicros = now.UnixMicro()
		}
	}
	n, err := u.sink(ctx, recs)
	switch {
	case errors.Is(err, ErrInvalidRecords):
		return nil, status.Error(codes.InvalidArgument, err.Error())
	case err != nil:
		if ctx.Err() != nil {
			return nil, statusFromError(ctx.Err()).Err()
		}
		u.svc.log.Error("storing shipped decision records", zap.Error(err))
		return nil, status.Error(codes.Unavailable, "the decision records could not be stored; send them again")
	}
	return &pb.ShipRecordsResponse{Accepted: int32(n)}, nil
}
