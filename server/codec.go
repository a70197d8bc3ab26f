package server

import (
	"context"
	"math"
	"reflect"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	protoapi "google.golang.org/protobuf/proto"

	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// decodeCodec is grpc-go's proto codec with two changes for this service's
// requests. First, each is scanned on the wire before it is decoded
// (wirescan.go): one past the per-message bounds is refused without being
// decoded, and the estimated decoded cost of the others is counted against
// the server-wide decode budget until the handler is done with it.
// Second, a request that is refused or does not decode (invalid UTF-8,
// nesting past protobuf's recursion limit, malformed wire data) gets the
// status it deserves: grpc-go turns any codec error into INTERNAL before
// an interceptor sees it, so for those requests the codec reports success
// with an empty message and keeps the status aside; the first interceptor
// (decodeErrorsUnary, decodeErrorsStream) answers with it.
type decodeCodec struct {
	encoding.CodecV2
	lim    scanLimits
	budget *decodeBudget
}

func newDecodeCodec(cfg *Config) decodeCodec {
	return decodeCodec{
		CodecV2: encoding.GetCodecV2(proto.Name),
		lim:     scanLimits{maxItems: cfg.MaxMessageItems, maxDepth: cfg.MaxValueDepth},
		budget:  newDecodeBudget(cfg.DecodeBudgetBytes),
	}
}

// decoded is what the codec leaves for the interceptor about one request,
// by message, until the interceptor takes it (at once, on the same call):
// the status refusing it, or the budget it holds.
type decoded struct {
	err  error
	cost int64
}

// decodedRequests holds each request's decoded until the interceptor
// takes it. grpc-go hands the codec nothing but the message, so the
// message's pointer is the key. Striped maps with a mutex each, not a
// sync.Map: a sync.Map allocates for every new key (and a boxed value),
// and every request is a new key; these maps reuse their slots.
var decodedRequests decodedTable

const decodedStripes = 16

type decodedTable struct {
	stripes [decodedStripes]struct {
		mu sync.Mutex
		m  map[any]decoded
		_  [40]byte // a cache line each: the stripes are taken from every core
	}
}

// stripe picks a stripe by the message's address (messages are pointers).
func (t *decodedTable) stripe(v any) int {
	r := reflect.ValueOf(v)
	if r.Kind() != reflect.Pointer {
		return 0
	}
	// Allocations are at least 16-byte aligned: the bits above pick.
	return int(r.Pointer()>>4) % decodedStripes
}

func (t *decodedTable) store(v any, d decoded) {
	st := &t.stripes[t.stripe(v)]
	st.mu.Lock()
	if st.m == nil {
		st.m = map[any]decoded{}
	}
	st.m[v] = d
	st.mu.Unlock()
}

func (t *decodedTable) take(v any) (decoded, bool) {
	st := &t.stripes[t.stripe(v)]
	st.mu.Lock()
	d, ok := st.m[v]
	if ok {
		delete(st.m, v)
	}
	st.mu.Unlock()
	return d, ok
}

// len counts the entries left (tests).
func (t *decodedTable) len() int {
	n := 0
	for i := range t.stripes {
		st := &t.stripes[i]
		st.mu.Lock()
		n += len(st.m)
		st.mu.Unlock()
	}
	return n
}

func (c decodeCodec) Unmarshal(data mem.BufferSlice, v any) error {
	var scan func([]byte, scanLimits) wireScan
	switch v.(type) {
	case *pb.CheckRequest:
		scan = scanCheckRequest
	case *pb.CheckStreamRequest:
		scan = scanCheckStreamRequest
	case *pb.ClassifyRequest:
		scan = scanClassifyRequest
	default:
		return c.CodecV2.Unmarshal(data, v)
	}
	m := v.(protoapi.Message)
	// One contiguous copy of exactly the message's size (grpc-go's codec
	// takes one from its pool, whose tiers would hold a 60 KB message in
	// a 1 MiB buffer); a message in one buffer is read where it is.
	var b []byte
	if len(data) == 1 {
		b = data[0].ReadOnlyData()
	} else {
		b = data.Materialize()
	}
	refuse := func(err error) error {
		protoapi.Reset(m)
		decodedRequests.store(v, decoded{err: err})
		return nil
	}
	sc := scan(b, c.lim)
	switch sc.verdict {
	case scanTooDeep:
		// The same refusal as protobuf's own recursion limit: the shape
		// of the request is wrong, and sending it again will not help.
		return refuse(status.Errorf(codes.InvalidArgument, "the request does not decode as protobuf: its Struct and list values nest more than %d deep (server.max_value_depth)", c.lim.maxDepth))
	case scanTooMany:
		return refuse(status.Errorf(codes.ResourceExhausted, "the request holds more than %d values, fields, entries and list elements (server.max_message_items); it was not decoded: send a smaller one", c.lim.maxItems))
	}
	// A malformed request is decoded as far as protobuf goes, for its
	// error: the scan has counted what comes before the fault, and the
	// budget holds its cost like any other.
	if !c.budget.acquire(sc.cost) {
		return refuse(status.Errorf(codes.ResourceExhausted, "the server is decoding and holding as many large requests as its budget allows (server.decode_budget_bytes); this one (about %d bytes once decoded) was not decoded: retry later", sc.cost))
	}
	if err := decodeProto(b, m); err != nil {
		c.budget.release(sc.cost)
		return refuse(status.Errorf(codes.InvalidArgument, "the request does not decode as protobuf: %v", err))
	}
	decodedRequests.store(v, decoded{cost: sc.cost})
	return nil
}

// decodeProto is protobuf's decoding of a request, what grpc-go's own codec
// would do (a function of its own so that the load harness's CPU split
// counts it as transport, as it did under grpc-go's codec, apart from the
// scan and the budget).
func decodeProto(b []byte, m protoapi.Message) error { return protoapi.Unmarshal(b, m) }

// takeDecoded returns what the codec left for message m: the budget it
// holds (0 for none), and the status refusing it (nil when it decoded).
func takeDecoded(m any) (cost int64, refused error) {
	d, ok := decodedRequests.take(m)
	if !ok {
		return 0, nil
	}
	return d.cost, d.err
}

// decodeErrorsUnary answers a request's decode refusal, and holds the
// budget the request holds until the handler returns.
func (c decodeCodec) decodeErrorsUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	cost, err := takeDecoded(req)
	// The handler holds the request until it returns.
	defer c.budget.release(cost)
	if err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

func (c decodeCodec) decodeErrorsStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	s := &decodeCheckedStream{ServerStream: ss, budget: c.budget}
	defer s.end()
	return handler(srv, s)
}

// decodeCheckedStream answers a stream message's decode refusal, and
// leaves the budget a message holds to the handler: it gives it back once
// it is done with the message (streamHold.release), which for a check the
// model decides is when the check is answered. A stream that waits for
// its client (an agent between tool calls) thus holds no budget, while a
// stream that is stalled with a message in hand does. Whatever the handler
// has not given back when it returns is given back then.
//
// What its messages hold is one sum per stream, not an entry per message
// in a shared map: the handler learns each message's cost from the stream
// (lastCost, read by the goroutine that received it), carries it with the
// message, and gives it back by that amount.
type decodeCheckedStream struct {
	grpc.ServerStream
	budget *decodeBudget
	// held is the budget the stream's messages hold, or streamEnded once
	// the handler has returned (RecvMsg may still run then).
	held atomic.Int64
	// lastCost is what the message RecvMsg last returned holds; read by
	// the goroutine that called RecvMsg, after it returned.
	lastCost int64
}

// streamEnded marks a stream whose handler returned: what it held was
// given back, and what its messages give back later is not counted again.
const streamEnded = math.MinInt64

func (s *decodeCheckedStream) end() {
	if h := s.held.Swap(streamEnded); h > 0 {
		s.budget.release(h)
	}
}

// add counts cost as held by the stream, or reports false once it ended.
func (s *decodeCheckedStream) add(cost int64) bool {
	for {
		h := s.held.Load()
		if h == streamEnded {
			return false
		}
		if s.held.CompareAndSwap(h, h+cost) {
			return true
		}
	}
}

// release gives back cost, held by one of the stream's messages; nothing
// once the stream ended (end gave it back).
func (s *decodeCheckedStream) release(cost int64) {
	if cost == 0 {
		return
	}
	for {
		h := s.held.Load()
		if h == streamEnded {
			return
		}
		if s.held.CompareAndSwap(h, h-cost) {
			s.budget.release(cost)
			return
		}
	}
}

func (s *decodeCheckedStream) RecvMsg(m any) error {
	recvErr := s.ServerStream.RecvMsg(m)
	cost, err := takeDecoded(m)
	s.lastCost = 0
	if recvErr != nil || err != nil {
		s.budget.release(cost)
		if recvErr != nil {
			return recvErr
		}
		return err
	}
	if !s.add(cost) {
		s.budget.release(cost)
		return nil
	}
	s.lastCost = cost
	return nil
}

// streamHold is the budget one stream message holds, given back once.
type streamHold struct {
	s    *decodeCheckedStream // nil: the stream holds no budget
	cost int64
}

// release gives the budget back; later calls do nothing.
func (h *streamHold) release() {
	if h.s != nil {
		h.s.release(h.cost)
		h.s = nil
	}
}

// budgetedStream is the decodeCheckedStream under a CheckStream's stream,
// or nil when there is none (a server without the codec, a test's fake).
func budgetedStream(stream pb.PermissionService_CheckStreamServer) *decodeCheckedStream {
	g, ok := stream.(*grpc.GenericServerStream[pb.CheckStreamRequest, pb.CheckStreamResponse])
	if !ok {
		return nil
	}
	d, _ := g.ServerStream.(*decodeCheckedStream)
	return d
}

// recvHeld receives the stream's next message, and the hold on the budget
// it takes.
func recvHeld(stream pb.PermissionService_CheckStreamServer, d *decodeCheckedStream) (*pb.CheckStreamRequest, streamHold, error) {
	m, err := stream.Recv()
	if d == nil || err != nil {
		return m, streamHold{}, err
	}
	return m, streamHold{d, d.lastCost}, nil
}
