package bench

import (
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/toolgate/toolgate/bench/inproc"
	"github.com/toolgate/toolgate/bench/workload"
	"github.com/toolgate/toolgate/fakellm"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// startStack serves toolgate in process, logging to a file as in
// production (the log's cost is part of a check's).
func startStack(b *testing.B) (pb.PermissionServiceClient, []workload.Call) {
	b.Helper()
	dir := b.TempDir()
	project, err := workload.NewProject(dir)
	if err != nil {
		b.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "toolgate.log"))
	if err != nil {
		b.Fatal(err)
	}
	st, err := inproc.Start(inproc.Options{Log: logf})
	if err != nil {
		b.Fatal(err)
	}
	conn, client, err := inproc.Dial(st.Addr)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = conn.Close()
		if err := st.Stop(); err != nil {
			b.Error(err)
		}
		_ = logf.Close()
	})
	mix := workload.Local(project)
	// Measure the paths named, not cheaper ones they fell off.
	for _, c := range mix {
		resp, err := client.Check(b.Context(), c.Req)
		if err != nil || resp.GetDecision() != c.Want || resp.GetSource() != c.Source {
			b.Fatalf("%s: got %v %v (%s), %v; want %v %v", c.Name, resp.GetDecision(), resp.GetSource(), resp.GetReason(), err, c.Want, c.Source)
		}
	}
	return client, mix
}

// BenchmarkServerCheck measures unary checks of the local mix through the
// whole server over loopback TCP, 50 callers at once (client included).
// go test -cpuprofile on it is how the local path is profiled.
func BenchmarkServerCheck(b *testing.B) {
	client, mix := startStack(b)
	var n atomic.Int64
	b.SetParallelism(25) // 50 callers on 2 cores, as in make bench
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(p *testing.PB) {
		for p.Next() {
			c := mix[int(n.Add(1))%len(mix)]
			if _, err := client.Check(b.Context(), c.Req); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkServerCheckStream measures checks of the local mix sent on
// streams, 50 at once, each stream sending and receiving concurrently.
func BenchmarkServerCheckStream(b *testing.B) {
	client, mix := startStack(b)
	var n atomic.Int64
	b.SetParallelism(25)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(p *testing.PB) {
		stream, err := client.CheckStream(b.Context())
		if err != nil {
			b.Error(err)
			return
		}
		sent := 0
		for p.Next() {
			c := mix[int(n.Add(1))%len(mix)]
			if err := stream.Send(&pb.CheckStreamRequest{Kind: &pb.CheckStreamRequest_Check{Check: c.Req}}); err != nil {
				b.Error(err)
				return
			}
			sent++
			if _, err := stream.Recv(); err != nil {
				b.Error(err)
				return
			}
		}
		if err := stream.CloseSend(); err != nil {
			b.Error(err)
		}
		if _, err := stream.Recv(); err != io.EOF {
			b.Errorf("stream ended with %v after %d checks, want EOF", err, sent)
		}
	})
}

// BenchmarkServerClassified measures what toolgate adds on the classifier
// path: a unary check that reaches a fake model answering at once, every
// call different (no cache hit, no coalescing). Prompt building, the
// OpenAI request and its parsing, and the pool are what remains.
func BenchmarkServerClassified(b *testing.B) {
	dir := b.TempDir()
	project, err := workload.NewProject(dir)
	if err != nil {
		b.Fatal(err)
	}
	fake := fakellm.Start(b, fakellm.Always(fakellm.Reply{Reason: "fine"}))
	st, err := inproc.Start(inproc.Options{ClassifierURL: fake.URL()})
	if err != nil {
		b.Fatal(err)
	}
	conn, client, err := inproc.Dial(st.Addr)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = conn.Close()
		if err := st.Stop(); err != nil {
			b.Error(err)
		}
	})
	var n atomic.Int64
	first := workload.Classified(project, -1)
	if resp, err := client.Check(b.Context(), first.Req); err != nil || resp.GetSource() != first.Source {
		b.Fatalf("got %v (%s), %v; want source %v", resp.GetSource(), resp.GetReason(), err, first.Source)
	}
	b.SetParallelism(4) // 8 callers: the default pool's size
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(p *testing.PB) {
		for p.Next() {
			c := workload.Classified(project, int(n.Add(1)))
			resp, err := client.Check(b.Context(), c.Req)
			if err != nil || resp.GetSource() != c.Source {
				b.Errorf("got %v (%s), %v; want source %v", resp.GetSource(), resp.GetReason(), err, c.Source)
				return
			}
		}
	})
}
