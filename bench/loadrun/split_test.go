package main

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

// synthProfile builds a CPU profile of stacks (leaf first, a frame per
// location; "a+b" is one location where a is inlined into b, pprof's
// innermost-first order), with the given CPU nanoseconds.
func synthProfile(stacks [][]string, ns []int64) *profile.Profile {
	p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}}}
	funcs := map[string]*profile.Function{}
	fn := func(name string) *profile.Function {
		if f, ok := funcs[name]; ok {
			return f
		}
		f := &profile.Function{ID: uint64(len(funcs) + 1), Name: name}
		funcs[name] = f
		p.Function = append(p.Function, f)
		return f
	}
	for i, st := range stacks {
		s := &profile.Sample{Value: []int64{1, ns[i]}}
		for _, frame := range st {
			loc := &profile.Location{ID: uint64(len(p.Location) + 1)}
			for _, name := range strings.Split(frame, "+") {
				loc.Line = append(loc.Line, profile.Line{Function: fn(name)})
			}
			p.Location = append(p.Location, loc)
			s.Location = append(s.Location, loc)
		}
		p.Sample = append(p.Sample, s)
	}
	return p
}

func TestSplitProfile(t *testing.T) {
	const (
		eng     = "github.com/toolgate/toolgate/engine.(*Engine).Check"
		shell   = "github.com/toolgate/toolgate/engine/shell.Analyze"
		check   = "github.com/toolgate/toolgate/server.(*Service).Check"
		decide  = "github.com/toolgate/toolgate/server.(*Service).decideStages"
		stream  = "github.com/toolgate/toolgate/server.(*Service).CheckStream.func2"
		handler = "github.com/toolgate/toolgate/gen/toolgate/v1._PermissionService_Check_Handler"
		grpcRun = "google.golang.org/grpc.(*Server).processUnaryRPC"
	)
	cases := []struct {
		name  string
		stack []string
		want  string
	}{
		{"engine", []string{"regexp.(*Regexp).doExecute", eng, decide, check, handler, grpcRun}, catEngine},
		{"an allocation by the engine is the engine's", []string{"runtime.mallocgc", "runtime.newobject", eng, decide, grpcRun}, catEngine},
		{"a GC assist by the engine is the engine's", []string{"runtime.gcDrainN", "runtime.gcAssistAlloc", "runtime.mallocgc", eng, grpcRun}, catEngine},
		{"the bash parser under the engine", []string{"mvdan.cc/sh/v3/syntax.(*Parser).next", shell, eng, decide}, catEngine},
		{"zap called from the engine is logging", []string{"go.uber.org/zap/zapcore.(*jsonEncoder).AppendString", eng, decide}, catLogging},
		{"zap's write syscall is logging", []string{"internal/runtime/syscall.Syscall6", "syscall.write", "internal/poll.(*FD).Write", "os.(*File).Write", "go.uber.org/zap/zapcore.(*ioCore).Write", decide}, catLogging},
		{"the engine's lstat is the engine's", []string{"syscall.Syscall6", "os.Lstat", "path/filepath.EvalSymlinks", eng}, catEngine},
		{"decision log fields", []string{"runtime.mallocgc", decide, check, grpcRun}, catServer},
		{"AsMap from toEngine is conversion", []string{"google.golang.org/protobuf/types/known/structpb.(*Value).AsInterface", "google.golang.org/protobuf/types/known/structpb.(*Struct).AsMap", "github.com/toolgate/toolgate/server.toolToEngine", "github.com/toolgate/toolgate/server.(*Service).toEngine", decide}, catConversion},
		{"inlined conversion", []string{"runtime.mapassign+github.com/toolgate/toolgate/server.toProto", decide}, catConversion},
		{"inlined engine call in a server frame", []string{"strings.Index+" + eng + "+" + decide}, catEngine},
		{"the size guard", []string{"github.com/toolgate/toolgate/server.valueSize", "github.com/toolgate/toolgate/server.structSize", "github.com/toolgate/toolgate/server.(*Service).toEngine"}, catConversion},
		{"server metrics", []string{"github.com/prometheus/client_golang/prometheus.(*histogram).Observe", "github.com/toolgate/toolgate/server.(*Metrics).decided", decide}, catMetrics},
		{"toolgate's label helper", []string{"strings.HasPrefix", "github.com/toolgate/toolgate/server.sourceLabel", "github.com/toolgate/toolgate/server.(*Metrics).decided"}, catMetrics},
		{"grpcprom's reporter", []string{"time.Since", "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus.(*serverReporter).PostCall", "github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors.UnaryServerInterceptor.func1", grpcRun}, catMetrics},
		{"grpcprom's interceptor itself", []string{"runtime.mallocgc", "github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors.UnaryServerInterceptor.func1", grpcRun}, catMetrics},
		{"the check under grpcprom's interceptor", []string{eng, decide, "github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors.UnaryServerInterceptor.func1", grpcRun}, catEngine},
		{"otelgrpc is tracing, not gRPC", []string{"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc.(*serverHandler).HandleRPC", "google.golang.org/grpc/internal/transport.(*http2Server).operateHeaders"}, catTracing},
		{"the exporter's socket writes are tracing", []string{"syscall.Syscall", "net.(*conn).Write", "net/http.(*persistConn).writeLoop", "go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp.(*client).UploadTraces"}, catTracing},
		{"gRPC's framing under toolgate's stream code", []string{"golang.org/x/net/http2.(*Framer).WriteData", "google.golang.org/grpc/internal/transport.(*http2Server).write", "google.golang.org/grpc.(*serverStream).SendMsg", stream}, catTransport},
		{"the server codec's own decoding", []string{"google.golang.org/protobuf/internal/impl.(*MessageInfo).unmarshalPointer", "google.golang.org/protobuf/proto.Unmarshal", "github.com/toolgate/toolgate/server.decodeProto", "github.com/toolgate/toolgate/server.decodeCodec.Unmarshal", "google.golang.org/grpc.recv", stream}, catTransport},
		{"the server codec's wire scan", []string{"google.golang.org/protobuf/encoding/protowire.ConsumeTag", "github.com/toolgate/toolgate/server.(*scanner).message", "github.com/toolgate/toolgate/server.decodeCodec.Unmarshal", "google.golang.org/grpc.recv", stream}, catServer},
		{"decoding a stream message", []string{"google.golang.org/protobuf/internal/impl.(*MessageInfo).unmarshalPointer", "google.golang.org/grpc/encoding/proto.(*codecV2).Unmarshal", "github.com/toolgate/toolgate/server.decodeCodec.Unmarshal", "google.golang.org/grpc.recv", stream}, catTransport},
		{"the stream's own work", []string{"runtime.selectgo", stream}, catServer},
		{"app", []string{"runtime.mallocgc", "github.com/toolgate/toolgate/app.(*App).Run"}, catServer},
		{"background marking", []string{"runtime.scanobject", "runtime.gcDrain", "runtime.gcBgMarkWorker.func2", "runtime.systemstack", "runtime.gcBgMarkWorker"}, catGC},
		{"sweeping", []string{"runtime.sweepone", "runtime.bgsweep"}, catGC},
		{"a socket read without gRPC above", []string{"internal/runtime/syscall.Syscall6", "syscall.read", "internal/poll.(*FD).Read", "net.(*netFD).Read"}, catTransport},
		{"the scheduler's netpoll", []string{"internal/runtime/syscall/linux.Syscall6", "internal/runtime/syscall/linux.EpollWait", "runtime.netpoll", "runtime.findRunnable", "runtime.schedule"}, catRuntime},
		{"the scheduler", []string{"runtime.futex", "runtime.notesleep", "runtime.stopm", "runtime.findRunnable", "runtime.schedule"}, catRuntime},
		{"a package named like the engine is not it", []string{"github.com/toolgate/toolgate/engineering.F"}, catRuntime},
		{"an empty stack", nil, catRuntime},
	}
	var stacks [][]string
	var ns []int64
	for i, c := range cases {
		stacks = append(stacks, c.stack)
		ns = append(ns, int64(i+1)*1000)
	}
	p := synthProfile(stacks, ns)
	// Each case alone first, for a readable failure.
	for i, c := range cases {
		s, err := splitProfile(synthProfile(stacks[i:i+1], ns[i:i+1]))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if s.Value[c.want] != s.Total {
			t.Errorf("%s: split %v, want all in %q", c.name, s.Value, c.want)
		}
	}
	// Together, weighted by CPU time, not by sample count.
	s, err := splitProfile(p)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{}
	var total int64
	for i, c := range cases {
		want[c.want] += ns[i]
		total += ns[i]
	}
	if s.Total != total {
		t.Errorf("total %d, want %d", s.Total, total)
	}
	var shares float64
	for _, cat := range splitCategories {
		if s.Value[cat] != want[cat] {
			t.Errorf("%s: %d ns, want %d", cat, s.Value[cat], want[cat])
		}
		shares += s.share(cat)
	}
	if math.Abs(shares-1) > 1e-9 {
		t.Errorf("shares add up to %v", shares)
	}
	if len(s.Value) > len(splitCategories) {
		t.Errorf("categories outside the report: %v", s.Value)
	}
	if _, err := splitProfile(&profile.Profile{SampleType: p.SampleType}); err == nil {
		t.Error("a profile without samples was split")
	}
}

func TestSplitMarkdown(t *testing.T) {
	split := func(engine, transport int64) *cpuSplit {
		return &cpuSplit{Value: map[string]int64{catEngine: engine, catTransport: transport}, Total: engine + transport}
	}
	r := &results{Targets: []*targetResult{
		{ID: "toolgate-unary", Server: serverToolgate, Count: 1000, ServerCPU: 40 * time.Millisecond},
		{ID: "toolgate-stream", Server: serverToolgate, Count: 10, StreamCount: 100, ServerCPU: 20 * time.Millisecond},
		{ID: "profile-unary", Server: serverInproc, Count: 10, ServerCPU: time.Second, CPUSplit: split(3, 1)},
		{ID: "profile-stream", Server: serverInproc, Count: 10, StreamCount: 100, ServerCPU: time.Second, CPUSplit: split(1, 1)},
	}}
	md := r.markdown()
	// 40 µs and 20 µs per check in the subprocesses, not the in-process
	// targets' CPU.
	for _, want := range []string{
		"## Where a check's CPU goes",
		"| | unary | CheckStream |",
		"| engine | 30.0 µs (75.0%) | 10.0 µs (50.0%) |",
		"| transport | 10.0 µs (25.0%) | 10.0 µs (50.0%) |",
		"| logging | 0.0 µs (0.0%) | 0.0 µs (0.0%) |",
		"| **server CPU per check** | 40 µs (100%) | 20 µs (100%) |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	// Without a profile target, no split.
	r.Targets = r.Targets[:3]
	if md := r.markdown(); strings.Contains(md, "Where a check's CPU goes") {
		t.Error("split shown without profile-stream")
	}
}
