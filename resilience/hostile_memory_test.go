package resilience

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/toolgate/toolgate/bench/inproc"
	"github.com/toolgate/toolgate/fakellm"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// The memory probes: a client that means harm sends what is cheap for it
// and dear for the server. Each runs at twice the size that broke the
// server once, and holds it to memoryBound while ordinary checks keep
// being answered within ordinaryLatency.
const (
	// memoryBound is the most peak RSS a probe may take the server to,
	// from where it started: under the pod's 512 MiB with room.
	memoryBound = 400 << 20
	// ordinaryLatency bounds an ordinary check (a Read of a project
	// file, and health) during a probe.
	ordinaryLatency = time.Second
)

// ordinary sends ordinary checks, one every 50 ms, until stop is closed,
// and returns the slowest and the problems seen.
func ordinary(g *target, p string, stop <-chan struct{}) func() (time.Duration, []string) {
	var slowest time.Duration
	var problems []string
	n := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			start := time.Now()
			err := g.harmless(p)
			took := time.Since(start)
			n++
			slowest = max(slowest, took)
			if err != nil {
				problems = append(problems, err.Error())
			} else if took > ordinaryLatency {
				problems = append(problems, fmt.Sprintf("an ordinary check took %s", took.Round(time.Millisecond)))
			}
		}
	}()
	return func() (time.Duration, []string) {
		<-done
		if n == 0 {
			problems = append(problems, "no ordinary check was sent")
		}
		return slowest, problems
	}
}

// probe runs flood against g while ordinary checks run, and holds the
// server to the bounds: peak RSS, ordinary latency, alive and serving.
func probe(t *testing.T, g *target, p, what string, flood func()) {
	t.Helper()
	if _, err := g.resetPeak(); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	wait := ordinary(g, p, stop)
	start := time.Now()
	flood()
	close(stop)
	slowest, problems := wait()
	peak := g.casePeak()
	t.Logf("%s: %s; peak RSS %d MiB; slowest ordinary check %s", what, time.Since(start).Round(time.Millisecond), peak>>20, slowest.Round(time.Millisecond))
	for _, pr := range problems {
		t.Errorf("%s: %s", what, pr)
	}
	if rss := g.killedByWatchdog(); rss > 0 {
		t.Fatalf("%s: the server was killed at %d MiB (the pod's limit)", what, rss>>20)
	}
	if peak > memoryBound {
		t.Errorf("%s: peak RSS %d MiB, over %d MiB", what, peak>>20, memoryBound>>20)
	}
	if !g.alive() {
		t.Fatalf("%s: the server exited:\n%s", what, tail(g.log(), 20))
	}
	if err := g.harmless(p); err != nil {
		t.Errorf("after %s: %v", what, err)
	}
}

// listInput is a tool input {"command": [n values made by mk]}.
func listInput(n int, mk func() *structpb.Value) *structpb.Struct {
	l := make([]*structpb.Value, n)
	for i := range l {
		l[i] = mk()
	}
	return &structpb.Struct{Fields: map[string]*structpb.Value{"command": structpb.NewListValue(&structpb.ListValue{Values: l})}}
}

func emptyObject() *structpb.Value { return structpb.NewStructValue(&structpb.Struct{}) }

// flood sends req (encoded) from workers goroutines on their own
// connection until the duration passes, and fails the test for any answer
// that is ALLOW (but the model's) or no answer in time; it returns the
// codes seen.
func flood(t *testing.T, g *target, req []byte, workers int, d time.Duration) map[string]int {
	conn, _, err := inproc.Dial(g.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	end := time.Now().Add(d)
	for range workers {
		wg.Go(func() {
			for time.Now().Before(end) {
				ctx, cancel := context.WithTimeout(t.Context(), answerDeadline)
				var out []byte
				start := time.Now()
				err := conn.Invoke(ctx, pb.PermissionService_Check_FullMethodName, &req, &out, grpc.ForceCodecV2(rawCodec{}))
				cancel()
				o := outcome{err: err, took: time.Since(start)}
				key := status.Code(err).String()
				if err == nil {
					o.resp = &pb.CheckResponse{}
					if err := proto.Unmarshal(out, o.resp); err != nil {
						t.Error(err)
						return
					}
					key = o.resp.GetDecision().String()
				}
				mu.Lock()
				seen[key]++
				mu.Unlock()
				if o.resp.GetDecision() == pb.Decision_DECISION_ALLOW && byModel(o.resp) {
					continue // the model's to decide (the fake finds nothing to block)
				}
				if pr := hostileProblem(o); pr != "" {
					t.Errorf("a hostile check: %s", pr)
					return
				}
			}
		})
	}
	wg.Wait()
	return seen
}

// TestHostileDecodeFlood: 32 concurrent unary checks whose tool input is a
// list of a million empty objects (4 MB on the wire, about 135 MB decoded)
// are refused before they are decoded; then 32 concurrent checks under
// the per-message bounds (transcripts of tool calls of 15,000 empty
// objects, about 20 MB decoded each) held by a slow model run into the
// decode budget. Ordinary checks go on throughout.
func TestHostileDecodeFlood(t *testing.T) {
	p := project(t)
	f := startFake(t, fakellm.DefaultHandler, 500*time.Millisecond)
	g := startTarget(t, hostileYAML(classifierYAML(f.url, 2*time.Second)+denyDeployPolicy), "--watch=false")

	million, err := proto.Marshal(&pb.CheckRequest{WorkingDirectory: p, Tool: &pb.ToolCall{Name: "Bash", Input: listInput(1_000_000, emptyObject)}})
	if err != nil {
		t.Fatal(err)
	}
	probe(t, g, p, "32 concurrent million-value checks", func() {
		seen := flood(t, g, million, 32, 2*time.Second)
		t.Logf("answers: %v", seen)
		if len(seen) != 1 || seen[codes.ResourceExhausted.String()] == 0 {
			t.Errorf("answers %v, want only RESOURCE_EXHAUSTED", seen)
		}
	})

	// Under the per-message bounds: six transcript entries, each a tool
	// call of 15,000 empty objects (60 KB, under max_transcript_entry_bytes),
	// for a check the model decides (slowly): each is held while it waits.
	held := &pb.CheckRequest{WorkingDirectory: p, Tool: &pb.ToolCall{Name: "mcp__x__y", Input: &structpb.Struct{}}}
	entry := &pb.TranscriptEntry{Role: pb.Role_ROLE_ASSISTANT, ToolCall: &pb.ToolCall{Name: "mcp__x__y", Input: listInput(15_000, emptyObject)}}
	for range 6 {
		held.Transcript = append(held.Transcript, entry)
	}
	heldBytes, err := proto.Marshal(held)
	if err != nil {
		t.Fatal(err)
	}
	probe(t, g, p, "32 concurrent checks of 90,000 values each, held by the model", func() {
		seen := flood(t, g, heldBytes, 32, 2*time.Second)
		t.Logf("answers: %v", seen)
	})
	took := g.terminate()
	t.Logf("SIGTERM to exit %s", took.Round(time.Millisecond))
}

// TestHostileHeldTranscripts: 4 streams each upload a transcript at the
// limits made of tool calls whose inputs are lists of tiny values (small
// encoded, twenty times larger as maps); the server holds no more than
// max_held_transcript_bytes of them as kept in memory, refuses the rest
// with RESOURCE_EXHAUSTED, and lets all of it go when the streams end.
func TestHostileHeldTranscripts(t *testing.T) {
	p := project(t)
	f := startFake(t, fakellm.DefaultHandler, 0)
	g := startTarget(t, hostileYAML(classifierYAML(f.url, 2*time.Second)+denyDeployPolicy), "--watch=false")
	// 16,000 empty objects: 64 KB encoded, the entry limit; six of them
	// in a message keep it under max_message_items.
	entry := &pb.TranscriptEntry{Role: pb.Role_ROLE_ASSISTANT, ToolCall: &pb.ToolCall{Name: "MultiEdit", Input: listInput(16_000, emptyObject)}}
	if n := proto.Size(entry.GetToolCall()); n > maxEntryBytes {
		t.Fatalf("entry of %d bytes", n)
	}
	const perMsg, streams = 6, 4
	msg, err := proto.Marshal(&pb.CheckStreamRequest{Kind: &pb.CheckStreamRequest_Transcript{Transcript: &pb.TranscriptAppend{Entries: []*pb.TranscriptEntry{entry, entry, entry, entry, entry, entry}}}})
	if err != nil {
		t.Fatal(err)
	}
	upload := func(ctx context.Context, s int) (refused int, err error) {
		stream, err := g.conn.NewStream(ctx, &pb.PermissionService_ServiceDesc.Streams[0], pb.PermissionService_CheckStream_FullMethodName, grpc.ForceCodecV2(rawCodec{}))
		if err != nil {
			return 0, err
		}
		send := func() error {
			for sent := 0; sent < maxEntries; sent += perMsg {
				if err := stream.SendMsg(&msg); err != nil {
					return err
				}
			}
			check, _ := proto.Marshal(&pb.CheckStreamRequest{Kind: &pb.CheckStreamRequest_Check{Check: &pb.CheckRequest{RequestId: fmt.Sprint("c", s), WorkingDirectory: p, Tool: &pb.ToolCall{Name: "mcp__x__y", Input: &structpb.Struct{}}}}})
			if err := stream.SendMsg(&check); err != nil {
				return err
			}
			return stream.CloseSend()
		}
		// A send fails (io.EOF) when the server ended the stream; RecvMsg
		// then tells how.
		sendErr := send()
		for {
			var out []byte
			if err := stream.RecvMsg(&out); err != nil {
				switch {
				case errors.Is(err, io.EOF) && sendErr == nil:
					return refused, nil
				case status.Code(err) == codes.ResourceExhausted:
					// The decode budget was full: the stream is refused.
					return refused + 1, nil
				}
				return refused, fmt.Errorf("%v (sending: %v)", err, sendErr)
			}
			var m pb.CheckStreamResponse
			if err := proto.Unmarshal(out, &m); err != nil {
				return refused, err
			}
			switch {
			case m.GetError() != nil && m.GetRequestId() == "" && m.GetError().GetCode() == int32(codes.ResourceExhausted):
				refused++
			case m.GetError() != nil:
				return refused, fmt.Errorf("stream item: %v", m.GetError())
			case m.GetResponse().GetDecision() == pb.Decision_DECISION_ALLOW && !byModel(m.GetResponse()):
				return refused, fmt.Errorf("check allowed by %v", m.GetResponse().GetSource())
			}
		}
	}
	refused := 0
	probe(t, g, p, fmt.Sprintf("%d streams holding transcripts of tool calls at the limits", streams), func() {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		var wg sync.WaitGroup
		var mu sync.Mutex
		for s := range streams {
			wg.Go(func() {
				n, err := upload(ctx, s)
				mu.Lock()
				defer mu.Unlock()
				refused += n
				if err != nil {
					t.Errorf("stream %d: %v", s, err)
				}
			})
		}
		wg.Wait()
	})
	if refused == 0 {
		t.Errorf("%d streams of %d entries of 16,000 values were all held: none refused with RESOURCE_EXHAUSTED", streams, maxEntries)
	}
	// Their transcripts went with the streams: one more fits whole, up to
	// what the limit holds.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if n, err := upload(ctx, 9); err != nil {
		t.Errorf("a stream after the others ended: %v", err)
	} else if n >= (maxEntries+perMsg-1)/perMsg {
		t.Errorf("a stream after the others ended had every transcript message refused: the held bytes were not released")
	}
	t.Logf("%d transcript messages refused with RESOURCE_EXHAUSTED", refused)
	took := g.terminate()
	t.Logf("SIGTERM to exit %s", took.Round(time.Millisecond))
}

// TestHostileNonReadingStreams: 400 streams on 8 connections send checks
// and never read the answers (their connections grant the server no more
// than the HTTP/2 default window for answers). The server stops reading
// them once its answers are stuck, and holds no more of what they go on
// sending than its fixed HTTP/2 windows allow; when the clients read at
// last, every check is answered, none ALLOW.
func TestHostileNonReadingStreams(t *testing.T) {
	p := project(t)
	g := startTarget(t, hostileYAML(denyDeployPolicy), "--watch=false")
	const conns, streams, first = 8, 400, 250
	// The first checks of each stream name a relative working directory,
	// refused at once (an INVALID_ARGUMENT item): the server's answers
	// soon fill what the client grants, and it stops reading the stream. The rest are MCP checks of 60 KB (no model is
	// configured: each would be answered at once, not ALLOW), which the
	// server can only leave in its HTTP/2 windows.
	// Encoded once (the server makes up their ids): the clients spend
	// no CPU on them.
	check := func(n int) []byte {
		req := &pb.CheckRequest{WorkingDirectory: p,
			Tool: &pb.ToolCall{Name: "mcp__x__y", Input: &structpb.Struct{Fields: map[string]*structpb.Value{"q": structpb.NewStringValue(strings.Repeat("q", n))}}}}
		if n == 0 {
			req.WorkingDirectory = strings.Repeat("relative/", 450)
		}
		b, err := proto.Marshal(&pb.CheckStreamRequest{Kind: &pb.CheckStreamRequest_Check{Check: req}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	firstMsg, bigMsg := check(0), check(60_000)
	cs := make([]*grpc.ClientConn, conns)
	for i := range cs {
		c, err := grpc.NewClient(g.addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithStaticStreamWindowSize(64<<10), grpc.WithStaticConnWindowSize(64<<10))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = c.Close() }()
		cs[i] = c
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	// First each connection carries a few large checks at full speed, as
	// a busy client's would: HTTP/2 windows the server tunes to the
	// bandwidth grow, up to 16 MiB a stream, for the streams after them.
	large := &pb.CheckRequest{WorkingDirectory: p, Tool: &pb.ToolCall{Name: "TodoWrite"}}
	for range 17 {
		large.Transcript = append(large.Transcript, &pb.TranscriptEntry{Role: pb.Role_ROLE_USER, Text: strings.Repeat("w", 60_000)})
	}
	var warm sync.WaitGroup
	for i := range 2 * conns {
		warm.Go(func() {
			client := pb.NewPermissionServiceClient(cs[i%conns])
			for range 8 {
				if _, err := client.Check(ctx, large); err != nil {
					t.Errorf("a large check: %v", err)
					return
				}
			}
		})
	}
	warm.Wait()
	type sstate struct {
		stream grpc.ClientStream
		sent   atomic.Int64
		done   chan struct{} // the sender stopped and closed its side
	}
	ss := make([]*sstate, streams)
	stopSending := make(chan struct{})
	probe(t, g, p, fmt.Sprintf("%d streams on %d connections that never read", streams, conns), func() {
		for i := range ss {
			st, err := cs[i%conns].NewStream(ctx, &pb.PermissionService_ServiceDesc.Streams[0], pb.PermissionService_CheckStream_FullMethodName, grpc.ForceCodecV2(rawCodec{}))
			if err != nil {
				t.Fatal(err)
			}
			s := &sstate{stream: st, done: make(chan struct{})}
			ss[i] = s
			go func() {
				defer close(s.done)
				for n := 0; ; n++ {
					select {
					case <-stopSending:
						_ = st.CloseSend()
						return
					default:
					}
					m := &bigMsg
					if n < first {
						m = &firstMsg
					}
					if err := st.SendMsg(m); err != nil {
						return
					}
					s.sent.Add(1)
				}
			}()
		}
		time.Sleep(4 * time.Second) // the flood's length: the clients send all along
	})
	var total int64
	for _, s := range ss {
		total += s.sent.Load()
	}
	t.Logf("%d checks sent before the clients read", total)
	// Now they read: every check sent is answered, none ALLOW.
	close(stopSending)
	var wg sync.WaitGroup
	var answered, allowed atomic.Int64
	for i, s := range ss {
		wg.Go(func() {
			for {
				var out []byte
				if err := s.stream.RecvMsg(&out); err != nil {
					if !errors.Is(err, io.EOF) {
						t.Errorf("stream %d: %v", i, err)
					}
					return
				}
				var m pb.CheckStreamResponse
				if err := proto.Unmarshal(out, &m); err != nil {
					t.Error(err)
					return
				}
				answered.Add(1)
				if e := m.GetError(); e != nil && e.GetCode() != int32(codes.InvalidArgument) {
					t.Errorf("stream %d: %s", i, e.GetMessage())
				}
				if m.GetResponse().GetDecision() == pb.Decision_DECISION_ALLOW {
					allowed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	for _, s := range ss {
		<-s.done
	}
	total = 0
	for _, s := range ss {
		total += s.sent.Load()
	}
	if allowed.Load() > 0 || answered.Load() != total {
		t.Errorf("%d checks sent, %d answered, %d ALLOW", total, answered.Load(), allowed.Load())
	}
	took := g.terminate()
	t.Logf("SIGTERM to exit %s", took.Round(time.Millisecond))
}

// TestHostileHeaderFlood: 80 streams on one connection, each a header list
// of one large binary header repeated thousands of times (HPACK sends each
// repeat as a byte or two that refers to its table; grpc-go decodes each
// -bin value anew). The header list limit refuses each stream before its
// headers are kept.
func TestHostileHeaderFlood(t *testing.T) {
	p := project(t)
	g := startTarget(t, hostileYAML(denyDeployPolicy), "--watch=false")
	const streams, repeats = 80, 4000
	value := base64.RawStdEncoding.EncodeToString(bytes.Repeat([]byte{0xa5}, 2900))
	var resets atomic.Int64
	probe(t, g, p, fmt.Sprintf("%d streams of %d repeated 3 KB headers on one connection", streams, repeats), func() {
		c, err := net.Dial("tcp", g.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = c.Close() }()
		if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
			t.Fatal(err)
		}
		fr := http2.NewFramer(c, c)
		// The reader below acknowledges settings on the same framer.
		var wmu sync.Mutex
		write := func(f func() error) error {
			wmu.Lock()
			defer wmu.Unlock()
			return f()
		}
		if err := write(func() error { return fr.WriteSettings() }); err != nil {
			t.Fatal(err)
		}
		// Read what the server sends (settings, resets), acknowledging
		// its settings, until the connection closes.
		readDone := make(chan struct{})
		pinged := make(chan struct{})
		go func() {
			defer close(readDone)
			rf := http2.NewFramer(io.Discard, c)
			for {
				f, err := rf.ReadFrame()
				if err != nil {
					return
				}
				switch f := f.(type) {
				case *http2.SettingsFrame:
					if !f.IsAck() {
						_ = write(fr.WriteSettingsAck)
					}
				case *http2.RSTStreamFrame:
					resets.Add(1)
				case *http2.PingFrame:
					if f.IsAck() {
						close(pinged)
					}
				}
			}
		}()
		var block bytes.Buffer
		enc := hpack.NewEncoder(&block)
		for i := range streams {
			block.Reset()
			for _, hf := range []hpack.HeaderField{
				{Name: ":method", Value: "POST"}, {Name: ":scheme", Value: "http"},
				{Name: ":path", Value: pb.PermissionService_Check_FullMethodName}, {Name: ":authority", Value: g.addr},
				{Name: "content-type", Value: "application/grpc"}, {Name: "te", Value: "trailers"},
			} {
				_ = enc.WriteField(hf)
			}
			for range repeats {
				_ = enc.WriteField(hpack.HeaderField{Name: "x-pad-bin", Value: value})
			}
			frag := block.Bytes()
			id := uint32(2*i + 1)
			// Fragments of the server's default frame size.
			const maxFrame = 16 << 10
			first := frag[:min(len(frag), maxFrame)]
			if err := write(func() error {
				return fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: first, EndHeaders: len(frag) <= maxFrame})
			}); err != nil {
				t.Fatalf("stream %d: %v", i, err)
			}
			for rest := frag[len(first):]; len(rest) > 0; {
				n := min(len(rest), maxFrame)
				if err := write(func() error { return fr.WriteContinuation(id, n == len(rest), rest[:n]) }); err != nil {
					t.Fatalf("stream %d: %v", i, err)
				}
				rest = rest[n:]
			}
		}
		// Streams stay open (no data, no end). The server reads frames in
		// order: its answer to a ping says it has taken in every header
		// list before it.
		if err := write(func() error { return fr.WritePing(false, [8]byte{1}) }); err != nil {
			t.Fatal(err)
		}
		select {
		case <-pinged:
		case <-readDone:
			t.Error("the connection closed before the server answered the ping")
		case <-time.After(30 * time.Second):
			t.Error("no answer to the ping within 30 s")
		}
		_ = c.Close()
		<-readDone
	})
	t.Logf("%d of %d streams reset by the server", resets.Load(), streams)
	took := g.terminate()
	t.Logf("SIGTERM to exit %s", took.Round(time.Millisecond))
}
