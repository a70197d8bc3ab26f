//go:build linux

package resilience

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/toolgate/toolgate/bench/inproc"
	"github.com/toolgate/toolgate/engine"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
	"github.com/toolgate/toolgate/internal/stallfs"
)

// Bounds of the stalled-mount probe.
const (
	// stalledChecks is twice the 8,000 stalled checks that once exhausted
	// the server's threads (Go dies at 10,000).
	stalledChecks = 16_000
	// stalledDeadline is each stalled check's client deadline: an answer
	// must come well before it (engine.fs_timeout is 1s).
	stalledDeadline = 3 * time.Second
	// threadSlack is what the runtime may add to the threads of an idle
	// server besides the stuck workers: a thread per P running while
	// others sit in system calls, and the threads Go parks rather than
	// ends after a burst.
	threadSlack = 32
)

// TestHostileStalledMount: the agent's project holds a link onto a FUSE
// mount that never answers (every system call there blocks, as on a hung
// sshfs or NFS server), and 16,000 checks whose paths lead through it
// (Read, Edit, Glob, Grep, ls, cat, grep -r, git status in the mount)
// arrive at once over several connections and streams. Each must be
// answered in time and never ALLOW; the threads blocked on the mount (the
// kernel counts them) and the process's threads stay bounded by the file-
// system workers; an ordinary check is answered within a second
// throughout; and SIGTERM ends the server within shutdown_timeout while
// its workers are still stuck.
func TestHostileStalledMount(t *testing.T) {
	if err := stallfs.Available(); err != nil {
		t.Skipf("no stalled FUSE mount: %v", err)
	}
	p := project(t)
	mnt := t.TempDir()
	st, err := stallfs.New(mnt)
	if err != nil {
		t.Skipf("no stalled FUSE mount: %v", err)
	}
	// Registered before the server starts, so it runs after the server
	// is gone (cleanups run last-in first-out), and before TempDir's.
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("stallfs: %v", err)
		}
	})
	link := filepath.Join(p, "vendor-cache")
	if err := os.Symlink(mnt, link); err != nil {
		t.Fatal(err)
	}
	g := startTarget(t, hostileYAML(denyDeployPolicy), "--watch=false")
	workers := engine.DefaultFSConfig().Workers // the server's default on this machine
	idleThreads := g.threads()
	threadBound := idleThreads + workers + threadSlack

	// The peak thread count, sampled all along.
	var peakThreads atomic.Int64
	sampleDone := make(chan struct{})
	stopSampling := make(chan struct{})
	go func() {
		defer close(sampleDone)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			if n := int64(g.threads()); n > peakThreads.Load() {
				peakThreads.Store(n)
			}
			select {
			case <-stopSampling:
				return
			case <-tick.C:
			}
		}
	}()

	stalled := func(i int) *pb.CheckRequest {
		f := fmt.Sprintf("f%d.go", i)
		switch i % 8 {
		case 0:
			return shellReq(p, "Read", map[string]any{"file_path": filepath.Join(link, f)})
		case 1:
			return shellReq(p, "Edit", map[string]any{"file_path": filepath.Join(link, f), "old_string": "a", "new_string": "b"})
		case 2:
			return bash(p, "ls -la vendor-cache/d"+strconv.Itoa(i))
		case 3:
			return bash(p, "cat vendor-cache/"+f)
		case 4:
			return bash(p, fmt.Sprintf("grep -rn TODO%d vendor-cache/", i))
		case 5:
			return bash(mnt, fmt.Sprintf("git status --short -- %s", f)) // the working directory is the mount
		case 6:
			return shellReq(p, "Glob", map[string]any{"pattern": fmt.Sprintf("**/*%d.go", i), "path": link})
		default:
			return shellReq(p, "Grep", map[string]any{"pattern": "TODO", "path": filepath.Join(link, "d"+strconv.Itoa(i))})
		}
	}

	var (
		mu       sync.Mutex
		problems []string
		bySource = map[string]int{}
		slowest  time.Duration
	)
	record := func(what string, o outcome) {
		mu.Lock()
		defer mu.Unlock()
		slowest = max(slowest, o.took)
		if o.err != nil {
			bySource["error "+status.Code(o.err).String()]++
		} else {
			bySource[o.resp.GetDecision().String()+" by "+o.resp.GetSource().String()]++
		}
		if msg := hostileProblem(o); msg != "" && len(problems) < 20 {
			problems = append(problems, what+": "+msg)
		}
	}

	// Ordinary checks all along: a read of a project file, answered within
	// a second (ALLOW when a worker is free; ASK while every one is held).
	ordinaryDone := make(chan struct{})
	stopOrdinary := make(chan struct{})
	var ordinary struct {
		n, allowed int
		slowest    time.Duration
		problems   []string
	}
	go func() {
		defer close(ordinaryDone)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), answerDeadline)
			start := time.Now()
			resp, err := g.client.Check(ctx, shellReq(p, "Read", map[string]any{"file_path": filepath.Join(p, "main.go")}))
			took := time.Since(start)
			cancel()
			ordinary.n++
			ordinary.slowest = max(ordinary.slowest, took)
			switch {
			case err != nil:
				ordinary.problems = append(ordinary.problems, fmt.Sprintf("error %v after %s", err, took))
			case took > ordinaryLatency:
				ordinary.problems = append(ordinary.problems, fmt.Sprintf("%v after %s", resp.GetDecision(), took.Round(time.Millisecond)))
			case resp.GetDecision() == pb.Decision_DECISION_ALLOW:
				ordinary.allowed++
			}
			select {
			case <-stopOrdinary:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()

	// The flood: unary checks over several connections, and streams.
	start := time.Now()
	n := scale(stalledChecks)
	const conns, senders = 64, 1024
	clients := make([]pb.PermissionServiceClient, conns)
	for i := range clients {
		conn, client, err := inproc.Dial(g.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		clients[i] = client
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for s := range senders {
		wg.Go(func() {
			client := clients[s%conns]
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), stalledDeadline)
				t0 := time.Now()
				resp, err := client.Check(ctx, stalled(i))
				cancel()
				record("unary", outcome{resp, err, time.Since(t0)})
			}
		})
	}
	const streams, perStream = 4, 100
	for s := range streams {
		wg.Go(func() { g.stalledStream(p, s, perStream, stalled, record) })
	}
	wg.Wait()
	flood := time.Since(start)
	close(stopOrdinary)
	<-ordinaryDone
	close(stopSampling)
	<-sampleDone

	waiting, werr := st.Waiting()
	summary := make([]string, 0, len(bySource))
	for k, v := range bySource {
		summary = append(summary, fmt.Sprintf("%s: %d", k, v))
	}
	sort.Strings(summary)
	t.Logf("%d stalled checks (+%d on %d streams) in %s, slowest %s: %s", n, streams*perStream, streams, flood.Round(time.Millisecond), slowest.Round(time.Millisecond), strings.Join(summary, ", "))
	t.Logf("threads: %d idle, peak %d (bound %d = idle + %d workers + %d); system calls waiting on the mount: %d (err %v)",
		idleThreads, peakThreads.Load(), threadBound, workers, threadSlack, waiting, werr)
	t.Logf("ordinary checks during the flood: %d, %d allowed, slowest %s", ordinary.n, ordinary.allowed, ordinary.slowest.Round(time.Millisecond))
	for _, msg := range problems {
		t.Error(msg)
	}
	for _, msg := range ordinary.problems[:min(len(ordinary.problems), 10)] {
		t.Errorf("an ordinary check during the flood: %s (want an answer within %s)", msg, ordinaryLatency)
	}
	if !g.alive() {
		t.Fatalf("toolgate serve died:\n%s", tail(g.log(), 20))
	}
	if peak := int(peakThreads.Load()); peak > threadBound {
		t.Errorf("toolgate serve reached %d threads, over the bound of %d", peak, threadBound)
	}
	if werr == nil && waiting > workers {
		t.Errorf("%d system calls wait on the stalled mount, more than the %d file-system workers", waiting, workers)
	}
	rss := g.checkRSS("after the flood")
	t.Logf("peak RSS %d MiB", rss>>20)

	// SIGTERM with every worker stuck and stalled checks arriving.
	for i := range 64 {
		go func() { _, _ = g.client.Check(context.Background(), stalled(n+i)) }()
	}
	took := g.terminate()
	t.Logf("SIGTERM to exit %s (shutdown_timeout %s)", took.Round(time.Millisecond), hostileShutdown)

	// SIGTERM while stalled checks wait for their answers, on unary calls
	// and a stream: with a file-system deadline longer than the shutdown
	// timeout, only the shutdown can end them.
	g = startTarget(t, hostileYAML(denyDeployPolicy)+"engine:\n  fs_timeout: 1m\n", "--watch=false")
	var inFlight sync.WaitGroup
	var answered atomic.Int64
	for i := range 2 * workers {
		inFlight.Go(func() {
			_, _ = g.client.Check(context.Background(), stalled(2*n+i))
			answered.Add(1)
		})
	}
	inFlight.Go(func() { g.stalledStream(p, 9, 16, stalled, func(string, outcome) { answered.Add(1) }) })
	// Each check is either held on the mount (a worker's system call) or
	// answered before any (pathcheck refuses the mounts it knows to be
	// foreign): SIGTERM comes once every one is one or the other.
	blocked, err := g.settled(st, &answered, 2*workers+16, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	took = g.terminate()
	inFlight.Wait()
	t.Logf("SIGTERM with %d system calls held on the mount and %d stalled checks answered before it: exit after %s (shutdown_timeout %s)",
		blocked, answered.Load(), took.Round(time.Millisecond), hostileShutdown)
}

// settled waits until the checks sent are all either answered or held on
// the stalled mount (up to the file-system workers), and returns how many
// system calls wait there.
func (g *target) settled(st *stallfs.Stall, answered *atomic.Int64, sent int, timeout time.Duration) (int, error) {
	workers := engine.DefaultFSConfig().Workers
	deadline := time.Now().Add(timeout)
	for {
		w, err := st.Waiting()
		if err != nil {
			return 0, err
		}
		if w >= workers || int(answered.Load())+w >= sent {
			return w, nil
		}
		if time.Now().After(deadline) {
			return w, fmt.Errorf("after %s, %d system calls wait on the mount and %d of %d checks are answered", timeout, w, answered.Load(), sent)
		}
		// Not synctest: the calls are another process's; poll them.
		time.Sleep(10 * time.Millisecond)
	}
}

// stalledStream sends count stalled checks on one stream, at most 16
// unanswered, and records each answer.
func (g *target) stalledStream(p string, s, count int, stalled func(int) *pb.CheckRequest, record func(string, outcome)) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stream, err := g.client.CheckStream(ctx)
	if err != nil {
		record("stream", outcome{err: err})
		return
	}
	window := make(chan struct{}, 16)
	sent := make(map[string]time.Time, count)
	var mu sync.Mutex
	go func() {
		for i := range count {
			select {
			case window <- struct{}{}:
			case <-ctx.Done():
				return
			}
			req := stalled(1_000_000 + s*count + i)
			req.RequestId = fmt.Sprintf("s%d-%d", s, i)
			mu.Lock()
			sent[req.RequestId] = time.Now()
			mu.Unlock()
			if stream.Send(&pb.CheckStreamRequest{Kind: &pb.CheckStreamRequest_Check{Check: req}}) != nil {
				return
			}
		}
		_ = stream.CloseSend()
	}()
	for range count {
		m, err := stream.Recv()
		if err != nil {
			record("stream", outcome{err: status.Error(codes.Unavailable, "stream ended early: "+err.Error())})
			return
		}
		<-window
		mu.Lock()
		took := time.Since(sent[m.GetRequestId()])
		mu.Unlock()
		if e := m.GetError(); e != nil {
			record("stream", outcome{err: status.Error(codes.Code(e.GetCode()), e.GetMessage()), took: took})
			continue
		}
		record("stream", outcome{resp: m.GetResponse(), took: took})
	}
}

// threads is the process's thread count, or 0 once it is gone.
func (g *target) threads() int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", g.pid()))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "Threads:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(rest))
			return n
		}
	}
	return 0
}

// TestHostileSlowLocalWork: the file-system deadline holds in the binary
// for any local work, not only on mounts pathcheck knows to be foreign (a
// local disk that hangs looks local): with engine.fs_timeout at 1ms,
// searches of a tree of 5,000 files and the hostile commands whose checks
// take longer (nested, brace-heavy, long) are answered ASK by the
// file_system source at the deadline, many at once, none allowed, and the
// server serves on.
func TestHostileSlowLocalWork(t *testing.T) {
	p := project(t)
	g := startTarget(t, hostileYAML(denyDeployPolicy)+"engine:\n  fs_timeout: 1ms\n", "--watch=false")
	// A tree of 5,000 files: a search of it proves what it reads entry by
	// entry, milliseconds of work.
	for d := range 50 {
		dir := filepath.Join(p, "tree", fmt.Sprintf("d%d", d))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for f := range 100 {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.go", f)), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	reqs := []*pb.CheckRequest{bash(p, "grep -rn TODO ."), shellReq(p, "Grep", map[string]any{"pattern": "TODO", "path": p}),
		shellReq(p, "Glob", map[string]any{"pattern": "**/*.go"})}
	for _, c := range shellCases() {
		if !c.listing && !strings.Contains(c.name, "over max") {
			reqs = append(reqs, c.req(p))
		}
	}
	var (
		mu       sync.Mutex
		problems []string
		byFS     int
		wg       sync.WaitGroup
	)
	for r := range 4 {
		for i, req := range reqs {
			wg.Go(func() {
				o := g.check(req)
				mu.Lock()
				defer mu.Unlock()
				searches := i < 3 // legitimate: ALLOW when checked in time
				if msg := hostileProblem(o); msg != "" && !(searches && o.err == nil && o.resp.GetDecision() == pb.Decision_DECISION_ALLOW) {
					problems = append(problems, fmt.Sprintf("case %d (round %d): %s", i, r, msg))
				}
				if o.err == nil && o.resp.GetSource() == pb.DecisionSource_DECISION_SOURCE_FILE_SYSTEM {
					byFS++
				}
			})
		}
	}
	wg.Wait()
	t.Logf("%d hostile checks with fs_timeout 1ms: %d answered by the file-system deadline", 4*len(reqs), byFS)
	for _, msg := range problems {
		t.Error(msg)
	}
	if byFS == 0 {
		t.Errorf("no check was answered by the file-system deadline; searching 5,000 files takes far longer than 1ms to check")
	}
	if !g.alive() {
		t.Fatalf("toolgate serve died:\n%s", tail(g.log(), 20))
	}
	rss := g.checkRSS("after the slow checks")
	took := g.terminate()
	t.Logf("peak RSS %d MiB; SIGTERM to exit %s", rss>>20, took.Round(time.Millisecond))
}
