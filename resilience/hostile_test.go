package resilience

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/toolgate/toolgate/fakellm"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// The hostile-input tests send a real toolgate serve process inputs built
// to exhaust it: shell commands nested or repeated tens of thousands of
// times, brace sets that expand to 2^n words, a model endpoint that
// answers garbage or nothing, transcripts at their size limits, protobuf
// that does not decode, a config written in place slowly, and imports
// replaced by a FIFO or /dev/zero. Every check must be answered (a
// decision or an error status) within answerDeadline and never ALLOW; the
// server must go on serving, stay under peakRSSBound, and exit within its
// shutdown timeout on SIGTERM.

// hostileCase is one hostile check.
type hostileCase struct {
	name string
	req  func(project string) *pb.CheckRequest
	// listing marks a call that only lists names (find without an action,
	// the Glob tool): it expands nothing and reads no file, so ALLOW is
	// the right answer; what is tested is that it comes at once, bounded.
	listing bool
}

// nest is open n times, mid, then close n times.
func nest(open, mid, close string, n int) string {
	var b strings.Builder
	b.Grow(n*(len(open)+len(close)) + len(mid))
	for range n {
		b.WriteString(open)
	}
	b.WriteString(mid)
	for range n {
		b.WriteString(close)
	}
	return b.String()
}

// braces is n brace sets, {a,b}{a,b}..., which bash expands to 2^n words.
func braces(n int) string { return strings.Repeat("{a,b}", n) }

// The largest counts keep a command under max_tool_input_bytes (256 KiB
// of encoded input); the smaller ones are the sizes a parser's recursion
// first suffers from.
func shellCases() []hostileCase {
	cmd := func(name, command string) hostileCase {
		return hostileCase{name: name, req: func(p string) *pb.CheckRequest { return bash(p, command) }}
	}
	tool := func(name, tool string, in map[string]any) hostileCase {
		return hostileCase{name: name, req: func(p string) *pb.CheckRequest { return shellReq(p, tool, in) }}
	}
	listing := func(c hostileCase) hostileCase { c.listing = true; return c }
	const rm = "rm -f main.go" // what the nesting hides: never read-only
	return []hostileCase{
		cmd("arithmetic nested 20k", "echo $(( "+nest("(", "1", ")", 20_000)+" ))"),
		cmd("arithmetic nested 100k", "echo $(( "+nest("(", "1", ")", 100_000)+" ))"),
		cmd("command substitutions nested 20k", "echo "+nest("$(", rm, ")", 20_000)),
		cmd("command substitutions nested 80k", "echo "+nest("$(", rm, ")", 80_000)),
		cmd("process substitutions nested 30k", "cat "+nest("<(cat ", "x; "+rm, ")", 30_000)),
		cmd("brace groups nested 45k", nest("{ ", rm, "; }", 45_000)),
		cmd("subshells nested 60k", nest("( ", rm, " )", 60_000)),
		cmd("echo 300 brace sets", "echo "+braces(300)),
		cmd("echo 48k brace sets", "echo "+braces(48_000)),
		listing(cmd("find -name 300 brace sets", "find . -name '"+braces(300)+"'")),
		listing(cmd("find -name 48k brace sets", "find . -name '"+braces(48_000)+"'")),
		tool("Grep glob 300 brace sets", "Grep", map[string]any{"pattern": "TODO", "glob": braces(300)}),
		tool("Grep glob 48k brace sets", "Grep", map[string]any{"pattern": "TODO", "glob": braces(48_000)}),
		listing(tool("Glob pattern 300 brace sets", "Glob", map[string]any{"pattern": braces(300)})),
		listing(tool("Glob pattern 48k brace sets", "Glob", map[string]any{"pattern": braces(48_000)})),
		cmd("cd chain 10k", strings.Repeat("cd a && cd b && ", 5_000)+"ls"),
		cmd("cd chain 20k then a secret", strings.Repeat("cd src && cd .. && ", 10_000)+"cat .env"),
		cmd("long word 250k", "touch "+strings.Repeat("a", 250_000)),
		cmd("long path 240k to a secret", "cat ./"+strings.Repeat("./", 120_000)+".env"),
		cmd("long path 240k of x/.. to a secret", "cat "+strings.Repeat("x/../", 48_000)+".env"),
		cmd("40k pipes into sh", strings.Repeat("cat | ", 40_000)+"sh"),
		cmd("sh piped through 40k cats", "sh | "+strings.Repeat("cat | ", 40_000)+"cat"),
		// Each list is two protobuf levels: 9,800 of the 10,000 allowed.
		tool("input nested 4,900 lists deep", "Bash", map[string]any{"command": rm, "x": nestedAny(4_900)}),
		cmd("command over max_tool_input_bytes", "echo "+strings.Repeat("a", 300_000)),
		cmd("message over max_recv_msg_bytes", "echo "+strings.Repeat("a", 5<<20)),
	}
}

// nestedAny is a JSON value of lists depth deep.
func nestedAny(depth int) any {
	var v any = "x"
	for range depth {
		v = []any{v}
	}
	return v
}

// freshRSS is the resident memory past which TestHostileShell gives the
// next case a fresh server: a Go process keeps what a case made it take
// for a while, and the next case's peak should be its own.
const freshRSS = 96 << 20

// TestHostileShell sends each hostile command to toolgate serve with the
// embedded default policy, one at a time, then checks that the server
// still serves. A case that crashes the server, or leaves it without an
// answer, is reported with the server's output and run on no further:
// the next case gets a fresh server, as it does when the server kept
// much memory from the case before.
func TestHostileShell(t *testing.T) {
	p := project(t)
	cfg := hostileYAML(denyDeployPolicy)
	g := startTarget(t, cfg, "--watch=false")
	var maxTook time.Duration
	var maxRSS int64
	restart := func(why string) {
		t.Helper()
		if rss, err := g.peakRSS(); err == nil {
			maxRSS = max(maxRSS, rss)
		}
		t.Logf("restarting toolgate serve: %s", why)
		g.kill()
		g = startTarget(t, cfg, "--watch=false")
	}
	for _, c := range shellCases() {
		if rss, err := procStatusBytes(g.pid(), "VmRSS"); err == nil && rss > freshRSS {
			restart(fmt.Sprintf("it holds %d MiB before %q", rss>>20, c.name))
		}
		failed := ""
		t.Run(c.name, func(t *testing.T) {
			req := c.req(p)
			base, err := g.resetPeak()
			if err != nil {
				t.Fatalf("resetting the peak RSS: %v", err)
			}
			o := g.check(req)
			maxTook = max(maxTook, o.took)
			peak := g.casePeak()
			t.Logf("%s; peak RSS %d MiB (%d MiB before)", o, peak>>20, base>>20)
			if msg := hostileProblem(o); msg != "" && !(c.listing && o.err == nil && o.resp.GetDecision() == pb.Decision_DECISION_ALLOW) {
				t.Error(msg)
			}
			if peak > peakRSSBound {
				t.Errorf("peak RSS of toolgate serve %d MiB, over the bound of %d MiB", peak>>20, peakRSSBound>>20)
			}
			switch {
			case g.killedByWatchdog() > 0:
				t.Errorf("toolgate serve killed when its RSS reached %d MiB", g.killedByWatchdog()>>20)
				failed = "its RSS ran away"
			case !g.alive():
				t.Errorf("toolgate serve exited; its output:\n%s", tail(g.log(), 15))
				failed = "it exited"
			case o.err != nil && hostileProblem(o) != "":
				failed = "it did not answer in time"
			default:
				if err := g.harmless(p); err != nil {
					t.Errorf("after this case: %v", err)
					failed = "it stopped serving"
				}
			}
		})
		if failed != "" {
			// So that one failure does not slow or fail the next cases.
			restart(fmt.Sprintf("after %q, %s", c.name, failed))
		}
	}
	if err := g.harmless(p); err != nil {
		t.Errorf("after all cases: %v", err)
	}
	if rss, err := g.peakRSS(); err == nil {
		maxRSS = max(maxRSS, rss) // each case's was checked
	}
	took := g.terminate()
	t.Logf("slowest answer %s; peak RSS %d MiB (bound %d MiB); SIGTERM to exit %s",
		maxTook.Round(time.Millisecond), maxRSS>>20, peakRSSBound>>20, took.Round(time.Millisecond))
}

// TestHostileProtobuf: requests that do not decode (invalid UTF-8 in a
// string, nesting past protobuf's recursion limit of 10,000) are
// INVALID_ARGUMENT, on unary calls and streams, and the server serves on.
func TestHostileProtobuf(t *testing.T) {
	p := project(t)
	g := startTarget(t, hostileYAML(denyDeployPolicy), "--watch=false")
	valid := rawCheck(wireField(3, []byte("x")))
	cases := []struct {
		name string
		req  []byte
	}{
		{"invalid UTF-8 in request_id", append(wireField(1, []byte("id\xff\xfe")), valid[4:]...)},
		{"invalid UTF-8 in the tool input", rawCheck(wireField(3, []byte("rm -rf \xc0/")))},
		{"invalid UTF-8 in a Struct key", rawCheck(wireField(5, wireField(1, append(wireField(1, []byte("k\xff")), wireField(2, wireField(3, []byte("x")))...))))},
		{"lists nested 10,001 deep", rawCheck(nestedLists(10_001))},
		{"structs nested 10,001 deep", rawCheck(nestedStructs(10_001))},
		{"lists nested 100,000 deep", rawCheck(nestedLists(100_000))},
	}
	// The same encodings, shallower, decode: the errors below are the
	// nesting's, not the encoder's.
	for name, v := range map[string][]byte{"lists": nestedLists(100), "structs": nestedStructs(100)} {
		ctx, cancel := context.WithTimeout(t.Context(), answerDeadline)
		var out []byte
		req := rawCheck(v)
		err := g.conn.Invoke(ctx, pb.PermissionService_Check_FullMethodName, &req, &out, grpc.ForceCodecV2(rawCodec{}))
		cancel()
		var resp pb.CheckResponse
		if err == nil {
			err = proto.Unmarshal(out, &resp)
		}
		if err != nil || resp.GetDecision() == pb.Decision_DECISION_UNSPECIFIED {
			t.Fatalf("%s nested 100 deep: %v, %v; want a decision", name, &resp, err)
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), answerDeadline)
			defer cancel()
			var out []byte
			start := time.Now()
			err := g.conn.Invoke(ctx, pb.PermissionService_Check_FullMethodName, &c.req, &out, grpc.ForceCodecV2(rawCodec{}))
			t.Logf("unary: %v after %s", err, time.Since(start).Round(time.Millisecond))
			if status.Code(err) != codes.InvalidArgument {
				t.Errorf("unary: %v, want InvalidArgument", err)
			}
			stream, err := g.conn.NewStream(ctx, &pb.PermissionService_ServiceDesc.Streams[0], pb.PermissionService_CheckStream_FullMethodName, grpc.ForceCodecV2(rawCodec{}))
			if err != nil {
				t.Fatal(err)
			}
			msg := wireField(2, c.req) // CheckStreamRequest.check
			if err := stream.SendMsg(&msg); err != nil && !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			if err := stream.RecvMsg(&out); status.Code(err) != codes.InvalidArgument {
				t.Errorf("stream: %v, want InvalidArgument", err)
			}
			if !g.alive() {
				t.Fatalf("toolgate serve exited:\n%s", tail(g.log(), 15))
			}
		})
	}
	if err := g.harmless(p); err != nil {
		t.Errorf("after the undecodable requests: %v", err)
	}
	rss := g.checkRSS("after the undecodable requests")
	took := g.terminate()
	t.Logf("peak RSS %d MiB; SIGTERM to exit %s", rss>>20, took.Round(time.Millisecond))
}

// faultMarker in a check's input makes the fake answer with fault f.
func faultMarker(f fakellm.Fault) string { return "fault=" + string(f) + ";" }

// faultHandler answers with the fault whose marker the user text holds,
// and normally otherwise.
func faultHandler(r *fakellm.Request) fakellm.Reply {
	for _, f := range fakellm.Faults {
		if strings.Contains(r.User, faultMarker(f)) {
			return fakellm.Reply{Fault: f}
		}
	}
	if strings.Contains(r.User, hangMarker) {
		return fakellm.Reply{Fault: fakellm.FaultHang}
	}
	return fakellm.Reply{Reason: "fine"}
}

// classifierYAML is a classifier section with the fake as its only
// backend, the given classification timeout, and a breaker that never
// opens (every fault must reach the fake).
func classifierYAML(url string, timeout time.Duration) string {
	return fmt.Sprintf(`classifier:
  backends:
    - {name: fake, base_url: %q, model: fake, api_key_env: OPENAI_API_KEY, max_concurrent: 64}
  timeout: %s
  queue_timeout: 1s
  breaker: {failures: 1000000, cooldown: 1s}
`, url, timeout)
}

// TestHostileClassifier: checks that need the model, while it misbehaves
// in every way fakellm knows (hostile bodies included: JSON null, 128 MiB
// of whitespace, a gzip bomb, a byte every 100 ms), fail closed in time,
// never ALLOW, and the server neither crashes nor bloats.
func TestHostileClassifier(t *testing.T) {
	p := project(t)
	f := startFake(t, faultHandler, 0)
	g := startTarget(t, hostileYAML(classifierYAML(f.url, 2*time.Second)+"policies:\n  default: {}\n"), "--watch=false")

	// The model decides when it answers: the failures below are its.
	if o := g.check(bash(p, "make deploy healthy")); o.err != nil || o.resp.GetDecision() != pb.Decision_DECISION_ALLOW || o.resp.GetSource() != pb.DecisionSource_DECISION_SOURCE_CLASSIFIER {
		t.Fatalf("with a healthy model: %s; want ALLOW by the classifier", o)
	}
	var maxTook time.Duration
	phase := func(faults ...fakellm.Fault) {
		t.Helper()
		type result struct {
			what string
			o    outcome
		}
		var reqs []result
		for _, fl := range faults {
			reqs = append(reqs,
				result{fmt.Sprintf("%s: Bash make deploy", fl), outcome{}},
				result{fmt.Sprintf("%s: mcp__x__y", fl), outcome{}})
		}
		var wg sync.WaitGroup
		for i := range reqs {
			fl := faults[i/2]
			req := bash(p, "make deploy "+faultMarker(fl))
			if i%2 == 1 {
				req = shellReq(p, "mcp__x__y", map[string]any{"query": faultMarker(fl)})
			}
			wg.Go(func() { reqs[i].o = g.check(req) })
		}
		wg.Wait()
		for _, r := range reqs {
			maxTook = max(maxTook, r.o.took)
			t.Logf("%s: %s", r.what, r.o)
			if msg := hostileProblem(r.o); msg != "" {
				t.Errorf("%s: %s", r.what, msg)
			}
		}
		if !g.alive() {
			t.Fatalf("toolgate serve exited:\n%s", tail(g.log(), 15))
		}
		rss, _ := g.peakRSS()
		t.Logf("peak RSS after %v: %d MiB", faults, rss>>20)
	}
	var light []fakellm.Fault
	for _, fl := range fakellm.Faults {
		if fl != fakellm.FaultOversized && fl != fakellm.FaultGzipBomb {
			light = append(light, fl)
		}
	}
	// The faults that send hundreds of MiB one at a time, so that a peak
	// past the bound is theirs.
	phase(light...)
	phase(fakellm.FaultOversized)
	phase(fakellm.FaultGzipBomb)
	if n := f.Count(); n < len(fakellm.Faults)*2 {
		t.Errorf("the fake got %d requests for %d faulty checks: not every fault was exercised", n, len(fakellm.Faults)*2)
	}
	if err := g.harmless(p); err != nil {
		t.Errorf("after the faults: %v", err)
	}
	rss := g.checkRSS("after the model's faults")
	took := g.terminate()
	t.Logf("slowest answer %s; peak RSS %d MiB; SIGTERM to exit %s", maxTook.Round(time.Millisecond), rss>>20, took.Round(time.Millisecond))
}

// transcriptLimits are the default server limits a transcript can reach.
const (
	maxEntries    = 500
	maxEntryBytes = 64 << 10
	// entriesPerMsg keeps a transcript message under max_recv_msg_bytes.
	entriesPerMsg = 60
)

// uploadTranscript sends maxEntries entries of maxEntryBytes, alternating
// user and assistant, in messages under max_recv_msg_bytes.
func uploadTranscript(stream pb.PermissionService_CheckStreamClient, s int) error {
	word := fmt.Sprintf("stream %d says hello; ", s)
	text := strings.Repeat(word, maxEntryBytes/len(word)+1)[:maxEntryBytes]
	for sent := 0; sent < maxEntries; {
		n := min(entriesPerMsg, maxEntries-sent)
		entries := make([]*pb.TranscriptEntry, n)
		for i := range entries {
			role := pb.Role_ROLE_USER
			if (sent+i)%2 == 1 {
				role = pb.Role_ROLE_ASSISTANT
			}
			entries[i] = &pb.TranscriptEntry{Role: role, Text: text}
		}
		if err := stream.Send(&pb.CheckStreamRequest{Kind: &pb.CheckStreamRequest_Transcript{Transcript: &pb.TranscriptAppend{Entries: entries}}}); err != nil {
			return err
		}
		sent += n
	}
	return nil
}

// streamRun is what one transcript stream got.
type streamRun struct {
	answered     int
	itemErrs     map[codes.Code]int // errors for messages that are not checks
	checkErrs    []string
	maxLatency   time.Duration
	unanswered   int
	end          error
	hostileIssue []string
}

// runTranscriptStream uploads a full transcript, then sends checks tiny
// checks (a Read of a project file, and every tenth an MCP tool the model
// decides), at most 8 unanswered at a time, and reads every answer.
func runTranscriptStream(ctx context.Context, g *target, p string, s, checks int) *streamRun {
	res := &streamRun{itemErrs: map[codes.Code]int{}}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	stream, err := g.client.CheckStream(ctx)
	if err != nil {
		res.end = err
		return res
	}
	sent := map[string]time.Time{}
	var mu sync.Mutex
	window := make(chan struct{}, 8)
	recvDone := make(chan struct{})
	go func() {
		defer close(recvDone)
		for {
			m, err := stream.Recv()
			if err != nil {
				if !errors.Is(err, io.EOF) {
					res.end = err
				}
				return
			}
			id := m.GetRequestId()
			if id == "" {
				res.itemErrs[codes.Code(m.GetError().GetCode())]++
				continue
			}
			mu.Lock()
			lat := time.Since(sent[id])
			delete(sent, id)
			mu.Unlock()
			res.maxLatency = max(res.maxLatency, lat)
			if e := m.GetError(); e != nil {
				res.checkErrs = append(res.checkErrs, fmt.Sprintf("%s: %s %s", id, codes.Code(e.GetCode()), e.GetMessage()))
			} else {
				res.answered++
				if lat > answerDeadline {
					res.hostileIssue = append(res.hostileIssue, fmt.Sprintf("%s answered after %s", id, lat.Round(time.Millisecond)))
				}
			}
			<-window
		}
	}()
	send := func() error {
		if err := stream.Send(&pb.CheckStreamRequest{Kind: &pb.CheckStreamRequest_Session{Session: &pb.SessionContext{WorkingDirectory: p}}}); err != nil {
			return err
		}
		if err := uploadTranscript(stream, s); err != nil {
			return err
		}
		for i := range checks {
			select {
			case window <- struct{}{}:
			case <-recvDone:
				return errors.New("the stream ended before every check was sent")
			}
			id := fmt.Sprintf("s%d-%d", s, i)
			req := shellReq("", "Read", map[string]any{"file_path": filepath.Join(p, "main.go")})
			if i%10 == 9 {
				req = shellReq("", "mcp__x__y", map[string]any{"query": id})
			}
			req.RequestId = id
			mu.Lock()
			sent[id] = time.Now()
			mu.Unlock()
			if err := stream.Send(&pb.CheckStreamRequest{Kind: &pb.CheckStreamRequest_Check{Check: req}}); err != nil {
				return err
			}
		}
		return stream.CloseSend()
	}
	sendErr := send()
	if sendErr != nil {
		cancel() // else the server waits for more, and so does Recv
	}
	<-recvDone
	if sendErr != nil {
		res.end = fmt.Errorf("sending: %w (receiving: %v)", sendErr, res.end)
	}
	mu.Lock()
	res.unanswered = len(sent)
	mu.Unlock()
	return res
}

// TestHostileTranscripts: a stream that uploads a transcript at its limits
// (500 entries of 64 KiB) and then sends many tiny checks gets each
// answered quickly; several such streams at once run into
// max_held_transcript_bytes and get RESOURCE_EXHAUSTED for the transcripts
// past it, while the server stays under the RSS bound.
func TestHostileTranscripts(t *testing.T) {
	p := project(t)
	f := startFake(t, fakellm.DefaultHandler, 0)
	g := startTarget(t, hostileYAML(classifierYAML(f.url, 2*time.Second)+denyDeployPolicy), "--watch=false")

	check := func(what string, r *streamRun, checks int) {
		t.Helper()
		t.Logf("%s: %d answered, slowest %s, item errors %v, ended with %v", what, r.answered, r.maxLatency.Round(time.Millisecond), r.itemErrs, r.end)
		if r.end != nil {
			t.Errorf("%s: the stream ended with %v", what, r.end)
		}
		for _, e := range r.checkErrs {
			t.Errorf("%s: a tiny check got an error: %s", what, e)
		}
		for _, e := range r.hostileIssue {
			t.Errorf("%s: %s", what, e)
		}
		if r.answered+len(r.checkErrs) != checks || r.unanswered != 0 {
			t.Errorf("%s: %d checks sent, %d answered, %d never", what, checks, r.answered+len(r.checkErrs), r.unanswered)
		}
		for code, n := range r.itemErrs {
			if code != codes.ResourceExhausted {
				t.Errorf("%s: %d transcript messages refused with %s; want only RESOURCE_EXHAUSTED", what, n, code)
			}
		}
	}

	one := runTranscriptStream(t.Context(), g, p, 0, 300)
	check("one stream with a full transcript", one, 300)
	if n := one.itemErrs[codes.ResourceExhausted]; n != 0 {
		t.Errorf("one stream's full transcript (32 MiB) was refused %d times; the default holds 64 MiB", n)
	}
	rss1, _ := g.peakRSS()
	t.Logf("peak RSS after one stream: %d MiB", rss1>>20)

	const streams = 4
	runs := make([]*streamRun, streams)
	var wg sync.WaitGroup
	for s := range streams {
		wg.Go(func() { runs[s] = runTranscriptStream(t.Context(), g, p, s+1, 40) })
	}
	wg.Wait()
	exhausted := 0
	for s, r := range runs {
		check(fmt.Sprintf("stream %d of %d", s+1, streams), r, 40)
		exhausted += r.itemErrs[codes.ResourceExhausted]
	}
	if exhausted == 0 {
		t.Errorf("%d streams held %d full transcripts (128 MiB) without a RESOURCE_EXHAUSTED; max_held_transcript_bytes is 64 MiB", streams, streams)
	}
	// Their transcripts are let go with the streams: a new one fits.
	again := runTranscriptStream(t.Context(), g, p, 9, 20)
	check("a stream after the others ended", again, 20)
	if n := again.itemErrs[codes.ResourceExhausted]; n != 0 {
		t.Errorf("a stream after the others ended was refused its transcript %d times: the held bytes were not released", n)
	}
	if f.Count() == 0 {
		t.Error("no check reached the model: the transcripts were never read for a prompt")
	}
	if err := g.harmless(p); err != nil {
		t.Errorf("after the transcripts: %v", err)
	}
	rss := g.checkRSS("after the transcripts")
	took := g.terminate()
	t.Logf("%d transcript messages refused with RESOURCE_EXHAUSTED; peak RSS %d MiB; SIGTERM to exit %s", exhausted, rss>>20, took.Round(time.Millisecond))
}

// TestHostileSlowConfigWrite: the config is rewritten in place, a line
// every 250 ms, the new file starting with a valid config that would
// allow make deploy and ending with the deny rule that refuses it.
// make deploy is checked all along: no answer may be ALLOW, and once the
// file is complete the new config (with its extra policy) is loaded.
func TestHostileSlowConfigWrite(t *testing.T) {
	p := project(t)
	newLines := []string{
		"server:\n",
		"  listen: 127.0.0.1:0\n",
		"  shutdown_timeout: " + hostileShutdown.String() + "\n",
		"policies:\n",
		"  default:\n",
		"    permissions:\n",
		"      allow:\n",
		"        - Bash(make deploy)\n",
		"      deny:\n",
		"        - Bash(make deploy)\n",
		"  other: {}\n",
	}
	deploy := bash(p, "make deploy")

	// The first part of the new file is a config that allows make deploy:
	// loading it half written would be the bug under test.
	prefix := startTarget(t, strings.Join(newLines[:8], ""), "--watch=false")
	if o := prefix.check(deploy); o.err != nil || o.resp.GetDecision() != pb.Decision_DECISION_ALLOW {
		t.Fatalf("the first part of the new config: make deploy got %s, want ALLOW (else this test proves nothing)", o)
	}
	prefix.terminate()

	g := startTarget(t, hostileYAML(denyDeployPolicy))
	if o := g.check(deploy); o.err != nil || o.resp.GetDecision() != pb.Decision_DECISION_DENY {
		t.Fatalf("before the write: make deploy got %s, want DENY", o)
	}
	reloadsBefore := g.countLog("config reloaded", "")

	var (
		mu       sync.Mutex
		outcomes []outcome
		stop     atomic.Bool
	)
	var wg sync.WaitGroup
	wg.Go(func() {
		for !stop.Load() {
			o := g.check(deploy)
			mu.Lock()
			outcomes = append(outcomes, o)
			mu.Unlock()
			// Pacing, not waiting: a check every 10ms of real time, as the
			// write below is paced in real time for a real process to see.
			time.Sleep(10 * time.Millisecond)
		}
	})
	// In place: truncate, then a line at a time.
	file, err := os.OpenFile(g.cfg, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The slow writer is the fault under test: another process (toolgate
	// serve, watching the file) must see each partial file, so the pauses
	// are real time, which synctest cannot fake for it.
	time.Sleep(250 * time.Millisecond)
	for _, line := range newLines {
		if _, err := file.WriteString(line); err != nil {
			t.Fatal(err)
		}
		time.Sleep(250 * time.Millisecond) // real time, as above: the file's pace is the fault
	}
	if err := file.Close(); err != nil {
		t.Fatal(err)
	}
	written := time.Now()

	// The new config is loaded once the file has settled: the policy it
	// adds answers.
	other := bash(p, "make deploy")
	other.Policy = "other"
	var loadedAfter time.Duration
	for deadline := time.Now().Add(20 * time.Second); ; {
		o := g.check(other)
		if o.err == nil {
			loadedAfter = time.Since(written)
			break
		}
		if time.Now().After(deadline) {
			stop.Store(true)
			wg.Wait()
			t.Fatalf("the complete new config was not loaded within 20 s of the write (last: %s)\n%s", o, tail(g.log(), 15))
		}
		// Not synctest: the reload happens in another process; poll for it.
		time.Sleep(50 * time.Millisecond)
	}
	// A few more checks with the new config in place.
	mu.Lock()
	loaded := len(outcomes)
	mu.Unlock()
	for deadline := time.Now().Add(20 * time.Second); ; {
		mu.Lock()
		n := len(outcomes)
		mu.Unlock()
		if n >= loaded+5 {
			break
		}
		if time.Now().After(deadline) {
			stop.Store(true)
			wg.Wait()
			t.Fatalf("only %d checks answered in 20 s after the new config loaded, want 5", n-loaded)
		}
		// Not synctest: the checks go to another process; poll their count.
		time.Sleep(10 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()

	counts := map[string]int{}
	var maxTook time.Duration
	for _, o := range outcomes {
		maxTook = max(maxTook, o.took)
		if o.err != nil {
			counts["error"]++
			t.Errorf("make deploy during the write: %s", o)
			continue
		}
		counts[o.resp.GetDecision().String()]++
		if o.resp.GetDecision() == pb.Decision_DECISION_ALLOW {
			t.Errorf("make deploy during the write: %s", o)
		}
	}
	if o := g.check(deploy); o.err != nil || o.resp.GetDecision() != pb.Decision_DECISION_DENY {
		t.Errorf("after the write: make deploy got %s, want DENY", o)
	}
	if err := g.harmless(p); err != nil {
		t.Errorf("after the write: %v", err)
	}
	rss := g.checkRSS("after the slow write")
	took := g.terminate()
	t.Logf("%d checks of make deploy during the write: %v; slowest %s; new config loaded %s after the last byte (%d reloads); peak RSS %d MiB; SIGTERM to exit %s",
		len(outcomes), counts, maxTook.Round(time.Millisecond), loadedAfter.Round(time.Millisecond), g.countLog("config reloaded", "")-reloadsBefore, rss>>20, took.Round(time.Millisecond))
}

// TestHostileSettingsImport: the Claude Code settings file a policy
// imports is replaced by a FIFO, then by a symlink to /dev/zero. The
// reloads that follow (a file change, then SIGHUP) are refused without
// wedging: the server keeps answering with the running config, a later
// SIGHUP loads a valid file again, and SIGTERM ends the process within
// shutdown_timeout.
func TestHostileSettingsImport(t *testing.T) {
	p := project(t)
	dir := t.TempDir()
	settings := filepath.Join(dir, "settings.json")
	writeSettings := func(rule string) {
		t.Helper()
		tmp := settings + ".tmp"
		if err := os.WriteFile(tmp, []byte(`{"permissions": {"deny": ["`+rule+`"]}}`), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, settings); err != nil {
			t.Fatal(err)
		}
	}
	writeSettings("Bash(make release)")
	cfg := filepath.Join(dir, "toolgate.yaml")
	if err := os.WriteFile(cfg, []byte(hostileYAML("policies:\n  default:\n    claude_settings: settings.json\n    permissions: {deny: [\"Bash(make deploy)\"]}\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	g := startTargetAt(t, cfg)
	denied := func(when string, commands ...string) {
		t.Helper()
		for _, c := range commands {
			if o := g.check(bash(p, c)); o.err != nil || o.resp.GetDecision() != pb.Decision_DECISION_DENY {
				t.Errorf("%s: %s got %s, want DENY", when, c, o)
			}
		}
		if err := g.harmless(p); err != nil {
			t.Errorf("%s: %v", when, err)
		}
	}
	denied("at start", "make deploy", "make release")

	// replace puts a new file in place of the settings file in one
	// rename; create makes it at the given path.
	replace := func(create func(path string) error) {
		t.Helper()
		tmp := settings + ".new"
		if err := create(tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, settings); err != nil {
			t.Fatal(err)
		}
	}
	// refused replaces the settings file and waits for the reload that
	// change triggers to be refused, then for a SIGHUP's.
	refused := func(what string, create func(path string) error) {
		t.Helper()
		n := g.countLog("config reload rejected", "file change")
		replace(create)
		for _, trigger := range []string{"file change", "SIGHUP"} {
			if trigger == "SIGHUP" {
				n = g.countLog("config reload rejected", trigger)
				if err := g.cmd.Process.Signal(syscall.SIGHUP); err != nil {
					t.Fatal(err)
				}
			}
			start := time.Now()
			m, err := g.waitLog("config reload rejected", trigger, n, 15*time.Second)
			if err != nil {
				t.Fatalf("settings replaced by %s: %v\n%s", what, err, tail(g.log(), 15))
			}
			t.Logf("settings replaced by %s: the reload on %s refused within %s: %v", what, trigger, time.Since(start).Round(time.Millisecond), m["error"])
		}
		denied("with settings replaced by "+what, "make deploy", "make release")
	}

	refused("a FIFO", func(path string) error { return syscall.Mkfifo(path, 0o600) })
	refused("a symlink to /dev/zero", func(path string) error { return os.Symlink("/dev/zero", path) })

	// A valid file again: the change reloads it, and so does a later SIGHUP.
	n := g.countLog("config reloaded", "")
	writeSettings("Bash(make publish)")
	if _, err := g.waitLog("config reloaded", "", n, 15*time.Second); err != nil {
		t.Errorf("a valid settings file again: %v\n%s", err, tail(g.log(), 15))
	}
	n = g.countLog("config reloaded", "SIGHUP")
	if err := g.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if _, err := g.waitLog("config reloaded", "SIGHUP", n, 15*time.Second); err != nil {
		t.Errorf("a SIGHUP after the FIFO and /dev/zero was not handled: %v\n%s", err, tail(g.log(), 15))
	}
	denied("with a valid settings file again", "make deploy", "make publish")

	rss := g.checkRSS("after the FIFO and /dev/zero imports")
	took := g.terminate()
	t.Logf("peak RSS %d MiB; SIGTERM to exit %s (shutdown_timeout %s)", rss>>20, took.Round(time.Millisecond), hostileShutdown)
}

// TestHostileSIGTERM sends SIGTERM while hostile checks are in flight,
// on unary calls and a stream: checks waiting on a model that never
// answers, and the hostile commands of shellCases (nested, brace-heavy,
// long), which keep the engine busy. The process must exit within
// shutdown_timeout (plus a margin); no local stage may answer ALLOW (the
// fake model allows what it does not recognise), and each check must end
// with an answer or an error, not a hang.
func TestHostileSIGTERM(t *testing.T) {
	t.Run("model hangs", func(t *testing.T) { sigtermInFlight(t, false) })
	t.Run("hostile commands", func(t *testing.T) { sigtermInFlight(t, true) })
}

// byModel reports a decision the classifier made (or its cache).
func byModel(r *pb.CheckResponse) bool {
	src := r.GetSource()
	return src == pb.DecisionSource_DECISION_SOURCE_CLASSIFIER || src == pb.DecisionSource_DECISION_SOURCE_CACHE
}

func sigtermInFlight(t *testing.T, commands bool) {
	p := project(t)
	f := startFake(t, faultHandler, 0)
	// The model's hangs outlast shutdown_timeout: the drain has to cut them.
	g := startTarget(t, hostileYAML(classifierYAML(f.url, 4*time.Second)+denyDeployPolicy), "--watch=false")

	var reqs []*pb.CheckRequest
	hang := func(tag string) *pb.CheckRequest {
		return shellReq(p, "mcp__x__y", map[string]any{"query": hangMarker + " " + tag})
	}
	if commands {
		for _, c := range shellCases() {
			if !strings.Contains(c.name, "over max") && !c.listing {
				reqs = append(reqs, c.req(p))
			}
		}
	}
	var (
		mu       sync.Mutex
		unary    int
		problems []string
		signaled atomic.Bool
	)
	// record notes a unary answer and says whether to go on.
	record := func(o outcome) bool {
		mu.Lock()
		defer mu.Unlock()
		unary++
		msg := hostileProblem(o)
		if msg != "" && signaled.Load() && status.Code(o.err) == codes.Unavailable {
			msg = "" // the server is going or gone: expected
		}
		if o.err == nil && byModel(o.resp) {
			// The fake model allows what it does not recognise; what this
			// checks is that no local stage allows a hostile command.
			msg = ""
		}
		if msg != "" {
			problems = append(problems, msg)
		}
		return status.Code(o.err) != codes.Unavailable && !(signaled.Load() && o.err != nil)
	}
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() {
			for i := 0; ; i++ {
				req := hang(fmt.Sprintf("%d-%d", w, i))
				if commands {
					req = reqs[(w+3*i)%len(reqs)]
				}
				if !record(g.check(req)) {
					return
				}
			}
		})
	}
	for w := range 2 {
		wg.Go(func() {
			for i := 0; record(g.check(hang(fmt.Sprintf("h%d-%d", w, i)))); i++ {
			}
		})
	}
	// A stream with checks of both kinds in flight.
	var streamEnd error
	var streamAllows atomic.Int64
	wg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		stream, err := g.client.CheckStream(ctx)
		if err != nil {
			streamEnd = err
			return
		}
		// At most 4 checks unanswered at a time.
		window := make(chan struct{}, 4)
		go func() {
			for i := 0; ; i++ {
				select {
				case window <- struct{}{}:
				case <-ctx.Done():
					return
				}
				req := hang(fmt.Sprintf("s-%d", i))
				if commands && i%2 == 0 {
					req = reqs[(i/2)%len(reqs)]
				}
				if stream.Send(&pb.CheckStreamRequest{Kind: &pb.CheckStreamRequest_Check{Check: cloneWithID(req, fmt.Sprint(i))}}) != nil {
					return
				}
			}
		}()
		for {
			m, err := stream.Recv()
			if err != nil {
				streamEnd = err
				return
			}
			if r := m.GetResponse(); r.GetDecision() == pb.Decision_DECISION_ALLOW && !byModel(r) {
				streamAllows.Add(1)
			}
			<-window
		}
	})

	// SIGTERM once the model holds hanging checks, the stream's among them.
	streamHeld := func() bool {
		for _, r := range f.Requests() {
			if strings.Contains(r.User, hangMarker+" s-") {
				return true
			}
		}
		return false
	}
	for deadline := time.Now().Add(20 * time.Second); f.Count() < 3 || !streamHeld(); {
		if time.Now().After(deadline) {
			t.Fatalf("%d checks reached the model within 20 s, the stream's: %t; want at least 3 and one of the stream's", f.Count(), streamHeld())
		}
		// Not synctest: the checks reach the model through another
		// process, over real sockets; poll for them.
		time.Sleep(10 * time.Millisecond)
	}
	signaled.Store(true)
	took := g.terminate()
	wg.Wait()
	rss, _ := g.peakRSS()

	for _, m := range problems {
		t.Error(m)
	}
	if n := streamAllows.Load(); n != 0 {
		t.Errorf("the stream got %d ALLOW answers to hostile checks", n)
	}
	if streamEnd == nil || errors.Is(streamEnd, io.EOF) {
		t.Errorf("the stream ended cleanly with checks in flight: %v", streamEnd)
	}
	// Not held to peakRSSBound: TestHostileShell holds each check to it,
	// and here several run at once.
	t.Logf("%d unary checks; the stream ended with %v; peak RSS %d MiB; SIGTERM to exit %s (shutdown_timeout %s)",
		unary, streamEnd, rss>>20, took.Round(time.Millisecond), hostileShutdown)
}
