// Package inproc wires toolgate inside one process the way cmd/toolgate
// serve does (embedded default config, engine, optional classifier, gRPC
// server on a free 127.0.0.1 port), for benchmarks and resilience tests
// that need the whole stack without a subprocess.
package inproc

import (
	"context"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/toolgate/toolgate/classifier"
	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/engine"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
	"github.com/toolgate/toolgate/server"
)

// Options adjust the stack.
type Options struct {
	// Log receives the JSON log lines; nil discards them (the encoding
	// still runs, as in production).
	Log io.Writer
	// ClassifierURL, when set, adds a backend at this OpenAI-compatible
	// base URL, as serve --classifier-url does.
	ClassifierURL string
	// Classifier adjusts the classifier config after the backend is added.
	Classifier func(*classifier.Config)
	// Server adjusts the server config.
	Server func(*server.Config)
	// GRPC are extra gRPC server options (to try tunings).
	GRPC []grpc.ServerOption
}

// Stack is a running toolgate.
type Stack struct {
	Addr       string
	Server     *server.Server
	Classifier *classifier.Classifier // nil without ClassifierURL
	serveErr   chan error
}

// NewLogger is cmd/toolgate's production logger: JSON lines, ISO8601 time,
// info level, writes serialized.
func NewLogger(w io.Writer) *zap.Logger {
	if w == nil {
		w = io.Discard
	}
	encCfg := zap.NewProductionEncoderConfig()
	encCfg.TimeKey = "ts"
	encCfg.EncodeTime = zapcore.ISO8601TimeEncoder
	encCfg.EncodeDuration = zapcore.MillisDurationEncoder
	core := zapcore.NewCore(zapcore.NewJSONEncoder(encCfg), zapcore.Lock(zapcore.AddSync(w)), zapcore.InfoLevel)
	return zap.New(core)
}

// Start builds and serves the stack. Stop it with Stop.
func Start(opts Options) (*Stack, error) {
	cfg, err := config.Default()
	if err != nil {
		return nil, err
	}
	cfg.Server.Listen = "127.0.0.1:0"
	cfg.Server.MetricsListen = ""
	if opts.Server != nil {
		opts.Server(&cfg.Server)
	}
	log := NewLogger(opts.Log)
	// Metrics on, as serve has them: their cost is part of a check's.
	reg := prometheus.NewRegistry()
	smetrics, err := server.NewMetrics(reg)
	if err != nil {
		return nil, err
	}
	cmetrics, err := classifier.NewMetrics(reg)
	if err != nil {
		return nil, err
	}
	ecfg := engine.Config{Policies: cfg.EnginePolicies(), OnClassifierUnavailable: engine.Deny, Home: "/home/agent"}
	st := &Stack{serveErr: make(chan error, 1)}
	if opts.ClassifierURL != "" {
		cfg.Classifier.Backends = []classifier.BackendConfig{{Name: "fake", BaseURL: opts.ClassifierURL, Model: "fake", APIKeyEnv: "TOOLGATE_BENCH_NO_KEY"}}
		if opts.Classifier != nil {
			opts.Classifier(&cfg.Classifier)
		}
		if st.Classifier, err = classifier.New(cfg.Classifier, cfg.ClassifierRules(), log, classifier.WithMetrics(cmetrics)); err != nil {
			return nil, err
		}
		ecfg.Classifier = st.Classifier
	}
	eng, err := engine.New(ecfg)
	if err != nil {
		return nil, err
	}
	if st.Server, err = server.New(cfg.Server, eng, log, server.WithMetrics(smetrics), server.WithGRPCOptions(opts.GRPC...)); err != nil {
		return nil, err
	}
	lis, err := net.Listen("tcp", cfg.Server.Listen)
	if err != nil {
		return nil, err
	}
	st.Addr = lis.Addr().String()
	go func() { st.serveErr <- st.Server.Serve(lis) }()
	return st, nil
}

// Stop shuts the server down gracefully and reports a serving error.
func (s *Stack) Stop() error {
	s.Server.Shutdown(context.Background())
	err := <-s.serveErr
	if s.Classifier != nil {
		if cerr := s.Classifier.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// Dial connects a client to addr without TLS.
func Dial(addr string) (*grpc.ClientConn, pb.PermissionServiceClient, error) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, nil, err
	}
	return conn, pb.NewPermissionServiceClient(conn), nil
}

// WaitReady calls Check until the server answers or the timeout passes.
func WaitReady(ctx context.Context, c pb.PermissionServiceClient, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := c.Check(cctx, &pb.CheckRequest{Tool: &pb.ToolCall{Name: "TodoWrite"}})
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("server not ready after %s: %w", timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
