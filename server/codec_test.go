package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// rawCodec sends bytes as they are, so a test can send what no protobuf
// library would encode.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(*v.(*[]byte))}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	*v.(*[]byte) = data.Materialize()
	return nil
}

func (rawCodec) Name() string { return "proto" }

func field(num protowire.Number, b []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), b)
}

// checkBytes is a CheckRequest "id" calling Bash with input {"a": value}.
func checkBytes(value []byte) []byte {
	entry := append(field(1, []byte("a")), field(2, value)...)
	tool := append(field(1, []byte("Bash")), field(2, field(1, entry))...)
	return append(field(1, []byte("id")), field(3, tool)...)
}

// nestedValue is a Value holding lists depth deep.
func nestedValue(depth int) []byte {
	var v []byte
	for range depth {
		v = field(6, field(1, v)) // Value.list_value{values: [v]}
	}
	return v
}

// TestRequestsThatDoNotDecode: bytes that are not a valid request are the
// client's error, INVALID_ARGUMENT, on unary calls and on streams, and the
// server goes on answering.
func TestRequestsThatDoNotDecode(t *testing.T) {
	env := newEnv(t)
	for _, tc := range []struct {
		name string
		req  []byte
	}{
		{"invalid UTF-8 in a string", append(field(1, []byte("\xff\xfe")), checkBytes(nil)[4:]...)},
		{"invalid UTF-8 in the input", checkBytes(field(3, []byte("a\xc0b")))},
		{"nesting past the recursion limit", checkBytes(nestedValue(10_001))},
		{"truncated", checkBytes(nil)[:7]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out []byte
			err := env.conn.Invoke(t.Context(), pb.PermissionService_Check_FullMethodName, &tc.req, &out, grpc.ForceCodecV2(rawCodec{}))
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), "does not decode") {
				t.Fatalf("unary: %v, want InvalidArgument", err)
			}
			stream, err := env.conn.NewStream(t.Context(), &pb.PermissionService_ServiceDesc.Streams[0], pb.PermissionService_CheckStream_FullMethodName, grpc.ForceCodecV2(rawCodec{}))
			if err != nil {
				t.Fatal(err)
			}
			msg := field(2, tc.req) // CheckStreamRequest.check
			if err := stream.SendMsg(&msg); err != nil {
				t.Fatal(err)
			}
			if err := stream.RecvMsg(&out); status.Code(err) != codes.InvalidArgument {
				t.Fatalf("stream: %v, want InvalidArgument", err)
			}
		})
	}
	// A request that decodes is answered as ever.
	res, err := env.client.Check(t.Context(), checkReq(t, "ok", "Read", map[string]any{"file_path": "/tmp/x"}))
	if err != nil || res.GetDecision() == pb.Decision_DECISION_UNSPECIFIED {
		t.Fatalf("after: %v %v", res, err)
	}
	if n := decodedRequests.len(); n != 0 {
		t.Errorf("%d decode results left behind", n)
	}
}

// TestCancelledCallsAreNotLoggedAtInfo: a client that cancels is not an
// event worth a line each at info level, on unary calls and streams.
func TestCancelledCallsAreNotLoggedAtInfo(t *testing.T) {
	// Debug, so that the stream's own line tells when its handler ended.
	core, logs := observer.New(zap.DebugLevel)
	fc := newFakeClassifier()
	env := newEnv(t, withClassifier(fc), withLogger(zap.New(core)))
	fc.hold("slow")
	defer fc.release("slow")
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-fc.started; cancel() }()
	if _, err := env.client.Check(ctx, checkReq(t, "slow", "mcp__test__x", nil)); status.Code(err) != codes.Canceled {
		t.Fatalf("unary: %v, want Canceled", err)
	}
	sctx, scancel := context.WithCancel(t.Context())
	stream, err := env.client.CheckStream(sctx)
	if err != nil {
		t.Fatal(err)
	}
	scancel()
	if _, err := stream.Recv(); status.Code(err) != codes.Canceled {
		t.Fatalf("stream: %v, want Canceled", err)
	}
	// The client knows at once; the server when the reset arrives. A
	// shutdown before that ends the stream as the server's own doing.
	streamLine := func(e observer.LoggedEntry) bool {
		return e.Message == "rpc" && e.ContextMap()["method"] == pb.PermissionService_CheckStream_FullMethodName
	}
	for deadline := time.Now().Add(10 * time.Second); logs.Filter(streamLine).Len() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the stream's handler did not end within 10s of the client's cancel")
		}
	}
	env.stop(t)
	atInfo := logs.Filter(func(e observer.LoggedEntry) bool { return e.Message == "rpc" && e.Level >= zap.InfoLevel })
	if n := atInfo.Len(); n != 0 {
		t.Errorf("%d rpc lines at info for cancelled calls: %v", n, atInfo.All())
	}
}

// Handing a request's decode result from the codec to the interceptor
// allocates nothing beyond protobuf's own decoding: it is on every
// request's path.
func TestDecodeHandOffAllocatesNothing(t *testing.T) {
	c := newDecodeCodec(&Config{MaxMessageItems: 10000, MaxValueDepth: 32, DecodeBudgetBytes: 1 << 30})
	req := checkReq(t, "alloc", "Bash", map[string]any{"command": "git status", "description": "see the tree"})
	b, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	data := mem.BufferSlice{mem.SliceBuffer(b)}
	var m pb.CheckRequest
	decode := testing.AllocsPerRun(200, func() {
		proto.Reset(&m)
		if err := proto.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
	})
	handOff := testing.AllocsPerRun(200, func() {
		proto.Reset(&m)
		if err := c.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		cost, err := takeDecoded(&m)
		if err != nil || cost == 0 {
			t.Fatalf("cost %d, %v", cost, err)
		}
		c.budget.release(cost)
	})
	if handOff > decode {
		t.Errorf("the codec and hand-off take %v allocations, protobuf's decoding alone %v", handOff, decode)
	}
}
