package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/toolgate/toolgate/app"
	"github.com/toolgate/toolgate/bench/inproc"
	"github.com/toolgate/toolgate/bench/workload"
	"github.com/toolgate/toolgate/classifier"
	"github.com/toolgate/toolgate/engine"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// Server kinds a target runs against.
const (
	serverBare       = "bare"          // bench/bareserver
	serverToolgate   = "toolgate"      // toolgate serve, embedded default policy
	serverClassifier = "toolgate+fake" // toolgate serve --classifier-url pointing at cmd/fakellm
	serverTraced     = "toolgate+otel" // toolgate serve --config with server.tracing on, exporting to otlpSink
	serverInproc     = "inproc"        // loadrun serve-inproc, with a CPU profile
)

type targetSpec struct {
	id, title string
	server    string
	load      load
	validate  func(ctx context.Context, addr string) error
}

// targetResult is what one target measured.
type targetResult struct {
	ID, Title, Server, Method string
	Concurrency, StreamCount  int
	Count                     uint64
	RPS                       float64
	P50, P90, P99, Slowest    time.Duration
	Errors                    uint64
	ErrorSummary              string
	PeakRSSKB                 int64
	ServerCPU                 time.Duration  // the server's CPU time during the measured run
	Decisions                 map[string]int // "allow/safe_tool" -> count, from toolgate's log
	// For the classifier targets: medians of toolgate's own latency for
	// checks the model decided, of the backend call within it, and of the
	// fake answering a plain HTTP client.
	DecisionP50, BackendP50, FakeDirectP50 time.Duration
	Metrics                                string // what the metrics endpoint said, if any
	// For the traced target: what the OTLP sink received, the flush at
	// shutdown included.
	TraceExports, TraceBytes, TraceSpans int64
	// For the in-process targets: their CPU profile's split.
	CPUSplit *cpuSplit
}

// checksPerSecond counts checks, not calls: a CheckStream call carries
// StreamCount checks.
func (r *targetResult) checksPerSecond() float64 {
	if r.StreamCount > 0 {
		return r.RPS * float64(r.StreamCount)
	}
	return r.RPS
}

// cpuPerCheck is the server's CPU time per check during the measured
// run, the cost that decides throughput once the server's CPUs are busy.
func (r *targetResult) cpuPerCheck() time.Duration {
	n := float64(r.Count)
	if r.StreamCount > 0 {
		n *= float64(r.StreamCount)
	}
	if n == 0 {
		return 0
	}
	return time.Duration(float64(r.ServerCPU) / n)
}

// poolShape is the classifier pool serve --classifier-url builds: the
// defaults, read from the classifier package so the harness follows them.
func poolShape() (size int, queue time.Duration) {
	cfg := classifier.DefaultConfig()
	cfg.Backends = []classifier.BackendConfig{{BaseURL: "http://127.0.0.1:1/v1", Model: "m"}}
	cfg.WithBackendDefaults()
	return cfg.Backends[0].MaxConcurrent, cfg.QueueTimeout
}

// writeData writes the ghz call data of the local mix, for unary calls and
// for streams.
func (h *harness) writeData(project string) (local, stream string, err error) {
	mo := protojson.MarshalOptions{UseProtoNames: true}
	var unary, streamed []json.RawMessage
	for _, c := range workload.Local(project) {
		b, err := mo.Marshal(c.Req)
		if err != nil {
			return "", "", err
		}
		unary = append(unary, b)
		s, err := mo.Marshal(&pb.CheckStreamRequest{Kind: &pb.CheckStreamRequest_Check{Check: c.Req}})
		if err != nil {
			return "", "", err
		}
		streamed = append(streamed, s)
	}
	write := func(name string, v any) (string, error) {
		b, err := json.Marshal(v)
		if err != nil {
			return "", err
		}
		p := filepath.Join(h.work, name)
		return p, os.WriteFile(p, b, 0o644)
	}
	if local, err = write("local.json", unary); err != nil {
		return "", "", err
	}
	stream, err = write("stream.json", streamed)
	return local, stream, err
}

// classifiedData is ghz call data reaching the classifier, different for
// each run; with local, the local mix comes first and the classified call
// is one in len(mix)+1.
func classifiedData(project string, local bool) func(run string) ([]byte, error) {
	return func(run string) ([]byte, error) {
		mo := protojson.MarshalOptions{UseProtoNames: true}
		var calls []json.RawMessage
		if local {
			for _, c := range workload.Local(project) {
				b, err := mo.Marshal(c.Req)
				if err != nil {
					return nil, err
				}
				calls = append(calls, b)
			}
		}
		b, err := mo.Marshal(workload.ClassifiedTemplate(project, run))
		if err != nil {
			return nil, err
		}
		return json.Marshal(append(calls, b))
	}
}

// loadTargets runs every target in turn.
func (h *harness) loadTargets(ctx context.Context) ([]*targetResult, error) {
	project, err := workload.NewProject(h.work)
	if err != nil {
		return nil, err
	}
	local, stream, err := h.writeData(project)
	if err != nil {
		return nil, err
	}
	pool, _ := poolShape()
	validLocal := func(ctx context.Context, addr string) error { return validateLocal(ctx, addr, project) }
	validCls := func(ctx context.Context, addr string) error { return validateClassified(ctx, addr, project) }
	unary := load{method: "Check", data: local, concurrency: h.concurrency, duration: h.duration}
	streams := load{method: "CheckStream", data: stream, concurrency: h.concurrency, duration: h.duration, streamCount: h.streamCount}
	light := unary
	light.concurrency = 4
	clsLight := load{method: "Check", dataFor: classifiedData(project, false), concurrency: max(1, pool/2), duration: h.duration}
	clsOver := clsLight
	clsOver.concurrency = h.concurrency

	var specs []targetSpec
	if h.profileDir != "" {
		specs = []targetSpec{
			{"inproc-unary", "toolgate in process, unary Check, local mix", serverInproc, unary, validLocal},
			{"inproc-stream", "toolgate in process, CheckStream, local mix", serverInproc, streams, validLocal},
		}
	} else {
		specs = []targetSpec{
			{"bare-unary", "bare server, unary Check (the limit)", serverBare, unary, nil},
			{"toolgate-unary", "toolgate, unary Check, local mix", serverToolgate, unary, validLocal},
			{"toolgate-unary-traced", fmt.Sprintf("toolgate, unary Check, local mix, tracing on (%.0f%% sampled, OTLP/HTTP to a local sink)", traceSampleRatio*100), serverTraced, unary, validLocal},
			{"bare-stream", "bare server, CheckStream (the limit)", serverBare, streams, nil},
			{"toolgate-stream", "toolgate, CheckStream, local mix", serverToolgate, streams, validLocal},
			{"bare-unary-light", "bare server, unary Check, 4 callers", serverBare, light, nil},
			{"toolgate-unary-light", "toolgate, unary Check, local mix, 4 callers", serverToolgate, light, validLocal},
			{"classifier-unsaturated", fmt.Sprintf("toolgate, calls reaching the classifier, %d callers (pool of %d)", clsLight.concurrency, pool), serverClassifier, clsLight, validCls},
			{"classifier-overload", fmt.Sprintf("toolgate, calls reaching the classifier, %d callers (%.0f× the pool of %d)", clsOver.concurrency, float64(clsOver.concurrency)/float64(pool), pool), serverClassifier, clsOver, validCls},
			// For "Where a check's CPU goes": the same loads as
			// toolgate-unary and toolgate-stream, profiled.
			{"profile-unary", "toolgate in process with a CPU profile, unary Check, local mix (for the CPU split)", serverInproc, unary, validLocal},
			{"profile-stream", "toolgate in process with a CPU profile, CheckStream, local mix (for the CPU split)", serverInproc, streams, validLocal},
		}
	}
	var out []*targetResult
	for _, s := range specs {
		logf("target %s: %s", s.id, s.title)
		r, err := h.runTarget(ctx, s)
		if err != nil {
			return nil, fmt.Errorf("target %s: %w", s.id, err)
		}
		logf("target %s: %.0f calls/s, p50 %s, p99 %s, %d errors, peak RSS %d MB", s.id, r.RPS, r.P50, r.P99, r.Errors, r.PeakRSSKB>>10)
		out = append(out, r)
	}
	return out, nil
}

// server is one running server under test, with what it needs.
type server struct {
	main        *proc
	helpers     []*proc // the fake model
	addr        string
	metricsAddr string
	fakeURL     string // the fake model's base URL, for the classifier targets
	sink        *otlpSink
}

func (s *server) stop() error {
	err := s.main.stop(20 * time.Second)
	for _, p := range s.helpers {
		_ = p.stop(10 * time.Second)
	}
	if s.sink != nil {
		s.sink.close()
	}
	return err
}

func (h *harness) startServer(ctx context.Context, s targetSpec) (*server, error) {
	srv := &server{}
	var err error
	switch s.server {
	case serverBare:
		cmd := h.pin.command(ctx, h.pin.server, h.bins.bare, "--listen", "127.0.0.1:0")
		if srv.main, err = startProc(cmd, s.id, h.work); err != nil {
			return nil, err
		}
		srv.addr, err = srv.main.waitLine(10*time.Second, firstLine)
	case serverToolgate, serverClassifier, serverTraced:
		if srv.metricsAddr, err = freeAddr(); err != nil {
			return nil, err
		}
		args := []string{"serve", "--listen", "127.0.0.1:0", "--metrics-listen", srv.metricsAddr}
		if s.server == serverTraced {
			if srv.sink, err = startOTLPSink(); err != nil {
				return nil, err
			}
			cfg := filepath.Join(h.work, s.id+".yaml")
			if err := writeTracedConfig(cfg, srv.sink.url); err != nil {
				_ = srv.stop()
				return nil, err
			}
			// Without --config nothing is watched; only tracing differs.
			args = append(args, "--config", cfg, "--watch=false")
		}
		if s.server == serverClassifier {
			fake := h.pin.command(ctx, h.pin.load, h.bins.fakellm, "--listen", "127.0.0.1:0", "--latency", h.latency.String(), "--seed", "1")
			fp, err := startProc(fake, s.id+"-fakellm", h.work)
			if err != nil {
				return nil, err
			}
			srv.helpers = append(srv.helpers, fp)
			url, err := fp.waitLine(10*time.Second, firstLine)
			if err != nil {
				_ = srv.stop()
				return nil, err
			}
			args = append(args, "--classifier-url", url, "--classifier-model", "fake")
			srv.fakeURL = url
		}
		cmd := h.pin.command(ctx, h.pin.server, h.bins.toolgate, args...)
		cmd.Env = append(cmd.Env, "OPENAI_API_KEY=sk-loadrun")
		if srv.main, err = startProc(cmd, s.id, h.work); err != nil {
			_ = srv.stop()
			return nil, err
		}
		srv.addr, err = srv.main.waitLine(10*time.Second, servingAddr)
	case serverInproc:
		if err := os.MkdirAll(h.profiles, 0o755); err != nil {
			return nil, err
		}
		cmd := h.pin.command(ctx, h.pin.server, h.bins.self, "serve-inproc",
			"-cpuprofile", h.cpuProfile(s.id),
			"-heapprofile", filepath.Join(h.profiles, s.id+".heap.pprof"),
			"-stream-workers", fmt.Sprint(h.workers))
		if srv.main, err = startProc(cmd, s.id, h.work); err != nil {
			return nil, err
		}
		srv.addr, err = srv.main.waitLine(10*time.Second, servingAddr)
	default:
		return nil, fmt.Errorf("unknown server %q", s.server)
	}
	if err == nil {
		err = waitServing(ctx, srv.addr, 10*time.Second)
	}
	if err != nil {
		_ = srv.stop()
		return nil, err
	}
	return srv, nil
}

func (h *harness) runTarget(ctx context.Context, s targetSpec) (_ *targetResult, err error) {
	srv, err := h.startServer(ctx, s)
	if err != nil {
		return nil, err
	}
	defer func() {
		if serr := srv.stop(); serr != nil && err == nil {
			err = fmt.Errorf("stopping %s: %w", s.server, serr)
		}
	}()
	if s.validate != nil {
		if err := s.validate(ctx, srv.addr); err != nil {
			return nil, fmt.Errorf("the server does not decide the workload as expected, so its figures would measure something else: %w", err)
		}
	}
	if h.warmup > 0 {
		w := s.load
		w.duration = h.warmup
		if _, err := h.runGhz(ctx, srv.addr, w, s.id+"-warmup"); err != nil {
			return nil, err
		}
	}
	cpu0, err := cpuTime(srv.main.pid())
	if err != nil {
		return nil, err
	}
	rep, err := h.runGhz(ctx, srv.addr, s.load, s.id)
	if err != nil {
		return nil, err
	}
	cpu1, err := cpuTime(srv.main.pid())
	if err != nil {
		return nil, err
	}
	r := &targetResult{
		ID: s.id, Title: s.title, Server: s.server, Method: s.load.method,
		Concurrency: s.load.concurrency, StreamCount: s.load.streamCount,
		Count: rep.Count, RPS: rep.RPS, Slowest: rep.Slowest,
		Errors: rep.errors(), ErrorSummary: rep.errorSummary(),
		ServerCPU: cpu1 - cpu0,
	}
	r.P50, _ = rep.percentile(50)
	r.P90, _ = rep.percentile(90)
	r.P99, _ = rep.percentile(99)
	if r.PeakRSSKB, _, err = memStatus(srv.main.pid()); err != nil {
		return nil, err
	}
	if srv.metricsAddr != "" {
		r.Metrics = scrapeMetrics(ctx, srv.metricsAddr)
	}
	if srv.fakeURL != "" {
		if r.FakeDirectP50, err = fakeDirect(ctx, srv.fakeURL, 40); err != nil {
			return nil, err
		}
	}
	if s.server != serverBare {
		// Stopped first so that its log is complete.
		if err := srv.main.stop(20 * time.Second); err != nil {
			return nil, err
		}
		dl, err := countDecisions(srv.main.stdout)
		if err != nil {
			return nil, err
		}
		r.Decisions, r.DecisionP50, r.BackendP50 = dl.counts, median(dl.latencyUS), median(dl.classifierUS)
	}
	if srv.sink != nil {
		if r.TraceExports, r.TraceBytes, r.TraceSpans, err = srv.sink.counts(); err != nil {
			return nil, err
		}
		if r.TraceSpans == 0 {
			return nil, fmt.Errorf("tracing was on but the OTLP sink received no spans (%d export requests); see %s", r.TraceExports, srv.main.stdout)
		}
	}
	if s.server == serverInproc {
		// Written when the process stopped, above.
		if r.CPUSplit, err = splitProfileFile(h.cpuProfile(s.id)); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// cpuProfile is where serve-inproc writes the target's CPU profile.
func (h *harness) cpuProfile(id string) string {
	return filepath.Join(h.profiles, id+".cpu.pprof")
}

// scrapeMetrics describes the metrics endpoint after a run: the figures are
// taken with metrics on whenever toolgate serves them.
func scrapeMetrics(ctx context.Context, addr string) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return "off"
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "off (no /metrics listener)"
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Sprintf("off (/metrics answered %s)", resp.Status)
	}
	n := 0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if l := sc.Text(); l != "" && !strings.HasPrefix(l, "#") {
			n++
		}
	}
	return fmt.Sprintf("on (%d samples on /metrics after the run)", n)
}

// decisionLog is what toolgate's decision log lines say about a run.
type decisionLog struct {
	counts map[string]int // "allow/safe_tool" -> count
	// For decisions by the model: toolgate's own latency for the check
	// and, within it, the backend call's (microseconds).
	latencyUS, classifierUS []int64
}

// countDecisions reads toolgate's decision log lines: proof that the load
// exercised the paths it claims to, and where a classified check's time
// went.
func countDecisions(logPath string) (*decisionLog, error) {
	f, err := os.Open(logPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return countDecisionLines(f)
}

func countDecisionLines(r io.Reader) (*decisionLog, error) {
	out := &decisionLog{counts: map[string]int{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !strings.Contains(string(line), `"msg":"decision"`) {
			continue
		}
		var l struct {
			Msg          string `json:"msg"`
			Decision     string `json:"decision"`
			Source       string `json:"source"`
			LatencyUS    int64  `json:"latency_us"`
			ClassifierUS *int64 `json:"classifier_latency_us"`
		}
		if err := json.Unmarshal(line, &l); err != nil {
			return nil, fmt.Errorf("decision log line: %w", err)
		}
		if l.Msg != "decision" {
			continue
		}
		out.counts[l.Decision+"/"+l.Source]++
		if l.Source == "classifier" && l.ClassifierUS != nil {
			out.latencyUS = append(out.latencyUS, l.LatencyUS)
			out.classifierUS = append(out.classifierUS, *l.ClassifierUS)
		}
	}
	return out, sc.Err()
}

// median of microsecond samples, as a duration; 0 without samples.
func median(us []int64) time.Duration {
	if len(us) == 0 {
		return 0
	}
	s := slices.Clone(us)
	slices.Sort(s)
	return time.Duration(s[len(s)/2]) * time.Microsecond
}

// fakeDirect times n calls made straight to the fake model with a request
// like toolgate's (the default policy's system prompt and a short user
// message): the fake's latency as any client sees it, HTTP included. Its
// median is what the classifier path is compared with.
func fakeDirect(ctx context.Context, baseURL string, n int) (time.Duration, error) {
	cfg, err := app.LoadConfig("")
	if err != nil {
		return 0, err
	}
	p := classifier.BuildPrompt(cfg.ClassifierRules()[engine.DefaultPolicy],
		&engine.Request{Tool: engine.ToolCall{Name: "Bash", Input: map[string]any{"command": "npm install left-pad"}}, WorkingDirectory: "/work/app"},
		engine.KindShell, nil, classifier.DefaultPromptOptions())
	body, err := json.Marshal(map[string]any{
		"model": "fake",
		"messages": []map[string]string{
			{"role": "system", "content": p.System},
			{"role": "user", "content": p.User},
		},
	})
	if err != nil {
		return 0, err
	}
	var us []int64
	client := &http.Client{Timeout: 10 * time.Second}
	for range n {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, baseURL+"/chat/completions", strings.NewReader(string(body)))
		if err != nil {
			return 0, err
		}
		req.Header.Set("Content-Type", "application/json")
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("fake model answered %s, %v", resp.Status, err)
		}
		us = append(us, time.Since(start).Microseconds())
	}
	return median(us), nil
}

// validateLocal checks that toolgate decides every call of the local mix
// the way the mix says (unary and on a stream): a misconfigured run would
// otherwise measure, say, fast ASK answers.
func validateLocal(ctx context.Context, addr, project string) error {
	conn, client, err := inproc.Dial(addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	mix := workload.Local(project)
	for _, c := range mix {
		resp, err := client.Check(ctx, c.Req)
		if err != nil {
			return fmt.Errorf("%s: %w", c.Name, err)
		}
		if resp.GetDecision() != c.Want || resp.GetSource() != c.Source {
			return fmt.Errorf("%s: %v by %v (%s), want %v by %v", c.Name, resp.GetDecision(), resp.GetSource(), resp.GetReason(), c.Want, c.Source)
		}
	}
	stream, err := client.CheckStream(ctx)
	if err != nil {
		return err
	}
	for i, c := range mix {
		req := proto.CloneOf(c.Req)
		req.RequestId = fmt.Sprintf("validate-%d", i)
		if err := stream.Send(&pb.CheckStreamRequest{Kind: &pb.CheckStreamRequest_Check{Check: req}}); err != nil {
			return err
		}
	}
	if err := stream.CloseSend(); err != nil {
		return err
	}
	for range mix {
		m, err := stream.Recv()
		if err != nil {
			return fmt.Errorf("stream: %w", err)
		}
		var i int
		if _, err := fmt.Sscanf(m.GetRequestId(), "validate-%d", &i); err != nil || i < 0 || i >= len(mix) {
			return fmt.Errorf("stream: answer for unknown request %q", m.GetRequestId())
		}
		if got := m.GetResponse(); got.GetDecision() != mix[i].Want || got.GetSource() != mix[i].Source {
			return fmt.Errorf("stream %s: %v by %v (%v), want %v by %v", mix[i].Name, got.GetDecision(), got.GetSource(), m.GetError(), mix[i].Want, mix[i].Source)
		}
	}
	if _, err := stream.Recv(); err != io.EOF {
		return fmt.Errorf("stream: ended with %v, want EOF", err)
	}
	return nil
}

// validateClassified checks that the classified call reaches the model.
func validateClassified(ctx context.Context, addr, project string) error {
	conn, client, err := inproc.Dial(addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	c := workload.Classified(project, -1)
	resp, err := client.Check(ctx, c.Req)
	if err != nil {
		return err
	}
	if resp.GetDecision() != c.Want || resp.GetSource() != c.Source {
		return fmt.Errorf("%s: %v by %v (%s), want %v by %v", c.Name, resp.GetDecision(), resp.GetSource(), resp.GetReason(), c.Want, c.Source)
	}
	return nil
}
