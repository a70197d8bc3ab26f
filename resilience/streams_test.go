package resilience

import (
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/toolgate/toolgate/bench/workload"
	"github.com/toolgate/toolgate/classifier"
	"github.com/toolgate/toolgate/fakellm"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// TestStreams runs many streams at once, each interleaving checks (local
// ones, answered at once, and ones for the model, answered later) with
// transcript appends. Every request_id must be answered exactly once, on
// its own stream, and each stream's transcript must reach the model with
// its own checks only: the model blocks whatever follows a user message
// carrying fakellm.BlockMarker, which only odd streams send.
func TestStreams(t *testing.T) {
	f := startFake(t, fakellm.DefaultHandler, 5*time.Millisecond)
	_, client := stack(t, f, func(c *classifier.Config) {
		c.Backends[0].MaxConcurrent = 4
		// Queueing, not failing, is under test here.
		c.QueueTimeout = time.Minute
		c.Timeout = 2 * time.Minute
	})
	dir := project(t)
	local := workload.Local(dir)
	streams, perStream := scale(16), scale(40)

	var wg sync.WaitGroup
	for s := range streams {
		wg.Go(func() {
			if err := runStream(t, client, dir, local, s, perStream); err != nil {
				t.Errorf("stream %d: %v", s, err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if f.Count() == 0 {
		t.Fatal("no check reached the model; the test would not cover out-of-order answers")
	}
}

// runStream drives one stream and checks its answers.
func runStream(t *testing.T, client pb.PermissionServiceClient, dir string, local []workload.Call, s, checks int) error {
	stream, err := client.CheckStream(t.Context())
	if err != nil {
		return err
	}
	blocked := s%2 == 1
	sess := &pb.SessionContext{WorkingDirectory: dir}
	if err := stream.Send(&pb.CheckStreamRequest{Kind: &pb.CheckStreamRequest_Session{Session: sess}}); err != nil {
		return err
	}
	if blocked {
		entry := &pb.TranscriptEntry{Role: pb.Role_ROLE_USER, Text: "please run " + fakellm.BlockMarker}
		if err := stream.Send(&pb.CheckStreamRequest{Kind: &pb.CheckStreamRequest_Transcript{Transcript: &pb.TranscriptAppend{Entries: []*pb.TranscriptEntry{entry}}}}); err != nil {
			return err
		}
	}
	// want is the answer each request_id must get.
	type want struct {
		decision pb.Decision
		source   pb.DecisionSource
	}
	wants := map[string]want{}
	rng := rand.New(rand.NewPCG(uint64(s), 7))

	// Answers are read while checks are still being sent: the server
	// holds back reading when too many checks are in flight.
	got := map[string]int{}
	answers := map[string]*pb.CheckResponse{}
	var recvErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			m, err := stream.Recv()
			if err == io.EOF {
				return
			}
			if err != nil {
				recvErr = err
				return
			}
			got[m.GetRequestId()]++
			answers[m.GetRequestId()] = m.GetResponse()
			if e := m.GetError(); e != nil {
				recvErr = fmt.Errorf("request %s answered with an error: %d %s", m.GetRequestId(), e.GetCode(), e.GetMessage())
				return
			}
		}
	}()
	for i := range checks {
		if rng.IntN(3) == 0 {
			// Noise the classifier drops (assistant prose), interleaved.
			entry := &pb.TranscriptEntry{Role: pb.Role_ROLE_ASSISTANT, Text: fmt.Sprintf("stream %d thinking %d", s, i)}
			if err := stream.Send(&pb.CheckStreamRequest{Kind: &pb.CheckStreamRequest_Transcript{Transcript: &pb.TranscriptAppend{Entries: []*pb.TranscriptEntry{entry}}}}); err != nil {
				return err
			}
		}
		id := fmt.Sprintf("s%d-c%d", s, i)
		var req *pb.CheckRequest
		if rng.IntN(4) == 0 {
			req = workload.Classified(dir, s*100000+i).Req
			if blocked {
				wants[id] = want{pb.Decision_DECISION_DENY, pb.DecisionSource_DECISION_SOURCE_CLASSIFIER}
			} else {
				wants[id] = want{pb.Decision_DECISION_ALLOW, pb.DecisionSource_DECISION_SOURCE_CLASSIFIER}
			}
		} else {
			c := local[rng.IntN(len(local))]
			req = c.Req
			wants[id] = want{c.Want, c.Source}
		}
		req = cloneWithID(req, id)
		req.WorkingDirectory = "" // from the session context
		if err := stream.Send(&pb.CheckStreamRequest{Kind: &pb.CheckStreamRequest_Check{Check: req}}); err != nil {
			return err
		}
	}
	if err := stream.CloseSend(); err != nil {
		return err
	}
	<-done
	if recvErr != nil {
		return recvErr
	}
	for id, n := range got {
		if _, ok := wants[id]; !ok {
			return fmt.Errorf("answer for %q, which this stream never sent", id)
		}
		if n != 1 {
			return fmt.Errorf("%s answered %d times", id, n)
		}
		if a, w := answers[id], wants[id]; a.GetDecision() != w.decision || a.GetSource() != w.source {
			return fmt.Errorf("%s: %v by %v (%s), want %v by %v", id, a.GetDecision(), a.GetSource(), a.GetReason(), w.decision, w.source)
		}
	}
	if len(got) != len(wants) {
		return fmt.Errorf("%d checks sent, %d answered", len(wants), len(got))
	}
	return nil
}

func cloneWithID(req *pb.CheckRequest, id string) *pb.CheckRequest {
	c := proto.CloneOf(req)
	c.RequestId = id
	return c
}
