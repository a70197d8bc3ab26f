package resilience

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/toolgate/toolgate/bench/inproc"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// Bounds the hostile-input tests hold a real toolgate serve to.
const (
	// answerDeadline is every hostile check's client deadline: an answer
	// (a decision or an error status) must come before it. A second or
	// two, with room for a loaded machine under -race: the slowest answer
	// measured is a classifier attempt's 1 s timeout.
	answerDeadline = 3 * time.Second
	// peakRSSBound is the most resident memory (VmHWM) a toolgate serve
	// process may have reached by the end of a hostile run: half the
	// Kubernetes manifest's 512Mi limit (docs/operations.md, "Security and limits").
	peakRSSBound = 256 << 20
	// hostileShutdown is server.shutdown_timeout in the hostile configs;
	// exitMargin is how much later than it the process may exit after
	// SIGTERM (the machine is shared and noisy).
	hostileShutdown = 2 * time.Second
	exitMargin      = 3 * time.Second
)

// The toolgate binary is built once per test binary run, into a directory
// TestMain removes.
var toolgateBin struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// sharedToolgate builds cmd/toolgate on first use and returns its path.
func sharedToolgate(t *testing.T) string {
	t.Helper()
	toolgateBin.once.Do(func() {
		root, err := filepath.Abs("..")
		if err != nil {
			toolgateBin.err = err
			return
		}
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
			toolgateBin.err = fmt.Errorf("module root not found above the package: %w", err)
			return
		}
		if toolgateBin.dir, err = os.MkdirTemp("", "toolgate-resilience-"); err != nil {
			toolgateBin.err = err
			return
		}
		bin := filepath.Join(toolgateBin.dir, "toolgate")
		cmd := exec.Command("go", "build", "-o", bin, "./cmd/toolgate")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			toolgateBin.err = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		toolgateBin.path = bin
	})
	if toolgateBin.err != nil {
		t.Fatal(toolgateBin.err)
	}
	return toolgateBin.path
}

// removeSharedToolgate removes the built binary; TestMain calls it.
func removeSharedToolgate() {
	if toolgateBin.dir != "" {
		_ = os.RemoveAll(toolgateBin.dir)
	}
}

// hostileYAML is a config for a hostile run: a free loopback port, a short
// shutdown timeout, then extra (classifier and policies sections, which
// must define policies.default).
func hostileYAML(extra string) string {
	return fmt.Sprintf("server:\n  listen: 127.0.0.1:0\n  shutdown_timeout: %s\n%s", hostileShutdown, extra)
}

// denyDeployPolicy is a default policy that denies make deploy by rule.
const denyDeployPolicy = `policies:
  default:
    permissions:
      deny:
        - Bash(make deploy)
`

// target is a toolgate serve process under hostile input, with a client.
type target struct {
	*served
	t      *testing.T
	dir    string // the config's directory
	cfg    string // the config file
	conn   *grpc.ClientConn
	client pb.PermissionServiceClient
	health grpc_health_v1.HealthClient

	done    chan struct{} // closed when the process has exited
	exitErr error         // how it exited, once done is closed

	mu       sync.Mutex
	lastHWM  int64 // the highest VmHWM read
	caseHWM  int64 // the highest VmHWM read since resetPeak
	killedAt int64 // the VmHWM at which the watchdog killed it, or 0
}

// rssKillAt is where the watchdog kills a server: the Kubernetes
// manifest's memory limit, where the kernel would kill it in a pod. Past
// the bound under test already, it keeps a runaway case from taking the
// shared machine's memory (and stalling every other test on it).
const rssKillAt = 512 << 20

// startTarget writes cfgYAML into a fresh directory and runs toolgate serve
// on it (metrics off, plus args), and waits until it answers.
func startTarget(t *testing.T, cfgYAML string, args ...string) *target {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "toolgate.yaml")
	if err := os.WriteFile(cfg, []byte(cfgYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	return startTargetAt(t, cfg, args...)
}

// startTargetAt runs toolgate serve on the config file cfg.
func startTargetAt(t *testing.T, cfg string, args ...string) *target {
	t.Helper()
	srv := startServe(t, sharedToolgate(t), append([]string{"--config", cfg, "--metrics-listen", "off"}, args...)...)
	conn, client, err := inproc.Dial(srv.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	g := &target{served: srv, t: t, dir: filepath.Dir(cfg), cfg: cfg, conn: conn, client: client, health: grpc_health_v1.NewHealthClient(conn),
		done: make(chan struct{})}
	go func() {
		g.exitErr = <-srv.exited
		close(g.done)
	}()
	go g.watchdog()
	// Before startServe's cleanup: the process is waited for here, so
	// that cleanup never races with the goroutine that waits.
	t.Cleanup(g.kill)
	if err := inproc.WaitReady(t.Context(), client, 10*time.Second); err != nil {
		t.Fatalf("%v\n%s", err, srv.log())
	}
	return g
}

func (g *target) pid() int { return g.cmd.Process.Pid }

// alive reports whether the process has not exited.
func (g *target) alive() bool {
	select {
	case <-g.done:
		return false
	default:
		return true
	}
}

// watchdog follows the process's peak RSS and kills it past rssKillAt.
func (g *target) watchdog() {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-g.done:
			return
		case <-tick.C:
		}
		hwm, err := procStatusBytes(g.pid(), "VmHWM")
		if err != nil {
			continue // exiting
		}
		g.mu.Lock()
		g.lastHWM = max(g.lastHWM, hwm)
		g.caseHWM = max(g.caseHWM, hwm)
		kill := hwm > rssKillAt && g.killedAt == 0
		if kill {
			g.killedAt = hwm
		}
		g.mu.Unlock()
		if kill {
			_ = g.cmd.Process.Kill()
		}
	}
}

// killedByWatchdog is the peak RSS at which the watchdog killed the
// process, or 0.
func (g *target) killedByWatchdog() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.killedAt
}

// peakRSS is the process's VmHWM in bytes, read from /proc, or the
// highest read before once the process is gone.
func (g *target) peakRSS() (int64, error) {
	hwm, err := procStatusBytes(g.pid(), "VmHWM")
	g.mu.Lock()
	defer g.mu.Unlock()
	if err != nil {
		if g.lastHWM > 0 {
			return g.lastHWM, nil
		}
		return 0, err
	}
	g.lastHWM = max(g.lastHWM, hwm)
	g.caseHWM = max(g.caseHWM, hwm)
	return g.lastHWM, nil
}

// resetPeak starts a new peak RSS for casePeak (writing 5 to clear_refs
// resets VmHWM to the current RSS) and returns the current RSS.
func (g *target) resetPeak() (int64, error) {
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", g.pid()), []byte("5"), 0); err != nil {
		return 0, err
	}
	rss, err := procStatusBytes(g.pid(), "VmRSS")
	g.mu.Lock()
	g.caseHWM = 0
	g.mu.Unlock()
	return rss, err
}

// casePeak is the peak RSS since resetPeak.
func (g *target) casePeak() int64 {
	_, _ = g.peakRSS()
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.caseHWM
}

func procStatusBytes(pid int, field string) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(data)) {
		rest, ok := strings.CutPrefix(line, field+":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("/proc/%d/status: %q", pid, line)
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		return kb << 10, err
	}
	return 0, fmt.Errorf("/proc/%d/status has no %s", pid, field)
}

// checkRSS fails the test when the process's peak RSS is past the bound,
// and returns it.
func (g *target) checkRSS(what string) int64 {
	g.t.Helper()
	rss, err := g.peakRSS()
	if err != nil {
		g.t.Errorf("%s: peak RSS: %v", what, err)
		return 0
	}
	if rss > peakRSSBound {
		g.t.Errorf("%s: peak RSS of toolgate serve %d MiB, over the bound of %d MiB", what, rss>>20, peakRSSBound>>20)
	}
	return rss
}

// terminate sends SIGTERM and returns how long the process took to exit;
// it fails the test past shutdown_timeout plus the margin.
func (g *target) terminate() time.Duration {
	g.t.Helper()
	start := time.Now()
	if err := g.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		g.t.Fatalf("SIGTERM: %v", err)
	}
	limit := hostileShutdown + exitMargin
	select {
	case <-g.done:
		took := time.Since(start)
		if rss := g.killedByWatchdog(); rss > 0 {
			g.t.Errorf("toolgate serve was still running %s after SIGTERM when its RSS reached %d MiB and it was killed", took.Round(time.Millisecond), rss>>20)
			return took
		}
		if g.exitErr != nil {
			g.t.Errorf("toolgate serve exited with %v after SIGTERM, want 0\n%s", g.exitErr, tail(g.log(), 40))
		}
		if took > limit {
			g.t.Errorf("toolgate serve took %s to exit after SIGTERM; shutdown_timeout is %s (margin %s)", took.Round(time.Millisecond), hostileShutdown, exitMargin)
		}
		return took
	case <-time.After(limit + 10*time.Second):
		_ = g.cmd.Process.Kill()
		g.t.Fatalf("toolgate serve still running %s after SIGTERM (shutdown_timeout %s)\n%s", limit+10*time.Second, hostileShutdown, tail(g.log(), 40))
		return 0
	}
}

// kill ends the process at once (a target that failed a case).
func (g *target) kill() {
	if g.alive() {
		_ = g.cmd.Process.Kill()
	}
	<-g.done
}

// outcome is one hostile check's answer.
type outcome struct {
	resp *pb.CheckResponse
	err  error
	took time.Duration
}

func (o outcome) String() string {
	if o.err != nil {
		return fmt.Sprintf("error %v after %s", o.err, o.took.Round(time.Millisecond))
	}
	return fmt.Sprintf("%v by %v (%s) after %s", o.resp.GetDecision(), o.resp.GetSource(), cut(o.resp.GetReason(), 200), o.took.Round(time.Millisecond))
}

// check sends one unary check with the answer deadline.
func (g *target) check(req *pb.CheckRequest) outcome {
	ctx, cancel := context.WithTimeout(context.Background(), answerDeadline)
	defer cancel()
	start := time.Now()
	resp, err := g.client.Check(ctx, req)
	return outcome{resp, err, time.Since(start)}
}

// hostileProblem says what is wrong with a hostile check's outcome, or ""
// when it is acceptable: an answer in time that is not ALLOW, either a
// decision or an error status other than those of a hang or a dropped
// connection.
func hostileProblem(o outcome) string {
	if o.err != nil {
		switch c := status.Code(o.err); c {
		case codes.DeadlineExceeded, codes.Canceled:
			return fmt.Sprintf("no answer within %s: %v", answerDeadline, o.err)
		case codes.Unavailable, codes.Unknown:
			return fmt.Sprintf("the connection failed (the server crashed or dropped it?): %v", o.err)
		default:
			return ""
		}
	}
	switch o.resp.GetDecision() {
	case pb.Decision_DECISION_ALLOW:
		return "ALLOW by " + o.resp.GetSource().String() + ": " + cut(o.resp.GetReason(), 200)
	case pb.Decision_DECISION_UNSPECIFIED:
		return fmt.Sprintf("a response without a decision: %v", o.resp)
	}
	return ""
}

// harmless checks that the server still serves: a read of a project file
// is allowed and health is SERVING.
func (g *target) harmless(project string) error {
	ctx, cancel := context.WithTimeout(context.Background(), answerDeadline)
	defer cancel()
	resp, err := g.client.Check(ctx, shellReq(project, "Read", map[string]any{"file_path": filepath.Join(project, "main.go")}))
	if err != nil {
		return fmt.Errorf("a plain Read: %w", err)
	}
	if resp.GetDecision() != pb.Decision_DECISION_ALLOW {
		return fmt.Errorf("a plain Read: %v by %v (%s), want ALLOW", resp.GetDecision(), resp.GetSource(), resp.GetReason())
	}
	h, err := g.health.Check(ctx, &grpc_health_v1.HealthCheckRequest{})
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	if h.GetStatus() != grpc_health_v1.HealthCheckResponse_SERVING {
		return fmt.Errorf("health: %v, want SERVING", h.GetStatus())
	}
	return nil
}

// logLines are the process's JSON log lines whose msg starts with msg,
// decoded.
func (g *target) logLines(msg string) []map[string]any {
	var out []map[string]any
	for line := range strings.Lines(g.log()) {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil {
			continue
		}
		if s, ok := m["msg"].(string); ok && strings.HasPrefix(s, msg) {
			out = append(out, m)
		}
	}
	return out
}

// waitLog waits until the log has more than n lines with msg (a prefix)
// whose field
// trigger is trigger ("" for any), and returns the newest.
func (g *target) waitLog(msg, trigger string, n int, timeout time.Duration) (map[string]any, error) {
	deadline := time.Now().Add(timeout)
	for {
		var seen []map[string]any
		for _, m := range g.logLines(msg) {
			if trigger == "" || m["trigger"] == trigger {
				seen = append(seen, m)
			}
		}
		if len(seen) > n {
			return seen[len(seen)-1], nil
		}
		if !g.alive() {
			return nil, fmt.Errorf("toolgate serve exited while waiting for %q (%s)", msg, trigger)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no new %q line (trigger %q) within %s", msg, trigger, timeout)
		}
		// Not synctest: the log is another process's; poll it.
		time.Sleep(20 * time.Millisecond)
	}
}

// countLog counts the lines with msg and trigger.
func (g *target) countLog(msg, trigger string) int {
	n := 0
	for _, m := range g.logLines(msg) {
		if trigger == "" || m["trigger"] == trigger {
			n++
		}
	}
	return n
}

func shellReq(project, tool string, in map[string]any) *pb.CheckRequest {
	s, err := structpb.NewStruct(in)
	if err != nil {
		panic(err)
	}
	return &pb.CheckRequest{Tool: &pb.ToolCall{Name: tool, Input: s}, WorkingDirectory: project}
}

func bash(project, command string) *pb.CheckRequest {
	return shellReq(project, "Bash", map[string]any{"command": command})
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// tail is the last n lines of s, each cut to a readable length.
func tail(s string, n int) string {
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	var lines []string
	for sc.Scan() {
		lines = append(lines, cut(sc.Text(), 2000))
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// rawCodec sends bytes as they are, so that a test can send what no
// protobuf library would encode (as server/codec_test.go does).
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(*v.(*[]byte))}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	*v.(*[]byte) = data.Materialize()
	return nil
}

func (rawCodec) Name() string { return "proto" }

func wireField(num protowire.Number, b []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), b)
}

// rawCheck is a CheckRequest "id" calling Bash with input {"a": value},
// value being an encoded google.protobuf.Value.
func rawCheck(value []byte) []byte {
	entry := append(wireField(1, []byte("a")), wireField(2, value)...)
	tool := append(wireField(1, []byte("Bash")), wireField(2, wireField(1, entry))...)
	return append(wireField(1, []byte("id")), wireField(3, tool)...)
}

// nestWire wraps base in depth levels, each the bytes wrap gives for an
// inner value of innerLen bytes (which follows them): linear in depth.
func nestWire(depth int, base []byte, wrap func(innerLen int) []byte) []byte {
	headers := make([][]byte, depth)
	n := len(base)
	for i := range headers {
		headers[i] = wrap(n)
		n += len(headers[i])
	}
	out := make([]byte, 0, n)
	for i := depth - 1; i >= 0; i-- {
		out = append(out, headers[i]...)
	}
	return append(out, base...)
}

// header is a length-delimited field's tag and length.
func header(num protowire.Number, n int) []byte {
	return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.BytesType), uint64(n))
}

// nestedLists is a Value holding list values depth deep.
func nestedLists(depth int) []byte {
	return nestWire(depth, wireField(3, []byte("x")), func(inner int) []byte {
		values := header(1, inner)                             // ListValue.values
		return append(header(6, len(values)+inner), values...) // Value.list_value
	})
}

// nestedStructs is a Value holding struct values depth deep.
func nestedStructs(depth int) []byte {
	return nestWire(depth, wireField(3, []byte("x")), func(inner int) []byte {
		entry := append(wireField(1, []byte("k")), header(2, inner)...) // key, value
		fields := header(1, len(entry)+inner)                           // Struct.fields
		return append(append(header(5, len(fields)+len(entry)+inner), fields...), entry...)
	})
}
