package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/toolgate/toolgate/engine"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// session is the state of one CheckStream: its defaults and transcript.
// Only the receive loop touches it.
type session struct {
	ctx *pb.SessionContext
	// transcript is converted once, when it arrives: every later check
	// shares it (converting per check would cost each classifier-bound
	// check the whole transcript again, and each check in flight a copy).
	// sizes are the entries' retained sizes, held their sum, counted
	// against the server-wide MaxHeldTranscriptBytes.
	transcript []engine.TranscriptEntry
	sizes      []int
	held       int
	checked    bool // a check has arrived; a session context is too late
	inFlight   map[string]bool
	mu         sync.Mutex // guards inFlight, which workers clear
}

type received struct {
	msg  *pb.CheckStreamRequest
	hold streamHold // the decode budget msg holds
	err  error
}

// CheckStream answers the checks of one agent session. Sends come from one
// goroutine; checks run concurrently up to MaxStreamInFlight; the receive
// loop ends when the client closes its side, the client goes away, or the
// server starts draining. Every accepted check is answered before the
// stream ends, unless the client is gone.
func (s *Service) CheckStream(stream pb.PermissionService_CheckStreamServer) error {
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()

	out := make(chan *pb.CheckStreamResponse, s.cfg.MaxStreamInFlight)
	sendDone := make(chan error, 1)
	go func() {
		var sendErr error
		for m := range out {
			if sendErr != nil {
				continue // drain so that workers never block
			}
			if err := stream.Send(m); err != nil {
				sendErr = err
				cancel()
			}
		}
		sendDone <- sendErr
	}()

	// Recv blocks, so it runs apart from the loop that also watches for
	// shutdown; it stops at the first error, which always comes once the
	// handler returns.
	msgs := make(chan received)
	budgeted := budgetedStream(stream)
	go func() {
		for {
			m, hold, err := recvHeld(stream, budgeted)
			select {
			case msgs <- received{m, hold, err}:
			case <-ctx.Done():
				hold.release()
				return
			}
			if err != nil {
				return
			}
		}
	}()

	sess := &session{inFlight: map[string]bool{}}
	defer func() { s.transcriptHeld.Add(-int64(sess.held)) }()
	sem := make(chan struct{}, s.cfg.MaxStreamInFlight)
	workers := &checkWorkers{jobs: make(chan func()), max: s.cfg.MaxStreamInFlight}
	var endErr error

loop:
	for {
		select {
		case <-s.draining:
			endErr = status.Error(codes.Unavailable, "server is shutting down: checks this stream has not answered were not decided; send them again (another replica will answer)")
			break loop
		case <-ctx.Done():
			endErr = ctx.Err()
			break loop
		case r := <-msgs:
			if errors.Is(r.err, io.EOF) {
				break loop
			}
			if r.err != nil {
				endErr = r.err
				break loop
			}
			if !s.handleStreamMsg(ctx, sess, r.msg, r.hold, sem, workers, out) {
				endErr = ctx.Err()
				break loop
			}
		}
	}
	workers.stop()
	close(out)
	if err := <-sendDone; err != nil {
		if stream.Context().Err() == nil {
			// The server failed to send, and cancelled ctx itself: that,
			// not a departed client, is what ended the stream.
			return err
		}
		if endErr == nil {
			endErr = err
		}
	}
	if endErr != nil && ctx.Err() != nil {
		// The client is gone; there is nobody to tell.
		return status.FromContextError(ctx.Err()).Err()
	}
	return endErr
}

// handleStreamMsg handles one client message. It returns false when the
// client went away while the check waited for a free slot.
//
// The message's decode budget is given back when it returns, or, for a
// check it hands to a worker, when the worker has answered it.
func (s *Service) handleStreamMsg(ctx context.Context, sess *session, m *pb.CheckStreamRequest, hold streamHold, sem chan struct{}, workers *checkWorkers, out chan<- *pb.CheckStreamResponse) bool {
	// Given back on return unless given back before, or handed on.
	defer hold.release()
	itemErr := func(id string, code codes.Code, msg string) {
		s.logItemError(id, code, msg)
		out <- &pb.CheckStreamResponse{RequestId: id, Result: &pb.CheckStreamResponse_Error{Error: &pb.CheckError{Code: int32(code), Message: msg}}}
	}
	switch k := m.GetKind().(type) {
	case *pb.CheckStreamRequest_Session:
		switch {
		case sess.ctx != nil:
			itemErr("", codes.FailedPrecondition, "session context already set; it may be sent once")
		case sess.checked:
			itemErr("", codes.FailedPrecondition, "session context must come before the first check")
		default:
			sess.ctx = k.Session
		}
	case *pb.CheckStreamRequest_Transcript:
		entries := k.Transcript.GetEntries()
		if _, err := s.checkEntries("transcript.entries", entries); err != nil {
			itemErr("", codes.InvalidArgument, err.Error())
			return true
		}
		if len(entries) > s.cfg.MaxTranscriptEntries {
			// Only the newest fit; the older ones would be dropped at once.
			entries = entries[len(entries)-s.cfg.MaxTranscriptEntries:]
		}
		// Converted first, and counted by what the converted entries keep
		// (retainedSize), not by their encoded size: that is what the
		// stream holds until it ends.
		converted := make([]engine.TranscriptEntry, len(entries))
		sizes := make([]int, len(entries))
		n := 0
		for i, e := range entries {
			converted[i] = transcriptToEngine(e)
			sizes[i] = retainedSize(converted[i])
			n += sizes[i]
		}
		if !s.holdTranscript(n) {
			itemErr("", codes.ResourceExhausted, fmt.Sprintf("the server holds %d bytes of stream transcripts, its limit (max_held_transcript_bytes, counted as held in memory); this one was not added: send a shorter transcript, or send it with each check", s.cfg.MaxHeldTranscriptBytes))
			return true
		}
		sess.transcript = append(sess.transcript, converted...)
		sess.sizes = append(sess.sizes, sizes...)
		sess.held += n
		if over := len(sess.transcript) - s.cfg.MaxTranscriptEntries; over > 0 {
			// Keep the newest entries: they are what the classifier reads.
			// A new array, so that checks holding the old one keep it whole.
			freed := 0
			for _, sz := range sess.sizes[:over] {
				freed += sz
			}
			sess.transcript = append(sess.transcript[:0:0], sess.transcript[over:]...)
			sess.sizes = append(sess.sizes[:0:0], sess.sizes[over:]...)
			sess.held -= freed
			s.transcriptHeld.Add(-int64(freed))
		}
	case *pb.CheckStreamRequest_Check:
		sess.checked = true
		req := s.mergeSession(sess, k.Check)
		if req.GetRequestId() == "" {
			req.RequestId = newID()
		}
		id := req.GetRequestId()
		sess.mu.Lock()
		dup := sess.inFlight[id]
		if !dup {
			sess.inFlight[id] = true
		}
		sess.mu.Unlock()
		if dup {
			itemErr(id, codes.InvalidArgument, "request_id is already in flight on this stream")
			return true
		}
		// The transcript so far, as the check's own unless it sent one:
		// later appends go past its length and never change it.
		transcript := sess.transcript[:len(sess.transcript):len(sess.transcript)]
		// Local stages decide here, on the receiving goroutine, in
		// microseconds (their work is bounded per check); only a check
		// they leave to the classifier takes a slot and a worker (and is
		// analysed again there, which costs nothing next to the model's
		// answer). A file system that stalls a system call holds the
		// engine's file-system worker, not this goroutine: the check is
		// answered at the engine's fs_timeout.
		if resp, decided, err := s.decideRecovered(ctx, req, transcript, true); decided || err != nil {
			sess.mu.Lock()
			delete(sess.inFlight, id)
			sess.mu.Unlock()
			hold.release() // before the answer: the client may send more at once
			out <- checkResult(s, id, resp, err)
			return true
		}
		// Waiting here holds back the stream (flow control) rather than
		// queueing without bound. A received check is answered even if the
		// server starts draining meanwhile: slots free up as checks finish.
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			sess.mu.Lock()
			delete(sess.inFlight, id)
			sess.mu.Unlock()
			return false
		}
		s.runCheck(ctx, sess, hold, req, transcript, sem, workers, out)
		hold = streamHold{} // the worker gives it back
	default:
		itemErr("", codes.InvalidArgument, "empty stream message: set session, check or transcript")
	}
	return true
}

// checkWorkers run a stream's checks on goroutines that stay for the
// stream's life: a check's analysis grows its goroutine's stack, and a
// fresh goroutine per check would grow it again every time. A check goes
// to an idle worker, or to a new one while there are fewer than max. Every
// running check holds a slot of the stream's semaphore (max of them), so
// when all max workers exist and none is idle, one has just freed its slot
// and is on its way back for the next job. Only the receive loop calls run.
type checkWorkers struct {
	jobs chan func()
	max  int
	n    int // workers started
	wg   sync.WaitGroup
}

func (w *checkWorkers) run(job func()) {
	select {
	case w.jobs <- job:
		return
	default:
	}
	if w.n == w.max {
		w.jobs <- job
		return
	}
	w.n++
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		job()
		for job := range w.jobs {
			job()
		}
	}()
}

// stop waits for every check to finish; no check may be run after it.
func (w *checkWorkers) stop() {
	close(w.jobs)
	w.wg.Wait()
}

// runCheck runs a check on a worker; hold is the decode budget of the
// stream message it came in, given back when the check is answered.
func (s *Service) runCheck(ctx context.Context, sess *session, hold streamHold, req *pb.CheckRequest, transcript []engine.TranscriptEntry, sem chan struct{}, workers *checkWorkers, out chan<- *pb.CheckStreamResponse) {
	workers.run(func() {
		defer func() { <-sem }()
		id := req.GetRequestId()
		resp, _, err := s.decideRecovered(ctx, req, transcript, false) // panics come back as errors
		sess.mu.Lock()
		delete(sess.inFlight, id)
		sess.mu.Unlock()
		// Let the request go before waiting to send: a client that does
		// not read its answers keeps workers waiting here, and they hold
		// only the answers (the budget counted the request until now).
		hold.release()
		req, transcript = nil, nil
		out <- checkResult(s, id, resp, err)
	})
}

// checkResult is the stream message answering check id.
func checkResult(s *Service, id string, resp *pb.CheckResponse, err error) *pb.CheckStreamResponse {
	m := &pb.CheckStreamResponse{RequestId: id}
	if err != nil {
		st := statusFromError(err)
		s.logItemError(id, st.Code(), st.Message())
		m.Result = &pb.CheckStreamResponse_Error{Error: &pb.CheckError{Code: int32(st.Code()), Message: st.Message()}}
	} else {
		m.Result = &pb.CheckStreamResponse_Response{Response: resp}
	}
	return m
}

// logItemError logs a stream message answered with an error, as the
// access log does for a unary call: a check that got no decision has no
// decision line.
func (s *Service) logItemError(id string, code codes.Code, msg string) {
	s.log.Info("stream item refused", zap.String("request_id", id), zap.Stringer("code", code), zap.String("error", msg))
}

// decideRecovered is decideStages with a panic turned into Internal, as
// the recovery interceptor does for unary calls: a stream's checks run
// apart from the handler's own call, which the interceptor does not cover.
func (s *Service) decideRecovered(ctx context.Context, req *pb.CheckRequest, transcript []engine.TranscriptEntry, localOnly bool) (resp *pb.CheckResponse, decided bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			resp, decided, err = nil, false, recoveryHandler(s.log)(ctx, p)
		}
	}()
	return s.decideStages(ctx, req, transcript, localOnly)
}

// mergeSession fills what a check leaves empty from the session context.
// Rules add up: the session's and the check's both apply.
func (s *Service) mergeSession(sess *session, c *pb.CheckRequest) *pb.CheckRequest {
	sc := sess.ctx
	if sc == nil {
		return c
	}
	req := proto.CloneOf(c)
	{
		if req.SessionId == "" {
			req.SessionId = sc.GetSessionId()
		}
		if req.WorkingDirectory == "" {
			req.WorkingDirectory = sc.GetWorkingDirectory()
		}
		if len(req.AdditionalDirectories) == 0 {
			req.AdditionalDirectories = sc.GetAdditionalDirectories()
		}
		if req.Mode == pb.PermissionMode_PERMISSION_MODE_UNSPECIFIED {
			req.Mode = sc.GetMode()
		}
		if req.Policy == "" {
			req.Policy = sc.GetPolicy()
		}
		// A session nobody attends has nobody to answer any of its
		// checks; a check cannot say otherwise (and unattended can only
		// turn an ask into a deny).
		req.Unattended = req.Unattended || sc.GetUnattended()
		// The session's attestation is of its working directory: a check
		// that names another brings its own, or none.
		if req.Attestation == nil && (c.GetWorkingDirectory() == "" || c.GetWorkingDirectory() == sc.GetWorkingDirectory()) {
			req.Attestation = sc.GetAttestation()
		}
		if r := sc.GetRules(); r != nil {
			req.Rules = &pb.Rules{
				Allow: append(append([]string(nil), r.GetAllow()...), req.GetRules().GetAllow()...),
				Ask:   append(append([]string(nil), r.GetAsk()...), req.GetRules().GetAsk()...),
				Deny:  append(append([]string(nil), r.GetDeny()...), req.GetRules().GetDeny()...),
			}
		}
	}
	return req
}

// holdTranscript counts n more bytes of stream transcript against the
// server-wide limit, or reports false when they would pass it.
func (s *Service) holdTranscript(n int) bool {
	for {
		cur := s.transcriptHeld.Load()
		if cur+int64(n) > int64(s.cfg.MaxHeldTranscriptBytes) {
			return false
		}
		if s.transcriptHeld.CompareAndSwap(cur, cur+int64(n)) {
			return true
		}
	}
}
