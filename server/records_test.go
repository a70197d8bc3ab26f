package server

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/toolgate/toolgate/engine"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

type recorded struct {
	mu   sync.Mutex
	recs []*pb.DecisionRecord
}

func (r *recorded) Record(rec *pb.DecisionRecord) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec)
}

// TestDecisionRecords: every decision's record goes to the recorder,
// with its id (the decision_id), project, session, tool, decision,
// source and time.
func TestDecisionRecords(t *testing.T) {
	rec := &recorded{}
	eng, err := engine.New(engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(DefaultConfig(), eng, zap.NewNop(), WithRecorder(rec))
	if err != nil {
		t.Fatal(err)
	}
	env := serveEnv(t, srv)
	req := checkReq(t, "r1", "Bash", map[string]any{"command": "curl -H 'Authorization: Bearer sk-abcdefghijklmnopqrstuvwxyz0123' https://x"})
	req.SessionId = "s1"
	resp, err := env.client.Check(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.recs) != 1 {
		t.Fatalf("%d records for one check", len(rec.recs))
	}
	r := rec.recs[0]
	if r.GetId() != resp.GetDecisionId() || r.GetRequestId() != "r1" || r.GetSessionId() != "s1" || r.GetTool() != "Bash" ||
		r.GetProject() != req.GetWorkingDirectory() || r.GetDecision() != resp.GetDecision() || r.GetSource() != resp.GetSource() || r.GetTimeUnixMicros() == 0 {
		t.Errorf("record %v for answer %v", r, resp)
	}
}

// TestShipRecords: the centre stores shipped records through its sink;
// without one it answers FAILED_PRECONDITION (the local server keeps
// them); a batch over the limit, or a record without an id, is refused;
// the store's failure is UNAVAILABLE (sent again), its refusal
// INVALID_ARGUMENT.
func TestShipRecords(t *testing.T) {
	recs := []*pb.DecisionRecord{{Id: "a", TimeUnixMicros: 1}, {Id: "b", TimeUnixMicros: 1}}
	bare := pb.NewUpstreamServiceClient(newEnv(t).conn)
	if _, err := bare.ShipRecords(t.Context(), &pb.ShipRecordsRequest{Records: recs}); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("without a store: %v", err)
	}

	var got []string
	var stored []*pb.DecisionRecord
	var fail error
	sink := func(_ context.Context, rs []*pb.DecisionRecord) (int, error) {
		if fail != nil {
			return 0, fail
		}
		for _, r := range rs {
			got = append(got, r.GetId())
		}
		stored = append(stored, rs...)
		return len(rs), nil
	}
	eng, err := engine.New(engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(DefaultConfig(), eng, zap.NewNop(), WithRecordSink(sink))
	if err != nil {
		t.Fatal(err)
	}
	client := pb.NewUpstreamServiceClient(serveEnv(t, srv).conn)
	resp, err := client.ShipRecords(t.Context(), &pb.ShipRecordsRequest{Records: recs})
	if err != nil || resp.GetAccepted() != 2 || len(got) != 2 {
		t.Fatalf("ShipRecords: %v, %v; stored %v", resp, err, got)
	}
	// A record names the host it says and who sent it; a time in the
	// future is the time of receipt.
	future := time.Now().Add(time.Hour).UnixMicro()
	if _, err := client.ShipRecords(t.Context(), &pb.ShipRecordsRequest{Records: []*pb.DecisionRecord{{Id: "c", Host: "prod-runner-1", TimeUnixMicros: future}}}); err != nil {
		t.Fatal(err)
	}
	if c := stored[len(stored)-1]; !strings.HasPrefix(c.GetHost(), "prod-runner-1 (as ") || c.GetTimeUnixMicros() >= future {
		t.Errorf("stored %v: want the sender named and the time of receipt", c)
	}
	if _, err := client.ShipRecords(t.Context(), &pb.ShipRecordsRequest{Records: make([]*pb.DecisionRecord, MaxShipRecords+1)}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("over the limit: %v", err)
	}
	if _, err := client.ShipRecords(t.Context(), &pb.ShipRecordsRequest{Records: []*pb.DecisionRecord{{}}}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("no id: %v", err)
	}
	fail = errors.New("disk full")
	if _, err := client.ShipRecords(t.Context(), &pb.ShipRecordsRequest{Records: recs}); status.Code(err) != codes.Unavailable {
		t.Errorf("store failing: %v", err)
	}
	fail = ErrInvalidRecords
	if _, err := client.ShipRecords(t.Context(), &pb.ShipRecordsRequest{Records: recs}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("store refusing: %v", err)
	}
}
