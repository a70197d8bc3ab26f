// Package inproc serves toolgate inside the calling process, through app
// as toolgate serve does (the embedded default config, engine, optional
// classifier, gRPC server on a free 127.0.0.1 port, metrics recorded but
// not served), for benchmarks and resilience tests that need the whole
// stack without a subprocess.
package inproc

import (
	"context"
	"fmt"
	"io"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/toolgate/toolgate/app"
	"github.com/toolgate/toolgate/classifier"
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
	Classifier *classifier.Classifier // nil without ClassifierURL
	stop       context.CancelFunc
	done       chan error
}

// Start builds and serves the stack. Stop it with Stop.
func Start(opts Options) (*Stack, error) {
	cfg, err := app.LoadConfig("")
	if err != nil {
		return nil, err
	}
	w := opts.Log
	if w == nil {
		w = io.Discard
	}
	log, err := app.NewLogger("info", w)
	if err != nil {
		return nil, err
	}
	a, err := app.New(cfg, app.WithLogger(log), app.WithServerOptions(server.WithGRPCOptions(opts.GRPC...)),
		app.WithOverrides(func(c *app.Config) error {
			c.Server.Listen = "127.0.0.1:0"
			c.Server.MetricsListen = ""
			if opts.Server != nil {
				opts.Server(&c.Server)
			}
			if opts.ClassifierURL != "" {
				c.Classifier.Backends = []classifier.BackendConfig{{Name: "fake", BaseURL: opts.ClassifierURL, Model: "fake", APIKeyEnv: "TOOLGATE_BENCH_NO_KEY"}}
				if opts.Classifier != nil {
					opts.Classifier(&c.Classifier)
				}
			}
			return nil
		}))
	if err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(context.Background())
	st := &Stack{Addr: a.Addr().String(), Classifier: a.Classifier(), stop: stop, done: make(chan error, 1)}
	go func() { st.done <- a.Run(ctx) }()
	return st, nil
}

// Stop shuts the server down gracefully and reports a serving error.
func (s *Stack) Stop() error {
	s.stop()
	return <-s.done
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
