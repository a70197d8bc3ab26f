package server

import (
	"context"
	"sync"

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
	err    error
	budget *decodeBudget
	cost   int64
}

var decodedRequests sync.Map // message pointer → decoded

func (c decodeCodec) Unmarshal(data mem.BufferSlice, v any) error {
	var scan func([]byte, scanLimits) wireScan
	switch v.(type) {
	case *pb.CheckRequest:
		scan = scanCheckRequest
	case *pb.CheckStreamRequest:
		scan = scanCheckStreamRequest
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
		decodedRequests.Store(v, decoded{err: err})
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
	if err := protoapi.Unmarshal(b, m); err != nil {
		c.budget.release(sc.cost)
		return refuse(status.Errorf(codes.InvalidArgument, "the request does not decode as protobuf: %v", err))
	}
	decodedRequests.Store(v, decoded{budget: c.budget, cost: sc.cost})
	return nil
}

// takeDecoded returns what the codec left for message m: a function giving
// back the budget it holds (never nil), and the status refusing it (nil
// when it decoded).
func takeDecoded(m any) (release func(), refused error) {
	d, ok := decodedRequests.LoadAndDelete(m)
	if !ok {
		return func() {}, nil
	}
	dd := d.(decoded)
	if dd.err != nil || dd.budget == nil {
		return func() {}, dd.err
	}
	return func() { dd.budget.release(dd.cost) }, nil
}

func decodeErrorsUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	release, err := takeDecoded(req)
	// The handler holds the request until it returns.
	defer release()
	if err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

func decodeErrorsStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	s := &decodeCheckedStream{ServerStream: ss}
	defer s.end()
	return handler(srv, s)
}

// decodeCheckedStream answers a stream message's decode refusal, and
// leaves the budget a message holds to the handler: it gives it back once
// it is done with the message (releaseStreamMsg), which for a check the
// model decides is when the check is answered. A stream that waits for
// its client (an agent between tool calls) thus holds no budget, while a
// stream that is stalled with a message in hand does. Whatever the handler
// has not given back when it returns is given back then.
type decodeCheckedStream struct {
	grpc.ServerStream
	mu          sync.Mutex // RecvMsg may still run when the handler returns
	outstanding map[any]struct{}
	ended       bool
}

// streamHeld is the budget each stream message holds, by message.
var streamHeld sync.Map // message pointer → heldMsg

type heldMsg struct {
	release func()
	stream  *decodeCheckedStream
}

// releaseStreamMsg gives back the budget stream message m holds; it may
// be called more than once.
func releaseStreamMsg(m any) {
	h, ok := streamHeld.LoadAndDelete(m)
	if !ok {
		return
	}
	hm := h.(heldMsg)
	hm.stream.mu.Lock()
	delete(hm.stream.outstanding, m)
	hm.stream.mu.Unlock()
	hm.release()
}

func (s *decodeCheckedStream) end() {
	s.mu.Lock()
	s.ended = true
	out := s.outstanding
	s.outstanding = nil
	s.mu.Unlock()
	for m := range out {
		releaseStreamMsg(m)
	}
}

func (s *decodeCheckedStream) RecvMsg(m any) error {
	recvErr := s.ServerStream.RecvMsg(m)
	release, err := takeDecoded(m)
	if recvErr != nil || err != nil {
		release()
		if recvErr != nil {
			return recvErr
		}
		return err
	}
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		release()
		return nil
	}
	if s.outstanding == nil {
		s.outstanding = map[any]struct{}{}
	}
	s.outstanding[m] = struct{}{}
	streamHeld.Store(m, heldMsg{release, s})
	s.mu.Unlock()
	return nil
}
