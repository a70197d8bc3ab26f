package server

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/toolgate/toolgate/engine"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// Caps on what a local server adds to a check it forwards: its notes are
// built from the check (paths, names), and all reach the classifier's
// prompt.
const (
	maxNotes           = 64
	maxNoteBytes       = 4096
	maxNotesTotalBytes = 16 << 10
)

// maxWatchers caps the policy watches open at once, server-wide: each
// holds a stream and a goroutine. Past it, WatchPolicies is refused
// (RESOURCE_EXHAUSTED) and the local server retries with backoff.
const maxWatchers = 4096

// watchResendEvery is how often a watch with no new set is sent the set
// in force again: it keeps proxies (Envoy's stream idle timeout, a load
// balancer's) from cutting a quiet stream, and the local server counts it
// as the centre's confirmation (the age of its policy). A local server
// ignores a set it has.
const watchResendEvery = time.Minute

// Upstream implements toolgate.v1.UpstreamService: the centre's side of
// the local servers' link. It classifies with the engine's classifier,
// whose keys, pool, cache and budgets stay here, and it serves the policy
// set in force.
type Upstream struct {
	pb.UnimplementedUpstreamServiceServer
	svc  *Service
	feed policyFeed
	// watchers holds one token per open watch (maxWatchers).
	watchers    chan struct{}
	resendEvery time.Duration
	// sink stores shipped decision records; nil without a store.
	sink RecordSink
}

// policyFeed is the policy set in force, and a channel closed (and
// replaced) at each change, which wakes every watcher: each sends the
// newest set, however many changes it slept through.
type policyFeed struct {
	mu      sync.Mutex
	set     *pb.PolicySet
	changed chan struct{}
}

func (f *policyFeed) publish(set *pb.PolicySet) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.set != nil && f.set.GetVersion() == set.GetVersion() {
		return
	}
	f.set = set
	if f.changed != nil {
		close(f.changed)
	}
	f.changed = make(chan struct{})
}

func (f *policyFeed) current() (*pb.PolicySet, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.changed == nil {
		f.changed = make(chan struct{})
	}
	return f.set, f.changed
}

// PublishPolicies makes doc, the policies' served form, with its version,
// the set the watching local servers are sent: at once, and to every
// one that connects later.
func (s *Server) PublishPolicies(version string, doc []byte) {
	if s.upstream == nil {
		return // a local server serves no policies
	}
	s.upstream.feed.publish(&pb.PolicySet{Version: version, Document: doc})
}

// WatchPolicies sends the set in force, then each new one, until the
// client goes or the server shuts down (the client reconnects).
func (u *Upstream) WatchPolicies(req *pb.WatchPoliciesRequest, stream grpc.ServerStreamingServer[pb.WatchPoliciesResponse]) error {
	ctx := stream.Context()
	select {
	case u.watchers <- struct{}{}:
		defer func() { <-u.watchers }()
	default:
		return status.Errorf(codes.ResourceExhausted, "this server has %d policy watches open, its limit", cap(u.watchers))
	}
	u.svc.log.Debug("policy watcher connected", zap.String("client", ClientFromContext(ctx)), zap.String("known_version", validUTF8(quoteCut(req.GetKnownVersion()))))
	var sent string
	resend := time.NewTicker(u.resendEvery)
	defer resend.Stop()
	for {
		set, changed := u.feed.current()
		if set != nil && set.GetVersion() != sent {
			if err := stream.Send(&pb.WatchPoliciesResponse{PolicySet: set}); err != nil {
				return err
			}
			sent = set.GetVersion()
		}
		select {
		case <-resend.C:
			sent = "" // the set in force again
		case <-changed:
		case <-ctx.Done():
			return statusFromError(ctx.Err()).Err()
		case <-u.svc.draining:
			return nil
		}
	}
}

var _ pb.UpstreamServiceServer = (*Upstream)(nil)

// errNoDecision is an engine result without a decision, a bug: refused
// rather than sent as UNSPECIFIED.
var errNoDecision = errors.New("engine returned no decision")

// Classify decides a call a local server's stages left open, as the last
// stage of a check here would, and records it in the audit log. The
// session's block counters are the local server's: the classifier is
// given no session id.
func (u *Upstream) Classify(ctx context.Context, req *pb.ClassifyRequest) (*pb.ClassifyResponse, error) {
	resp, err := u.classify(ctx, req)
	if err != nil {
		return nil, statusFromError(err).Err()
	}
	return resp, nil
}

func (u *Upstream) classify(ctx context.Context, req *pb.ClassifyRequest) (*pb.ClassifyResponse, error) {
	start := time.Now()
	s := u.svc
	check := req.GetCheck()
	if check == nil {
		return nil, invalid("check is required")
	}
	if len(req.GetToolKind()) > maxIDBytes || len(req.GetPolicy()) > maxIDBytes || len(req.GetPolicyVersion()) > maxIDBytes {
		return nil, invalid("tool_kind, policy and policy_version are limited to %d bytes", maxIDBytes)
	}
	if n := len(req.GetNotes()); n > maxNotes {
		return nil, invalid("notes has %d entries, over the limit of %d", n, maxNotes)
	}
	total := 0
	for i, n := range req.GetNotes() {
		if len(n) > maxNoteBytes {
			return nil, invalid("notes[%d] is %d bytes, over the limit of %d", i, len(n), maxNoteBytes)
		}
		if total += len(n); total > maxNotesTotalBytes {
			return nil, invalid("notes are over %d bytes in all", maxNotesTotalBytes)
		}
	}
	ereq, err := s.toEngine(check)
	if err != nil {
		return nil, err
	}
	ereq.SessionID = ""
	policy := req.GetPolicy()
	if policy == "" {
		policy = check.GetPolicy()
	}
	res, err := s.engine.Load().Classify(ctx, &engine.ClassifyInput{
		Request: ereq, Kind: engine.Kind(req.GetToolKind()), Policy: policy, Notes: req.GetNotes(), PolicyVersion: req.GetPolicyVersion(),
	})
	if err != nil {
		return nil, err
	}
	d, ok := decisionToProto[res.Decision]
	if !ok {
		return nil, errNoDecision
	}
	out := &pb.ClassifyResponse{Decision: d, Reason: validUTF8(res.Reason), Source: sourceToProto[res.Source], Classifier: classifierToProto(res.Classifier)}
	s.logClassification(ctx, req, res, time.Since(start))
	return out, nil
}

// logClassification logs an upstream classification like a decision, and
// records it in the audit log with what the local server sent.
func (s *Service) logClassification(ctx context.Context, req *pb.ClassifyRequest, res engine.Result, latency time.Duration) {
	ce := s.log.Check(zap.InfoLevel, "upstream classification")
	if ce == nil && s.audit == nil {
		return
	}
	check := req.GetCheck()
	fields := []zap.Field{
		zap.String("decision_id", newID()),
		zap.String("request_id", check.GetRequestId()),
		zap.String("session_id", check.GetSessionId()),
		zap.String("tool", check.GetTool().GetName()),
		zap.String("tool_kind", string(res.Kind)),
		zap.String("policy", res.Policy),
		zap.String("policy_version", req.GetPolicyVersion()),
		zap.Stringer("decision", res.Decision),
		zap.Stringer("source", res.Source),
		zap.Int64("latency_us", latency.Microseconds()),
	}
	if client := ClientFromContext(ctx); client != "" {
		fields = append(fields, zap.String("client", client))
	}
	fields = appendClassifierFields(fields, res.Classifier)
	if ce != nil {
		ce.Write(fields...)
	}
	if s.audit != nil {
		s.audit.Info("upstream classification", append(fields, auditFields(check, &pb.CheckResponse{Reason: res.Reason})...)...)
	}
}
