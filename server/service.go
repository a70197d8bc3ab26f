package server

import (
	"context"
	"crypto/rand"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/toolgate/toolgate/engine"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Service implements toolgate.v1.PermissionService.
type Service struct {
	pb.UnimplementedPermissionServiceServer

	cfg   Config
	log   *zap.Logger
	audit *zap.Logger // nil without an audit log
	// recorder takes a copy of every decision record; nil: none.
	recorder Recorder
	engine   atomic.Pointer[engine.Engine]
	// transcriptHeld is what all open streams' transcripts hold, in
	// retained bytes (retainedSize); bounded by cfg.MaxHeldTranscriptBytes.
	transcriptHeld atomic.Int64

	metrics *Metrics // nil: none
	// tracer records a span per check, under the RPC's; nil: none.
	tracer trace.Tracer

	drainOnce sync.Once
	draining  chan struct{} // closed when the server starts shutting down
}

var _ pb.PermissionServiceServer = (*Service)(nil)

// NewService returns a service deciding with eng. cfg must be valid.
// fieldPool keeps the decision log's field slices: the encoders are done
// with them when Write returns, and a fresh 1.5 KB slice per check was the
// server's largest allocation.
var fieldPool = sync.Pool{New: func() any {
	f := make([]zap.Field, 0, 32)
	return &f
}}

func NewService(cfg Config, eng *engine.Engine, log *zap.Logger) *Service {
	s := &Service{cfg: cfg, log: log, draining: make(chan struct{})}
	s.engine.Store(eng)
	return s
}

// SetEngine swaps the engine atomically; checks in flight finish with the
// engine they started with.
func (s *Service) SetEngine(eng *engine.Engine) { s.engine.Store(eng) }

// Drain tells open streams to stop taking new checks and finish.
func (s *Service) Drain() { s.drainOnce.Do(func() { close(s.draining) }) }

// newID returns a random, URL-safe, unique id.
func newID() string { return rand.Text() }

// Check decides one tool call.
func (s *Service) Check(ctx context.Context, req *pb.CheckRequest) (*pb.CheckResponse, error) {
	resp, err := s.decide(ctx, req, nil)
	if err != nil {
		return nil, statusFromError(err).Err()
	}
	return resp, nil
}

// decide validates, runs the engine, maps the answer and logs the decision.
// The request_id is filled in on req when empty so callers can echo it.
// transcript is the stream's, used when the check sends none of its own.
func (s *Service) decide(ctx context.Context, req *pb.CheckRequest, transcript []engine.TranscriptEntry) (*pb.CheckResponse, error) {
	resp, _, err := s.decideStages(ctx, req, transcript, false)
	return resp, err
}

// decideStages is decide; with localOnly, a check no local stage decides
// is left undecided (decided false, nothing logged), for the caller to
// send to decide.
func (s *Service) decideStages(ctx context.Context, req *pb.CheckRequest, transcript []engine.TranscriptEntry, localOnly bool) (_ *pb.CheckResponse, decided bool, _ error) {
	start := time.Now()
	if req.GetRequestId() == "" {
		req.RequestId = newID()
	}
	ereq, err := s.toEngine(req)
	if err != nil {
		return nil, false, err
	}
	if len(ereq.Transcript) == 0 {
		ereq.Transcript = transcript
	}
	ereq.Files = s.filesOf(ctx, req)
	res, decided, err := s.check(ctx, ereq, localOnly)
	if err != nil || !decided {
		return nil, false, err
	}
	latency := time.Since(start)
	decisionID := newID()
	resp, err := toProto(req.GetRequestId(), decisionID, res, latency.Microseconds())
	if err != nil {
		return nil, false, err
	}
	resp.PolicyVersion = res.PolicyVersion
	s.metrics.decided(res, latency)
	s.record(req, resp, res, start)
	ce := s.log.Check(zap.InfoLevel, "decision")
	if ce == nil && s.audit == nil {
		return resp, true, nil // fields are work; nobody would read them
	}
	// No tool input, transcript or reason text here: they may hold secrets.
	fp := fieldPool.Get().(*[]zap.Field)
	defer func() {
		// Drop the strings they point at, the audit fields appended past
		// the length included.
		clear((*fp)[:cap(*fp)])
		*fp = (*fp)[:0]
		fieldPool.Put(fp)
	}()
	fields := append((*fp)[:0],
		zap.String("decision_id", decisionID),
		zap.String("request_id", req.GetRequestId()),
		zap.String("session_id", req.GetSessionId()),
		zap.String("tool", req.GetTool().GetName()),
		zap.String("tool_kind", string(res.Kind)),
		zap.String("policy", res.Policy),
		zap.String("policy_version", res.PolicyVersion),
		zap.Stringer("mode", ereq.Mode),
		zap.Stringer("decision", res.Decision),
		zap.Stringer("source", res.Source),
		zap.String("matched_rule", res.MatchedRule),
		zap.Int64("latency_us", latency.Microseconds()),
	)
	if client := ClientFromContext(ctx); client != "" {
		fields = append(fields, zap.String("client", client))
	}
	if res.FilesUnseen != "" {
		fields = append(fields, zap.String("files_unseen", res.FilesUnseen))
	}
	fields = appendClassifierFields(fields, res.Classifier)
	if ce != nil {
		ce.Write(fields...)
	}
	if s.audit != nil {
		s.audit.Info("decision", append(fields, auditFields(req, resp)...)...)
	}
	*fp = fields
	return resp, true, nil
}

// checkSpanName is the span of one check, the engine's stages and the
// classifier's calls under it.
const checkSpanName = "toolgate.check"

// check runs the engine (its local stages only, with localOnly), in a span
// when tracing is on: the decision, the stage that decided and the kind of
// tool, never the input or the reason (they may hold secrets). A check its
// local stages leave undecided gets no span here: decide makes it one.
func (s *Service) check(ctx context.Context, req *engine.Request, localOnly bool) (engine.Result, bool, error) {
	eng := s.engine.Load()
	if localOnly {
		start := time.Now()
		res, decided, err := eng.CheckLocal(ctx, req)
		if s.tracer != nil && (decided || err != nil) {
			// Made after the fact: a local decision calls nothing that
			// would need the span as its parent.
			_, span := s.tracer.Start(ctx, checkSpanName, trace.WithTimestamp(start))
			endCheckSpan(span, res, err)
		}
		return res, decided, err
	}
	if s.tracer == nil {
		res, err := eng.Check(ctx, req)
		return res, err == nil, err
	}
	ctx, span := s.tracer.Start(ctx, checkSpanName)
	res, err := eng.Check(ctx, req)
	endCheckSpan(span, res, err)
	return res, err == nil, err
}

func endCheckSpan(span trace.Span, res engine.Result, err error) {
	defer span.End()
	if err != nil {
		span.SetStatus(codes.Error, "no decision")
		return
	}
	attrs := []attribute.KeyValue{
		attribute.String("toolgate.decision", res.Decision.String()),
		attribute.String("toolgate.source", res.Source.String()),
		attribute.String("toolgate.tool_kind", string(res.Kind)),
		attribute.String("toolgate.policy", res.Policy),
	}
	if c := res.Classifier; c != nil {
		attrs = append(attrs, attribute.String("toolgate.classifier.stage", c.Stage), attribute.Bool("toolgate.classifier.cached", c.Cached),
			attribute.String("toolgate.classifier.category", c.Category))
	}
	span.SetAttributes(attrs...)
}

// appendClassifierFields adds what a decision's side-query cost, when the
// classifier was asked.
func appendClassifierFields(fields []zap.Field, c *engine.ClassifierDetails) []zap.Field {
	if c == nil {
		return fields
	}
	return append(fields,
		zap.String("classifier_backend", c.Backend),
		zap.String("classifier_model", c.Model),
		zap.String("classifier_stage", c.Stage),
		zap.Int64("classifier_latency_us", c.LatencyMicro),
		zap.Int64("classifier_input_tokens", c.InputTokens),
		zap.Int64("classifier_cached_input_tokens", c.CachedInputTokens),
		zap.Int64("classifier_output_tokens", c.OutputTokens),
		zap.Bool("classifier_cached", c.Cached),
		zap.String("classifier_category", c.Category),
		zap.String("classifier_category_kind", c.CategoryKind),
	)
}
