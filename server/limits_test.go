package server

import (
	"io"
	"net"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"golang.org/x/net/http2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

func TestMaxRecvMsgBytes(t *testing.T) {
	env := newEnv(t, withConfig(func(c *Config) {
		c.MaxToolInputBytes = 1024
		c.MaxRecvMsgBytes = 32 << 10
	}))
	req := checkReq(t, "", "Write", map[string]any{"file_path": "/p/x", "content": strings.Repeat("x", 64<<10)})
	_, err := env.client.Check(t.Context(), req)
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "larger than max") {
		t.Fatalf("got %v, want ResourceExhausted naming the size", err)
	}
}

func TestMaxTranscriptEntryBytes(t *testing.T) {
	env := newEnv(t, withConfig(func(c *Config) { c.MaxTranscriptEntryBytes = 100 }))
	big := &pb.TranscriptEntry{Role: pb.Role_ROLE_USER, Text: strings.Repeat("y", 101)}
	small := &pb.TranscriptEntry{Role: pb.Role_ROLE_USER, Text: "fix the tests"}

	req := readReq(t)
	req.Transcript = []*pb.TranscriptEntry{small, big}
	_, err := env.client.Check(t.Context(), req)
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "transcript[1] is 101 bytes, over the limit of 100") {
		t.Fatalf("unary: got %v", err)
	}
	req.Transcript = []*pb.TranscriptEntry{small}
	if _, err := env.client.Check(t.Context(), req); err != nil {
		t.Fatalf("entry under the limit: %v", err)
	}

	stream, err := env.client.CheckStream(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&pb.CheckStreamRequest{Kind: &pb.CheckStreamRequest_Transcript{Transcript: &pb.TranscriptAppend{Entries: []*pb.TranscriptEntry{big}}}}); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if e := resp.GetError(); e == nil || codes.Code(e.GetCode()) != codes.InvalidArgument || !strings.Contains(e.GetMessage(), "transcript.entries[0]") {
		t.Fatalf("stream append: %v", resp)
	}
	// The stream goes on after a refused append.
	if err := stream.Send(&pb.CheckStreamRequest{Kind: &pb.CheckStreamRequest_Check{Check: readReq(t)}}); err != nil {
		t.Fatal(err)
	}
	if resp, err := stream.Recv(); err != nil || resp.GetResponse().GetDecision() != pb.Decision_DECISION_ALLOW {
		t.Fatalf("check after a refused append: %v %v", resp, err)
	}
	_ = stream.CloseSend()
	if _, err := stream.Recv(); err != io.EOF {
		t.Fatalf("end of stream: %v", err)
	}
}

// A connection runs at most max_concurrent_streams RPCs; the next one
// waits for a slot, and gets it when the open stream ends. In a synctest
// bubble, synctest.Wait proves the waiting (a deadline on the wall clock
// would pass on a machine too slow to answer in time).
func TestMaxConcurrentStreams(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := newEnv(t, withConfig(func(c *Config) { c.MaxConcurrentStreams = 1 }))
		client := env.client
		// Warm the connection so the server's SETTINGS have arrived.
		if _, err := client.Check(t.Context(), readReq(t)); err != nil {
			t.Fatal(err)
		}
		stream, err := client.CheckStream(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if err := stream.Send(&pb.CheckStreamRequest{Kind: &pb.CheckStreamRequest_Check{Check: readReq(t)}}); err != nil {
			t.Fatal(err)
		}
		if _, err := stream.Recv(); err != nil {
			t.Fatal(err)
		}
		req := readReq(t)
		second := make(chan error, 1)
		go func() {
			_, err := client.Check(t.Context(), req)
			second <- err
		}()
		synctest.Wait()
		select {
		case err := <-second:
			t.Fatalf("second RPC while the stream is open: %v, want it to wait", err)
		default:
		}
		_ = stream.CloseSend()
		if _, err := stream.Recv(); err != io.EOF {
			t.Fatal(err)
		}
		if err := <-second; err != nil {
			t.Fatalf("the waiting RPC, after the stream ended: %v", err)
		}
		if _, err := client.Check(t.Context(), readReq(t)); err != nil {
			t.Fatalf("after the stream ended: %v", err)
		}
	})
}

// A client pinging more often than keepalive.min_time is sent GOAWAY; one
// within it gets its pings answered.
func TestKeepaliveEnforcement(t *testing.T) {
	for _, tt := range []struct {
		name    string
		minTime time.Duration
		goAway  bool
	}{
		{"default min_time", DefaultConfig().Keepalive.MinTime, true},
		{"permissive min_time", time.Nanosecond, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Keepalive.MinTime = tt.minTime
			conn, err := net.Dial("tcp", serveTCP(t, cfg, zap.NewNop()))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
				t.Fatal(err)
			}
			fr := http2.NewFramer(conn, conn)
			if err := fr.WriteSettings(); err != nil {
				t.Fatal(err)
			}
			const pings = 5
			for i := range pings {
				if err := fr.WritePing(false, [8]byte{byte(i)}); err != nil {
					t.Fatal(err)
				}
			}
			acks := 0
			for {
				f, err := fr.ReadFrame()
				if err != nil {
					t.Fatalf("connection ended without GOAWAY after %d ping acks: %v", acks, err)
				}
				switch f := f.(type) {
				case *http2.GoAwayFrame:
					if !tt.goAway {
						t.Fatalf("GOAWAY %v %q for pings within min_time", f.ErrCode, f.DebugData())
					}
					if f.ErrCode != http2.ErrCodeEnhanceYourCalm || string(f.DebugData()) != "too_many_pings" {
						t.Fatalf("GOAWAY %v %q, want ENHANCE_YOUR_CALM too_many_pings", f.ErrCode, f.DebugData())
					}
					return
				case *http2.PingFrame:
					if f.IsAck() {
						if acks++; acks == pings && !tt.goAway {
							return
						}
					}
				}
			}
		})
	}
}

func TestLimitValidation(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"entry bytes", func(c *Config) { c.MaxTranscriptEntryBytes = 0 }, "server.max_transcript_entry_bytes"},
		{"recv below input", func(c *Config) { c.MaxRecvMsgBytes = c.MaxToolInputBytes - 1 }, "server.max_recv_msg_bytes"},
		{"streams", func(c *Config) { c.MaxConcurrentStreams = 0 }, "server.max_concurrent_streams"},
		{"items", func(c *Config) { c.MaxMessageItems = 0 }, "server.max_message_items"},
		{"depth", func(c *Config) { c.MaxValueDepth = -1 }, "server.max_value_depth"},
		{"budget below one request", func(c *Config) { c.DecodeBudgetBytes = 32 << 20 }, "server.decode_budget_bytes"},
		{"stream window", func(c *Config) { c.StreamWindowBytes = 1024 }, "server.stream_window_bytes"},
		{"conn window", func(c *Config) { c.ConnWindowBytes = 0 }, "server.conn_window_bytes"},
		{"header list", func(c *Config) { c.MaxHeaderListBytes = 100 }, "server.max_header_list_bytes"},
		{"keepalive", func(c *Config) { c.Keepalive.MinTime = 0 }, "server.keepalive"},
		{"metrics address", func(c *Config) { c.MetricsListen = "9464" }, "server.metrics_listen"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.mod(&c)
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
}
