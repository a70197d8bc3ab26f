package app

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/structpb"

	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

const (
	policyNoRules  = "policies:\n  default: {}\n"
	policyDenyMake = "policies:\n  default:\n    permissions:\n      deny: [\"Bash(make deploy)\"]\n"
	// Valid YAML whose rule does not parse: the reload must be refused.
	policyBadRule = "policies:\n  default:\n    permissions:\n      deny: [\"Bash(make deploy\"]\n"
	// No listener outside the test's own ports.
	localOnly = "server:\n  listen: 127.0.0.1:0\n  metrics_listen: \"\"\n"
)

// writeAtomically replaces path the way editors and config management do:
// a new file renamed over the old one.
func writeAtomically(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond for up to 10s. Not synctest: what it waits for
// comes from file-system events and real sockets, which a bubble's fake
// clock does not wait for.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func loadConfig(t *testing.T, path string) *Config {
	t.Helper()
	cfg, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// logBuffer collects the JSON log lines of an App.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// debugLogger logs JSON lines to w, at debug level.
func debugLogger(w *logBuffer) *zap.Logger {
	return zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(w), zapcore.DebugLevel))
}

// running is an App serving for a test, with a client.
type running struct {
	app    *App
	logs   *logBuffer
	client pb.PermissionServiceClient
	conn   *grpc.ClientConn
	stop   func() error // ends Run and returns its error
}

// start builds cfg's App, logging at debug level, and runs it until the
// test ends (or stop).
func start(t *testing.T, cfg *Config, opts ...Option) *running {
	t.Helper()
	logs := &logBuffer{}
	a, err := New(cfg, append([]Option{WithLogger(debugLogger(logs))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	var once sync.Once
	var runErr error
	stop := func() error {
		once.Do(func() {
			cancel()
			select {
			case runErr = <-done:
			case <-time.After(15 * time.Second):
				t.Error("Run did not return after its context ended")
			}
		})
		return runErr
	}
	conn, err := grpc.NewClient(a.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		if err := stop(); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return &running{app: a, logs: logs, client: pb.NewPermissionServiceClient(conn), conn: conn, stop: stop}
}

// check asks r about one tool call.
func (r *running) check(t *testing.T, ctx context.Context, tool string, input map[string]any, cwd string, mode pb.PermissionMode) *pb.CheckResponse {
	t.Helper()
	in, err := structpb.NewStruct(input)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := r.client.Check(ctx, &pb.CheckRequest{Tool: &pb.ToolCall{Name: tool, Input: in}, WorkingDirectory: cwd, Mode: mode})
	if err != nil {
		t.Fatalf("check %s %v: %v", tool, input, err)
	}
	return resp
}

// configFile writes body as dir/toolgate.yaml, listening on loopback only.
func configFile(t *testing.T, dir, body string) string {
	t.Helper()
	path := filepath.Join(dir, "toolgate.yaml")
	if !strings.Contains(body, "server:") {
		body = localOnly + body
	}
	writeAtomically(t, path, body)
	return path
}
