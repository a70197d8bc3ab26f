package server

import (
	"context"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/toolgate/toolgate/engine"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fakeClassifier answers calls that reach the classifier stage. A call can
// be held until the test releases it, to force out-of-order answers.
type fakeClassifier struct {
	mu        sync.Mutex
	gates     map[string]chan struct{}
	started   chan string // request ids as they reach the classifier
	active    int
	maxActive int
	seen      []*engine.ClassifyInput
}

func newFakeClassifier() *fakeClassifier {
	return &fakeClassifier{gates: map[string]chan struct{}{}, started: make(chan string, 100)}
}

// hold makes the call with this request id wait until release.
func (f *fakeClassifier) hold(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gates[id] = make(chan struct{})
}

func (f *fakeClassifier) release(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	close(f.gates[id])
}

func (f *fakeClassifier) Classify(ctx context.Context, in *engine.ClassifyInput) (engine.Verdict, error) {
	f.mu.Lock()
	f.active++
	f.maxActive = max(f.maxActive, f.active)
	f.seen = append(f.seen, in)
	gate := f.gates[in.Request.RequestID]
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.active--
		f.mu.Unlock()
	}()
	f.started <- in.Request.RequestID
	if in.Request.Tool.Name == "mcp__test__panic" {
		panic("classifier exploded")
	}
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return engine.Verdict{}, ctx.Err()
		}
	}
	if in.Request.Tool.Name == "mcp__test__danger" {
		return engine.Verdict{Decision: engine.Deny, Reason: "fake says no"}, nil
	}
	return engine.Verdict{Decision: engine.Allow, Reason: "fake says yes"}, nil
}

func (f *fakeClassifier) maxConcurrent() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.maxActive
}

func (f *fakeClassifier) inputs() []*engine.ClassifyInput {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*engine.ClassifyInput(nil), f.seen...)
}

type testEnv struct {
	srv    *Server
	conn   *grpc.ClientConn
	client pb.PermissionServiceClient
	served chan error
	once   sync.Once
}

// stop shuts the server down and closes the client; safe to call twice.
func (e *testEnv) stop(t *testing.T) {
	e.once.Do(func() {
		e.srv.Shutdown(context.Background())
		if err := <-e.served; err != nil {
			t.Errorf("Serve: %v", err)
		}
		_ = e.conn.Close()
	})
}

type envOption func(*Config, *engine.Config, **zap.Logger)

func withClassifier(c engine.Classifier) envOption {
	return func(_ *Config, ec *engine.Config, _ **zap.Logger) { ec.Classifier = c }
}

func withConfig(f func(*Config)) envOption {
	return func(c *Config, _ *engine.Config, _ **zap.Logger) { f(c) }
}

func withPolicies(p map[string]engine.PolicySpec) envOption {
	return func(_ *Config, ec *engine.Config, _ **zap.Logger) { ec.Policies = p }
}

func withLogger(l *zap.Logger) envOption {
	return func(_ *Config, _ *engine.Config, lp **zap.Logger) { *lp = l }
}

// newEnv serves toolgate over an in-memory connection.
func newEnv(t *testing.T, opts ...envOption) *testEnv {
	t.Helper()
	cfg := DefaultConfig()
	cfg.ShutdownTimeout = 5 * time.Second
	var ecfg engine.Config
	log := zap.NewNop()
	for _, o := range opts {
		o(&cfg, &ecfg, &log)
	}
	eng, err := engine.New(ecfg)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(cfg, eng, log)
	if err != nil {
		t.Fatal(err)
	}
	return serveEnv(t, srv)
}

// serveEnv serves srv over an in-memory connection, whose client is in
// this process and so on this machine: it counts as a local peer, as a
// Unix-socket client does.
func serveEnv(t *testing.T, srv *Server) *testEnv { return serveOver(t, srv, true) }

// serveOver serves srv over an in-memory connection; with local false its
// client does not say it is on this machine, as one across a network.
func serveOver(t *testing.T, srv *Server, local bool) *testEnv {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	env := &testEnv{srv: srv, served: make(chan error, 1)}
	var served net.Listener = lis
	if local {
		served = inProcess{lis}
	}
	go func() { env.served <- srv.Serve(served) }()
	var err error
	env.conn, err = grpc.NewClient("passthrough:///bufconn",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	env.client = pb.NewPermissionServiceClient(env.conn)
	t.Cleanup(func() { env.stop(t) })
	return env
}

func mustStruct(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// checkReq is a check from a project that exists on this machine: a
// peer's check whose working directory the server cannot see proves
// nothing from the disk.
func checkReq(t *testing.T, id, tool string, input map[string]any) *pb.CheckRequest {
	return &pb.CheckRequest{RequestId: id, Tool: &pb.ToolCall{Name: tool, Input: mustStruct(t, input)}, WorkingDirectory: os.TempDir()}
}

func (f *fakeClassifier) activeCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.active
}

// inProcess is a listener whose connections say they come from a Unix
// socket: an in-memory client is on the server's machine.
type inProcess struct{ net.Listener }

func (l inProcess) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return inProcessConn{c}, nil
}

type inProcessConn struct{ net.Conn }

func (inProcessConn) RemoteAddr() net.Addr { return &net.UnixAddr{Name: "@in-process", Net: "unix"} }
