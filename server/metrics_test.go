package server

import (
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/toolgate/toolgate/engine"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// newMetricsEnv serves toolgate with metrics on reg over an in-memory
// connection; the classifier answers what reaches it.
func newMetricsEnv(t *testing.T, reg *prometheus.Registry) (*testEnv, *Metrics) {
	t.Helper()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.ShutdownTimeout = 5 * time.Second
	eng, err := engine.New(engine.Config{Classifier: newFakeClassifier()})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(cfg, eng, zap.NewNop(), WithMetrics(m))
	if err != nil {
		t.Fatal(err)
	}
	lis := bufconn.Listen(1 << 20)
	env := &testEnv{srv: srv, served: make(chan error, 1)}
	go func() { env.served <- srv.Serve(inProcess{lis}) }()
	env.conn, err = grpc.NewClient("passthrough:///bufconn",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	env.client = pb.NewPermissionServiceClient(env.conn)
	t.Cleanup(func() { env.stop(t) })
	return env, m
}

// findSeries returns the series of the family name with exactly these labels.
func findSeries(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) *dto.Metric {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, l := range m.GetLabel() {
				if v, ok := labels[l.GetName()]; !ok || v != l.GetValue() {
					continue next
				}
			}
			return m
		}
	}
	return nil
}

func handled(t *testing.T, reg *prometheus.Registry, typ, method, code string) float64 {
	t.Helper()
	m := findSeries(t, reg, "grpc_server_handled_total", map[string]string{
		"grpc_type": typ, "grpc_service": pb.PermissionService_ServiceDesc.ServiceName, "grpc_method": method, "grpc_code": code,
	})
	if m == nil {
		t.Fatalf("no grpc_server_handled_total series for %s %s %s", typ, method, code)
	}
	return m.GetCounter().GetValue()
}

func TestMetricsCountDecisionsAndRPCs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		env, m := newMetricsEnv(t, reg)
		check := func(req *pb.CheckRequest) {
			t.Helper()
			req.SessionId = "session-secret-42"
			if _, err := env.client.Check(t.Context(), req); err != nil {
				t.Fatal(err)
			}
		}
		check(checkReq(t, "r1", "Read", map[string]any{"file_path": "/usr/include/stdio.h"}))
		check(checkReq(t, "r2", "read_file", map[string]any{"absolute_path": "/usr/include/y.h"}))
		check(checkReq(t, "s1", "Bash", map[string]any{"command": "echo ok"})) // reads nothing, so needs no working directory
		check(checkReq(t, "c1", "mcp__test__danger", map[string]any{"x": 1}))
		// A bad request is an RPC error, not a decision.
		if _, err := env.client.Check(t.Context(), &pb.CheckRequest{RequestId: "bad"}); status.Code(err) != codes.InvalidArgument {
			t.Fatalf("got %v, want InvalidArgument", err)
		}
		// A check over a stream is a decision too.
		s := openStream(t, env)
		sendCheck(t, s, checkReq(t, "st1", "Grep", map[string]any{"pattern": "x", "path": "/usr/include/toolgate-test-none"}))
		if r := recv(t, s); r.GetResponse().GetSource() != pb.DecisionSource_DECISION_SOURCE_SAFE_TOOL {
			t.Fatalf("stream answer %v", r)
		}
		if err := s.CloseSend(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Recv(); err != io.EOF {
			t.Fatalf("stream end: %v", err)
		}

		decisions := []struct {
			decision, source, kind string
			want                   float64
		}{
			{"allow", "safe_tool", "read", 2},
			{"allow", "safe_tool", "search", 1},
			{"allow", "command_analysis", "shell", 1},
			{"deny", "classifier", "unknown", 1},
		}
		for _, d := range decisions {
			if got := testutil.ToFloat64(m.decisions.WithLabelValues(d.decision, d.source, d.kind)); got != d.want {
				t.Errorf("decisions{%s,%s,%s} = %v, want %v", d.decision, d.source, d.kind, got, d.want)
			}
		}
		if got := testutil.CollectAndCount(m.decisions); got != len(decisions) {
			t.Errorf("%d decision series, want %d", got, len(decisions))
		}
		for source, want := range map[string]uint64{"safe_tool": 3, "command_analysis": 1, "classifier": 1} {
			h := findSeries(t, reg, "toolgate_decision_duration_seconds", map[string]string{"source": source})
			if got := h.GetHistogram().GetSampleCount(); got != want {
				t.Errorf("duration{%s} count = %d, want %d", source, got, want)
			}
		}
		if got := handled(t, reg, "unary", "Check", "OK"); got != 4 {
			t.Errorf("handled Check OK = %v, want 4", got)
		}
		if got := handled(t, reg, "unary", "Check", "InvalidArgument"); got != 1 {
			t.Errorf("handled Check InvalidArgument = %v, want 1", got)
		}
		// The stream's end is counted once the server has seen it finish:
		// synctest.Wait lets its handler return.
		synctest.Wait()
		if got := handled(t, reg, "bidi_stream", "CheckStream", "OK"); got != 1 {
			t.Errorf("handled CheckStream OK = %v, want 1", got)
		}

		// Bounded labels: no session id, no raw tool name.
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			for _, s := range f.GetMetric() {
				for _, l := range s.GetLabel() {
					if v := l.GetValue(); strings.Contains(v, "session-secret") || strings.Contains(v, "mcp__") || v == "read_file" {
						t.Errorf("%s has label %s=%q", f.GetName(), l.GetName(), v)
					}
				}
			}
		}
	})
}

func TestMetricsLabels(t *testing.T) {
	kinds := []struct {
		kind engine.Kind
		want string
	}{
		{engine.KindRead, "read"},
		{engine.KindShell, "shell"},
		{engine.KindWebFetch, "web_fetch"},
		{engine.KindUnknown, "unknown"},
		{"", "other"},
		{"Bash", "other"},
		{"session-123", "other"},
	}
	for _, k := range kinds {
		if got := kindLabel(k.kind); got != k.want {
			t.Errorf("kindLabel(%q) = %q, want %q", k.kind, got, k.want)
		}
	}
	sources := []struct {
		source engine.Source
		want   string
	}{
		{engine.SourceSafeTool, "safe_tool"},
		{engine.SourceClassifierUnavailable, "classifier_unavailable"},
		{engine.Source(99), "other"},
		{engine.Source(-1), "other"},
	}
	for _, s := range sources {
		if got := sourceLabel(s.source); got != s.want {
			t.Errorf("sourceLabel(%d) = %q, want %q", s.source, got, s.want)
		}
	}
}

// One registry takes the server metrics once; a second set is refused, not
// silently merged.
func TestMetricsRegisterOnce(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := NewMetrics(reg); err != nil {
		t.Fatal(err)
	}
	if _, err := NewMetrics(reg); err == nil {
		t.Fatal("second registration succeeded")
	}
}
