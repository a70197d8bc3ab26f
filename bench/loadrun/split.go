package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/google/pprof/profile"
)

// Where a check's CPU goes: the categories of the split, in report order.
const (
	catEngine     = "engine"
	catConversion = "conversion (proto ↔ engine)"
	catServer     = "toolgate server"
	catLogging    = "logging"
	catMetrics    = "metrics"
	catTracing    = "tracing"
	catTransport  = "transport"
	catGC         = "garbage collection"
	catRuntime    = "runtime and other"
)

var splitCategories = []string{catEngine, catConversion, catServer, catLogging, catMetrics, catTracing, catTransport, catGC, catRuntime}

const tg = "github.com/toolgate/toolgate/"

// conversionFuncs are server/convert.go's functions and the tool input
// size guard toEngine calls (structsize.go).
var conversionFuncs = []string{
	"(*Service).toEngine", "(*Service).checkEntries", "toolToEngine", "transcriptToEngine",
	"roleFromProto", "toProto", "validUTF8", "invalid", "(*validationError).Error",
	"structSize", "listSize", "valueSize",
}

// inPkg reports whether fn is a function of package pkg or of a package
// below it: "a/b" holds "a/b.F" and "a/b/c.(*T).M", not "a/bc.F".
func inPkg(fn, pkg string) bool {
	rest, ok := strings.CutPrefix(fn, pkg)
	return ok && rest != "" && (rest[0] == '.' || rest[0] == '/')
}

// serverFunc reports whether fn is one of toolgate's server package
// functions in names (closures included).
func serverFunc(fn string, names []string) bool {
	rest, ok := strings.CutPrefix(fn, tg+"server.")
	if !ok {
		return false
	}
	for _, n := range names {
		if r, ok := strings.CutPrefix(rest, n); ok && (r == "" || strings.HasPrefix(r, ".func")) {
			return true
		}
	}
	return false
}

// frameCategory is the category a function counts for when it is the
// frame nearest the leaf that has one; "" lets the scan go on to the
// caller (the standard library, the runtime, generated code).
//
// gRPC's own frames count as transport here, not only as a fallback:
// otherwise the framing and decoding a CheckStream's Send and Recv do
// would count for the toolgate code that called them. Protobuf, net and
// syscall frames get no category, so that they count for their caller
// (structpb.AsMap from toEngine, zap's writes, the engine's lstat calls).
func frameCategory(fn string) string {
	switch {
	case inPkg(fn, tg+"engine"):
		return catEngine
	case inPkg(fn, "go.uber.org/zap"):
		return catLogging
	case inPkg(fn, "github.com/prometheus"),
		inPkg(fn, "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"),
		// The generic reporting interceptor: grpcprom's only, here.
		strings.HasPrefix(fn, "github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors."),
		strings.Contains(fn, "ServerMetrics"),
		strings.HasPrefix(fn, tg+"server.(*Metrics)."),
		serverFunc(fn, []string{"sourceLabel", "kindLabel", "NewMetrics"}):
		return catMetrics
	case inPkg(fn, "go.opentelemetry.io"):
		return catTracing
	case serverFunc(fn, conversionFuncs):
		return catConversion
	case serverFunc(fn, []string{"decodeProto"}):
		// The server's codec decodes requests itself (after its wire
		// scan): the decoding is what grpc-go's codec did, transport.
		return catTransport
	case inPkg(fn, tg+"server"), inPkg(fn, tg+"app"):
		return catServer
	case inPkg(fn, "google.golang.org/grpc"), inPkg(fn, "golang.org/x/net/http2"):
		return catTransport
	}
	return ""
}

// gcWorkers are the runtime's background collector goroutines; their
// stacks hold no caller to charge. Allocation and GC assists count for
// the code that allocates.
var gcWorkers = []string{"runtime.gcBgMarkWorker", "runtime.bgsweep", "runtime.bgscavenge"}

// transportFrames mark stacks that did not match a category but ran for
// the network: protobuf, sockets, the poller, syscalls. The runtime's own
// syscalls (internal/runtime/syscall: the scheduler's netpoll, futexes)
// stay runtime.
var transportFrames = []string{"google.golang.org/protobuf", "net.", "internal/poll.", "syscall.", "golang.org/x/sys/unix."}

// sampleCategory attributes one stack (leaf first) to a category.
func sampleCategory(stack []string) string {
	for _, fn := range stack {
		for _, w := range gcWorkers {
			if fn == w {
				return catGC
			}
		}
	}
	for _, fn := range stack {
		if c := frameCategory(fn); c != "" {
			return c
		}
	}
	for _, fn := range stack {
		for _, p := range transportFrames {
			if strings.HasPrefix(fn, p) {
				return catTransport
			}
		}
	}
	return catRuntime
}

// cpuSplit is a CPU profile's samples by category.
type cpuSplit struct {
	Value map[string]int64 // CPU nanoseconds (or samples) per category
	Total int64
}

// share is the category's fraction of the profile.
func (s *cpuSplit) share(cat string) float64 {
	if s == nil || s.Total == 0 {
		return 0
	}
	return float64(s.Value[cat]) / float64(s.Total)
}

// splitProfile attributes every sample of a CPU profile, weighted by its
// CPU time.
func splitProfile(p *profile.Profile) (*cpuSplit, error) {
	vi := len(p.SampleType) - 1
	for i, st := range p.SampleType {
		if st.Type == "cpu" {
			vi = i
		}
	}
	if vi < 0 {
		return nil, fmt.Errorf("profile has no sample types")
	}
	s := &cpuSplit{Value: map[string]int64{}}
	var stack []string
	for _, smp := range p.Sample {
		stack = stack[:0]
		for _, loc := range smp.Location {
			// Inlined calls: the innermost line comes first.
			for _, l := range loc.Line {
				if l.Function != nil {
					stack = append(stack, l.Function.Name)
				}
			}
		}
		v := smp.Value[vi]
		s.Value[sampleCategory(stack)] += v
		s.Total += v
	}
	if s.Total == 0 {
		return nil, fmt.Errorf("profile has no samples")
	}
	return s, nil
}

func splitProfileFile(path string) (*cpuSplit, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s, err := splitProfile(p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}
