package resilience

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/toolgate/toolgate/bench/inproc"
	"github.com/toolgate/toolgate/bench/workload"
	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/fakellm"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// hangMarker in a command makes the fake model hang on it.
const hangMarker = "hang-forever"

// TestShutdownUnderLoad sends SIGTERM to a real toolgate serve process
// while unary calls and streams are in flight, some waiting on the model
// and some on a model that never answers. Every call must end with a
// decision or a clear error (UNAVAILABLE), never hang or vanish; checks
// the model was answering when the signal came must complete; a stream
// that leaves checks unanswered must end with an error, not a clean end;
// and the process must exit soon after its shutdown timeout.
func TestShutdownUnderLoad(t *testing.T) {
	const shutdownTimeout = 2 * time.Second
	bin := buildToolgate(t)
	f := startFake(t, func(r *fakellm.Request) fakellm.Reply {
		if strings.Contains(r.User, hangMarker) {
			return fakellm.Reply{Fault: fakellm.FaultHang}
		}
		return fakellm.Reply{Reason: "fine"}
	}, 300*time.Millisecond)
	dir := project(t)

	cfgYAML := bytes.Replace(config.DefaultYAML(), []byte("shutdown_timeout: 10s"), []byte("shutdown_timeout: "+shutdownTimeout.String()), 1)
	if bytes.Equal(cfgYAML, config.DefaultYAML()) {
		t.Fatal("the default config has no shutdown_timeout: 10s line to change; update this test")
	}
	cfgPath := filepath.Join(t.TempDir(), "toolgate.yaml")
	if err := os.WriteFile(cfgPath, cfgYAML, 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startServe(t, bin, "--config", cfgPath, "--watch=false", "--listen", "127.0.0.1:0", "--metrics-listen", "off",
		"--classifier-url", f.url, "--classifier-model", "fake")
	conn, client, err := inproc.Dial(srv.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := inproc.WaitReady(t.Context(), client, 10*time.Second); err != nil {
		t.Fatal(err)
	}

	var sigterm atomic.Int64 // UnixNano of the signal; 0 before
	type unary struct {
		sentBefore, endedAfter bool
		classified             bool
		resp                   *pb.CheckResponse
		err                    error
	}
	var (
		mu      sync.Mutex
		unaries []unary
		n       atomic.Int64
	)
	call := func(req *pb.CheckRequest, classified bool) error {
		before := sigterm.Load() == 0
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		resp, err := client.Check(ctx, req)
		mu.Lock()
		unaries = append(unaries, unary{before, sigterm.Load() != 0, classified, resp, err})
		mu.Unlock()
		return err
	}
	var wg sync.WaitGroup
	local := workload.Local(dir)
	for w := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				req, cls := local[(w+i)%len(local)].Req, i%2 == 1
				if cls {
					req = workload.Classified(dir, int(n.Add(1))).Req
				}
				if call(req, cls) != nil {
					return // the server is gone: every later call would fail alike
				}
			}
		})
	}
	for i := range 2 {
		wg.Go(func() {
			in, err := structpb.NewStruct(map[string]any{"command": fmt.Sprintf("npm install %s-%d", hangMarker, i)})
			if err != nil {
				panic(err)
			}
			_ = call(&pb.CheckRequest{Tool: &pb.ToolCall{Name: "Bash", Input: in}, WorkingDirectory: dir}, true)
		})
	}
	streams := make([]*streamLog, 4)
	for s := range streams {
		streams[s] = &streamLog{answered: map[string]int{}}
		wg.Go(func() { streams[s].run(client, dir, local, s, &n) })
	}

	// SIGTERM once the model has calls in flight and streams have answers.
	deadline := time.Now().Add(30 * time.Second)
	for f.inFlight() < 4 || !allAnswered(streams, 5) {
		if time.Now().After(deadline) {
			t.Fatalf("load never built up: %d model calls in flight", f.inFlight())
		}
		// Not synctest: a real process over real sockets; poll the condition.
		time.Sleep(10 * time.Millisecond)
	}
	sigterm.Store(time.Now().UnixNano())
	signalled := time.Now()
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// Exit: soon after the shutdown timeout, which the hanging calls use up.
	limit := shutdownTimeout + 10*time.Second
	select {
	case err := <-srv.exited:
		if err != nil {
			t.Errorf("toolgate serve exited with %v after SIGTERM, want 0\n%s", err, srv.log())
		}
	case <-time.After(limit):
		_ = srv.cmd.Process.Kill()
		t.Fatalf("toolgate serve still running %s after SIGTERM (shutdown_timeout %s)\n%s", limit, shutdownTimeout, srv.log())
	}
	t.Logf("exited %s after SIGTERM", time.Since(signalled).Round(time.Millisecond))
	wg.Wait()

	completedInDrain, byModelInDrain := 0, 0
	for _, u := range unaries {
		switch {
		case u.err != nil:
			if st, _ := status.FromError(u.err); st.Code() != codes.Unavailable {
				t.Errorf("a call ended with %v; want a decision or UNAVAILABLE", u.err)
			}
			if !u.endedAfter {
				t.Errorf("a call failed before SIGTERM: %v", u.err)
			}
		case u.resp.GetDecision() == pb.Decision_DECISION_UNSPECIFIED:
			t.Errorf("a call got a response without a decision: %v", u.resp)
		case u.sentBefore && u.endedAfter:
			completedInDrain++
			if u.resp.GetSource() == pb.DecisionSource_DECISION_SOURCE_CLASSIFIER {
				byModelInDrain++
			}
		}
	}
	if completedInDrain == 0 {
		t.Error("no call in flight at SIGTERM completed; draining should let them finish")
	}
	for s, l := range streams {
		if err := l.check(); err != nil {
			t.Errorf("stream %d: %v", s, err)
		}
		t.Logf("stream %d: %d checks sent, %d answered, ended with %v", s, len(l.sent), len(l.answered), l.end)
	}
	for _, want := range []string{`"msg":"shutting down"`, `"msg":"stopped"`} {
		if !strings.Contains(srv.log(), want) {
			t.Errorf("the log lacks %s:\n%s", want, srv.log())
		}
	}
	t.Logf("%d unary calls, %d completed during the drain (%d decided by the model)", len(unaries), completedInDrain, byModelInDrain)
}

// streamLog records what one stream sent and got.
type streamLog struct {
	mu       sync.Mutex
	sent     []string
	answered map[string]int
	end      error // how the stream ended: nil for a clean end
}

func (l *streamLog) run(client pb.PermissionServiceClient, dir string, local []workload.Call, s int, n *atomic.Int64) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stream, err := client.CheckStream(ctx)
	if err != nil {
		l.mu.Lock()
		l.end = err
		l.mu.Unlock()
		return
	}
	// At most 8 checks unanswered at a time, so that what was sent is
	// what the server has, or is about to read.
	window := make(chan struct{}, 8)
	go func() {
		for i := 0; ; i++ {
			select {
			case window <- struct{}{}:
			case <-ctx.Done():
				return
			}
			req := local[i%len(local)].Req
			if i%4 == 3 {
				req = workload.Classified(dir, int(n.Add(1))).Req
			}
			id := fmt.Sprintf("s%d-%d", s, i)
			req = cloneWithID(req, id)
			// Recorded before sending: a check the server may have read
			// must be accounted for.
			l.mu.Lock()
			l.sent = append(l.sent, id)
			l.mu.Unlock()
			if err := stream.Send(&pb.CheckStreamRequest{Kind: &pb.CheckStreamRequest_Check{Check: req}}); err != nil {
				// Not sent after all (the stream is over).
				l.mu.Lock()
				l.sent = l.sent[:len(l.sent)-1]
				l.mu.Unlock()
				return
			}
		}
	}()
	for {
		m, err := stream.Recv()
		l.mu.Lock()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				l.end = err
			}
			l.mu.Unlock()
			return
		}
		l.answered[m.GetRequestId()]++
		l.mu.Unlock()
		<-window
	}
}

func (l *streamLog) answers() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.answered)
}

func allAnswered(ls []*streamLog, n int) bool {
	for _, l := range ls {
		if l.answers() < n {
			return false
		}
	}
	return true
}

// check: answers only for checks sent, each once; and checks left
// unanswered only with an error that says the stream ended.
func (l *streamLog) check() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	sent := map[string]bool{}
	for _, id := range l.sent {
		sent[id] = true
	}
	for id, c := range l.answered {
		if !sent[id] {
			return fmt.Errorf("answer for %q, never sent", id)
		}
		if c != 1 {
			return fmt.Errorf("%s answered %d times", id, c)
		}
	}
	missing := len(sent) - len(l.answered)
	if missing == 0 {
		return nil
	}
	if l.end == nil {
		return fmt.Errorf("%d checks unanswered, yet the stream ended cleanly: they were dropped silently", missing)
	}
	if st, _ := status.FromError(l.end); st.Code() != codes.Unavailable {
		return fmt.Errorf("%d checks unanswered, and the stream ended with %v; want UNAVAILABLE", missing, l.end)
	}
	return nil
}

// served is a toolgate serve process.
type served struct {
	cmd    *exec.Cmd
	addr   string
	exited chan error

	mu    sync.Mutex
	lines []string
}

func (s *served) log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.lines, "\n")
}

// startServe runs toolgate serve and waits for its address.
func startServe(t *testing.T, bin string, args ...string) *served {
	t.Helper()
	return startServeEnv(t, bin, append(os.Environ(), "OPENAI_API_KEY=sk-resilience"), args...)
}

// startServeEnv is startServe in the environment env.
func startServeEnv(t *testing.T, bin string, env []string, args ...string) *served {
	t.Helper()
	s := &served{exited: make(chan error, 1)}
	s.cmd = exec.Command(bin, append([]string{"serve"}, args...)...)
	s.cmd.Env = env
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s.cmd.Stderr = s.cmd.Stdout
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.lines = append(s.lines, line)
			s.mu.Unlock()
			var l struct{ Msg, Addr string }
			if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "serving" {
				addr <- l.Addr
			}
		}
	}()
	go func() {
		<-scanned // all output read before Wait closes the pipe
		s.exited <- s.cmd.Wait()
	}()
	t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			_ = s.cmd.Process.Kill()
		}
	})
	select {
	case s.addr = <-addr:
	case err := <-s.exited:
		t.Fatalf("toolgate serve exited before serving: %v\n%s", err, s.log())
	case <-time.After(30 * time.Second):
		t.Fatalf("toolgate serve did not start\n%s", s.log())
	}
	return s
}

// buildToolgate returns the toolgate binary, built once per test run.
func buildToolgate(t *testing.T) string {
	t.Helper()
	return sharedToolgate(t)
}
