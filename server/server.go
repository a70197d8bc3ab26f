package server

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"github.com/toolgate/toolgate/engine"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
	"github.com/toolgate/toolgate/internal/ownfile"
)

// Option adjusts a Server.
type Option func(*options)

type options struct {
	metrics    *Metrics
	tracer     trace.TracerProvider
	grpc       []grpc.ServerOption
	noUpstream bool
	recorder   Recorder
	sink       RecordSink
	approvals  ApprovalQueue
}

// WithoutUpstreamService leaves toolgate.v1.UpstreamService out: for a
// local server, which has an upstream itself. Offered there, it would
// relay any local process's Classify and WatchPolicies to the centre
// with this server's credentials.
func WithoutUpstreamService() Option {
	return func(o *options) { o.noUpstream = true }
}

// WithGRPCOptions adds options to the gRPC server.
func WithGRPCOptions(opts ...grpc.ServerOption) Option {
	return func(o *options) { o.grpc = append(o.grpc, opts...) }
}

// Server is the gRPC server with the permission service, health and,
// optionally, reflection.
type Server struct {
	cfg    Config
	log    *zap.Logger
	grpc   *grpc.Server
	health *health.Server
	svc    *Service
	// upstream serves the local toolgates whose upstream this server is.
	upstream *Upstream

	auditFile *ownfile.Queue           // nil without an audit log
	tracer    *sdktrace.TracerProvider // built from server.tracing; nil otherwise

	stopping atomic.Bool
	budget   *decodeBudget // the codec's

	tokens   *Tokens      // nil without server.token_file
	hookHTTP *http.Server // serves the hook listeners (ServeHook)
	hookTLS  *tls.Config  // nil without server.tls
	// hookSlots holds one token per hook request in flight.
	hookSlots chan struct{}
}

// New builds a server; cfg is validated.
func New(cfg Config, eng *engine.Engine, log *zap.Logger, opts ...Option) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var o options
	for _, f := range opts {
		f(&o)
	}
	rec := recovery.WithRecoveryHandlerContext(recoveryHandler(log))
	// Recovery is innermost so that the access log sees the Internal code
	// a panic turns into; auth sits between, so refusals are logged too.
	codec := newDecodeCodec(&cfg)
	unary := []grpc.UnaryServerInterceptor{accessLogUnary(log), codec.decodeErrorsUnary}
	stream := []grpc.StreamServerInterceptor{accessLogStream(log), codec.decodeErrorsStream}
	if m := o.metrics; m != nil {
		// Outermost: RPCs are counted with the code the client sees.
		unary = append([]grpc.UnaryServerInterceptor{m.grpc.UnaryServerInterceptor()}, unary...)
		stream = append([]grpc.StreamServerInterceptor{m.grpc.StreamServerInterceptor()}, stream...)
	}
	var tokens *Tokens
	if cfg.TokenFile != "" {
		var err error
		if tokens, err = LoadTokens(cfg.TokenFile); err != nil {
			return nil, err
		}
		u, st := authInterceptors(tokens)
		unary, stream = append(unary, u), append(stream, st)
	}
	unary = append(unary, recovery.UnaryServerInterceptor(rec))
	stream = append(stream, recovery.StreamServerInterceptor(rec))
	limits, err := cfg.serverOptions()
	if err != nil {
		return nil, err
	}
	hookHTTP, hookTLS, err := newHookHTTP(cfg, log)
	if err != nil {
		return nil, err
	}
	// The audit file first: it is the one step here that fails on a
	// machine's state, and nothing needs undoing before it.
	var audit *zap.Logger
	var auditFile *ownfile.Queue
	if cfg.Audit.File != "" {
		if audit, auditFile, err = openAudit(cfg.Audit, log, o.metrics.auditFailed); err != nil {
			return nil, err
		}
	}
	var built *sdktrace.TracerProvider
	if o.tracer == nil && cfg.Tracing.OTLPEndpoint != "" {
		if built, err = NewTracerProvider(cfg.Tracing, cfg.Version); err != nil {
			if auditFile != nil {
				_ = auditFile.Close(auditWait)
			}
			return nil, err
		}
		o.tracer = built
	}
	if o.tracer != nil {
		limits = append(limits, tracingOption(o.tracer))
	}
	gopts := append(append([]grpc.ServerOption{
		grpc.ForceServerCodecV2(codec),
		grpc.ChainUnaryInterceptor(unary...),
		grpc.ChainStreamInterceptor(stream...),
	}, limits...), o.grpc...)
	s := &Server{
		cfg:       cfg,
		log:       log,
		grpc:      grpc.NewServer(gopts...),
		health:    health.NewServer(),
		svc:       NewService(cfg, eng, log),
		tracer:    built,
		auditFile: auditFile,
		budget:    codec.budget,
		tokens:    tokens,
		hookHTTP:  hookHTTP,
		hookTLS:   hookTLS,
		hookSlots: make(chan struct{}, cfg.Hook.MaxInFlight),
	}
	hookHTTP.Handler = s.HookHandler()
	s.svc.audit = audit
	s.svc.recorder = o.recorder
	if o.tracer != nil {
		s.svc.tracer = o.tracer.Tracer("github.com/toolgate/toolgate/server")
	}
	pb.RegisterPermissionServiceServer(s.grpc, s.svc)
	if !o.noUpstream {
		// Behind the same interceptors (auth, limits, metrics): local
		// servers are clients like any other.
		s.upstream = &Upstream{svc: s.svc, watchers: make(chan struct{}, maxWatchers), resendEvery: watchResendEvery, sink: o.sink}
		pb.RegisterUpstreamServiceServer(s.grpc, s.upstream)
	}
	if o.approvals != nil {
		// Behind the same interceptors: the auth one admits only
		// approver tokens, and the service checks for one again.
		pb.RegisterApprovalServiceServer(s.grpc, NewApprovalService(o.approvals, log))
	}
	healthpb.RegisterHealthServer(s.grpc, s.health)
	if cfg.Reflection {
		reflection.Register(s.grpc)
	}
	if o.metrics != nil {
		s.svc.metrics = o.metrics
		o.metrics.grpc.InitializeMetrics(s.grpc)
	}
	s.setServing(healthpb.HealthCheckResponse_NOT_SERVING)
	return s, nil
}

func (s *Server) setServing(st healthpb.HealthCheckResponse_ServingStatus) {
	s.health.SetServingStatus("", st)
	s.health.SetServingStatus(pb.PermissionService_ServiceDesc.ServiceName, st)
}

// Serving reports whether the gRPC health service says SERVING for the
// permission service: false before Serve and from Shutdown on. The metrics
// listener's /readyz reads it, so HTTP probes see what gRPC ones would.
func (s *Server) Serving() bool {
	r, err := s.health.Check(context.Background(), &healthpb.HealthCheckRequest{Service: pb.PermissionService_ServiceDesc.ServiceName})
	return err == nil && r.GetStatus() == healthpb.HealthCheckResponse_SERVING
}

// AuditLog returns the audit log, for the other records that belong in
// it (approvers' answers); nil without one.
func (s *Server) AuditLog() *zap.Logger { return s.svc.audit }

// ReopenAudit closes the audit file and opens the one at its path again
// (SIGHUP: an admin's log rotation). Without an audit log it does nothing.
func (s *Server) ReopenAudit() error {
	if s.auditFile == nil {
		return nil
	}
	// Bounded: the writer may be held by a file system that does not
	// answer, and a SIGHUP must not hold the reloads behind it.
	ctx, cancel := context.WithTimeout(context.Background(), auditWait)
	defer cancel()
	return s.auditFile.Reopen(ctx)
}

// Service returns the permission service (to swap its engine).
func (s *Server) Service() *Service { return s.svc }

// Serve marks the server SERVING and serves lis until Shutdown, after
// which it returns nil.
func (s *Server) Serve(lis net.Listener) error {
	s.setServing(healthpb.HealthCheckResponse_SERVING)
	err := s.grpc.Serve(lis)
	if errors.Is(err, grpc.ErrServerStopped) && s.stopping.Load() {
		return nil // Shutdown came first; that is not a failure
	}
	return err
}

// stopGrace is how long Shutdown waits, after its timeout, for cancelled
// calls to return.
const stopGrace = 100 * time.Millisecond

// Shutdown drains: health goes NOT_SERVING, streams stop taking new checks
// and finish the ones they have, GracefulStop waits for calls in flight up
// to ShutdownTimeout (or ctx), and Stop cuts whatever remains; Shutdown
// returns at most stopGrace later, even if a handler has not returned
// (then the tracing flush and the audit log's close are bounded too).
func (s *Server) Shutdown(ctx context.Context) {
	s.stopping.Store(true)
	s.health.Shutdown()
	s.svc.Drain()
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ShutdownTimeout)
	defer cancel()
	done := make(chan struct{})
	go func() {
		hookDone := make(chan struct{})
		go func() { s.shutdownHook(ctx); close(hookDone) }()
		s.grpc.GracefulStop()
		<-hookDone
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		s.log.Warn("graceful stop timed out; closing remaining calls", zap.Stringer("timeout", s.cfg.ShutdownTimeout))
		// Stop cancels every call, but it waits for their handlers, as
		// GracefulStop does: a handler that never returns (a thread held
		// in a system call) would hold Shutdown, and the process, for
		// ever. So it runs apart, and the wait for it is bounded. The
		// process is ending; do not wait long.
		go s.grpc.Stop()
		select {
		case <-done:
		case <-time.After(stopGrace):
			s.log.Warn("calls still running at shutdown; they end with the process")
		}
	}
	// Its own deadline: ctx may be spent on a slow graceful stop.
	flushCtx, cancelFlush := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelFlush()
	if err := ShutdownTracing(flushCtx, s.tracer); err != nil {
		s.log.Warn("tracing", zap.Error(err))
	}
	if s.auditFile != nil {
		// Bounded too: the writer may be held in a system call by a file
		// system that does not answer; what it could not write is counted
		// in toolgate_audit_write_failures_total.
		if err := s.auditFile.Close(auditWait); err != nil {
			s.log.Error("closing the audit log", zap.Error(err))
		}
	}
}
