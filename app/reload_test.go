package app

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/toolgate/toolgate/fakellm"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

func TestReloadUnderLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "toolgate.yaml")
	writeAtomically(t, path, localOnly+policyNoRules)
	r := start(t, loadConfig(t, path), WithSIGHUP())
	logs, conn, client := r.logs.String, r.conn, r.client
	input, _ := structpb.NewStruct(map[string]any{"command": "make deploy"})
	req := func(id string) *pb.CheckRequest {
		return &pb.CheckRequest{RequestId: id, Tool: &pb.ToolCall{Name: "Bash", Input: input}, WorkingDirectory: dir, Mode: pb.PermissionMode_PERMISSION_MODE_DEFAULT}
	}

	// A stream opened before any reload, used throughout.
	stream, err := client.CheckStream(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var n int
	onStream := func() pb.Decision {
		t.Helper()
		n++
		id := "s" + string(rune('a'+n%26)) + time.Now().Format("150405.000000")
		if err := stream.Send(&pb.CheckStreamRequest{Kind: &pb.CheckStreamRequest_Check{Check: req(id)}}); err != nil {
			t.Fatalf("stream send: %v", err)
		}
		resp, err := stream.Recv()
		if err != nil {
			t.Fatalf("stream recv: %v", err)
		}
		if resp.GetRequestId() != id || resp.GetResponse() == nil {
			t.Fatalf("stream answer %v for %s", resp, id)
		}
		return resp.GetResponse().GetDecision()
	}
	if d := onStream(); d != pb.Decision_DECISION_ASK {
		t.Fatalf("before reload: %v, want ASK (default mode, no rules)", d)
	}

	// Load: unary checks and health probes run during every swap below.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var checks, failures, unhealthy atomic.Int64
	var firstFailure atomic.Value
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			resp, err := client.Check(t.Context(), req(""))
			checks.Add(1)
			if err != nil {
				failures.Add(1)
				firstFailure.CompareAndSwap(nil, err.Error())
			} else if d := resp.GetDecision(); d != pb.Decision_DECISION_ASK && d != pb.Decision_DECISION_DENY {
				failures.Add(1)
				firstFailure.CompareAndSwap(nil, d.String())
			}
		}
	})
	health := healthpb.NewHealthClient(conn)
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			resp, err := health.Check(t.Context(), &healthpb.HealthCheckRequest{})
			if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
				unhealthy.Add(1)
			}
		}
	})

	// A valid change applies on the open stream.
	writeAtomically(t, path, localOnly+policyDenyMake)
	waitFor(t, "the deny rule to apply", func() bool { return onStream() == pb.Decision_DECISION_DENY })

	// An invalid change is refused, naming the file and field, and the
	// running policy stays.
	if err := os.WriteFile(path, []byte(localOnly+policyBadRule), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the rejection to be logged", func() bool { return strings.Contains(logs(), "config reload rejected") })
	rejected := logs()[strings.Index(logs(), "config reload rejected"):]
	rejected = rejected[:strings.IndexByte(rejected, '\n')]
	if !strings.Contains(rejected, path) || !strings.Contains(rejected, "policies.default") {
		t.Errorf("rejection does not name the file and field: %s", rejected)
	}
	if d := onStream(); d != pb.Decision_DECISION_DENY {
		t.Fatalf("after a rejected reload: %v, want the old policy's DENY", d)
	}
	// So is a truncated file, which would otherwise load as "no rules".
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the empty file to be rejected", func() bool { return strings.Count(logs(), "config reload rejected") == 2 })
	if d := onStream(); d != pb.Decision_DECISION_DENY {
		t.Fatalf("after an emptied config: %v, want the old policy's DENY", d)
	}

	// A good file after a bad one applies again; so does SIGHUP.
	writeAtomically(t, path, localOnly+policyNoRules)
	waitFor(t, "the rule to be gone", func() bool { return onStream() == pb.Decision_DECISION_ASK })
	before := strings.Count(logs(), `"trigger":"SIGHUP"`)
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a SIGHUP reload", func() bool { return strings.Count(logs(), `"trigger":"SIGHUP"`) > before })

	close(stop)
	wg.Wait()
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err == nil {
		t.Error("stream: want EOF after CloseSend")
	}
	if f := failures.Load(); f > 0 {
		t.Errorf("%d of %d checks failed during reloads; first: %v", f, checks.Load(), firstFailure.Load())
	}
	if checks.Load() == 0 {
		t.Error("no checks ran during the reloads")
	}
	t.Logf("%d unary checks during the reloads", checks.Load())
	if u := unhealthy.Load(); u > 0 {
		t.Errorf("health was not SERVING %d times during reloads", u)
	}
}

func TestReloadWatchOff(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "toolgate.yaml")
	writeAtomically(t, path, localOnly+policyNoRules)
	run := start(t, loadConfig(t, path), WithWatch(false), WithSIGHUP())
	logs := run.logs.String
	// No file watch exists to reload on a change (waiting to see that no
	// reload happens would prove nothing on a slow machine).
	if run.app.watch.files != nil {
		t.Fatal("a file watch runs with --watch=false")
	}
	writeAtomically(t, path, localOnly+policyDenyMake)
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a SIGHUP reload", func() bool { return strings.Contains(logs(), `"trigger":"SIGHUP"`) })
}

// A policy edit keeps the classifier (its cache, breakers and session
// counters); a classifier or auto_mode edit builds a new one.
func TestBuildGenerationClassifierReuse(t *testing.T) {
	dir := t.TempDir()
	load := func(yaml string) *Config {
		t.Helper()
		path := filepath.Join(dir, "c.yaml")
		writeAtomically(t, path, yaml)
		return loadConfig(t, path)
	}
	cls := "classifier:\n  backends:\n    - {name: a, base_url: \"http://127.0.0.1:1/v1\", model: m}\n"
	log := zap.NewNop()
	g1, err := buildGeneration(load(cls+policyNoRules), nil, "/home/dev", log)
	if err != nil || g1.cls == nil {
		t.Fatalf("%v %v", g1, err)
	}
	g2, err := buildGeneration(load(cls+policyDenyMake), g1, "/home/dev", log)
	if err != nil || g2.cls != g1.cls || g2.eng == g1.eng {
		t.Fatalf("rule edit: new engine %v, same classifier %v (%v)", g2.eng != g1.eng, g2.cls == g1.cls, err)
	}
	g3, err := buildGeneration(load(cls+"policies:\n  default:\n    auto_mode: {soft_deny: [\"Deploying\"]}\n"), g2, "/home/dev", log)
	if err != nil || g3.cls == g2.cls {
		t.Fatalf("auto_mode edit must rebuild the classifier (%v)", err)
	}
	g4, err := buildGeneration(load(strings.Replace(cls, "model: m", "model: n", 1)+policyNoRules), g3, "/home/dev", log)
	if err != nil || g4.cls == g3.cls {
		t.Fatalf("backend edit must rebuild the classifier (%v)", err)
	}
	g5, err := buildGeneration(load(policyNoRules), g4, "/home/dev", log)
	if err != nil || g5.cls != nil {
		t.Fatalf("no backends: %v %v", g5.cls, err)
	}
}

// An edit of an imported Claude Code settings file reloads too, though the
// config file itself is unchanged; the settings live in another directory.
func TestReloadImportedClaudeSettings(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	settings := filepath.Join(other, "settings.json")
	writeAtomically(t, settings, `{"permissions":{"deny":[]}}`)
	path := configFile(t, dir, "policies:\n  default:\n    claude_settings: "+settings+"\n")
	r := start(t, loadConfig(t, path))
	check := func() pb.Decision {
		return r.check(t, t.Context(), "Bash", map[string]any{"command": "make deploy"}, dir, pb.PermissionMode_PERMISSION_MODE_DEFAULT).GetDecision()
	}
	if d := check(); d != pb.Decision_DECISION_ASK {
		t.Fatalf("before: %v, want ask", d)
	}
	writeAtomically(t, settings, `{"permissions":{"deny":["Bash(make deploy)"]}}`)
	waitFor(t, "the imported deny rule to apply", func() bool { return check() == pb.Decision_DECISION_DENY })
}

// A file written without pause next to the config (a log, say) must not
// hold a reload off; a config reached through a symlink reloads when its
// target is edited.
func TestReloadBusyDirectoryAndSymlink(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	target := filepath.Join(other, "real.yaml")
	writeAtomically(t, target, localOnly+policyNoRules)
	path := filepath.Join(dir, "toolgate.yaml")
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	r := start(t, loadConfig(t, path))
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		f, err := os.Create(filepath.Join(dir, "noise.log"))
		if err != nil {
			return
		}
		defer f.Close()
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
				_, _ = f.WriteString("line\n")
			}
		}
	}()
	check := func() pb.Decision {
		return r.check(t, t.Context(), "Bash", map[string]any{"command": "make deploy"}, dir, pb.PermissionMode_PERMISSION_MODE_DEFAULT).GetDecision()
	}
	if d := check(); d != pb.Decision_DECISION_ASK {
		t.Fatalf("before: %v", d)
	}
	writeAtomically(t, target, localOnly+policyDenyMake)
	waitFor(t, "the edited symlink target to apply", func() bool { return check() == pb.Decision_DECISION_DENY })
}

// TestSIGHUPReopensOwnFiles: SIGHUP reopens the audit file and the
// classifier's dump file, as daemons reopen their logs after logrotate
// renamed them: each is made again at its path at once.
func TestSIGHUPReopensOwnFiles(t *testing.T) {
	fake := fakellm.Start(t, nil)
	dir := t.TempDir()
	audit, dump := filepath.Join(dir, "audit.jsonl"), filepath.Join(dir, "dump.jsonl")
	path := configFile(t, dir, "server:\n  listen: 127.0.0.1:0\n  metrics_listen: \"\"\n  audit:\n    file: "+audit+"\n"+
		"classifier:\n  dump_file: "+dump+"\n  backends:\n    - {name: fake, base_url: \""+fake.URL()+"\", model: m}\n"+policyNoRules)
	run := start(t, loadConfig(t, path), WithWatch(false), WithSIGHUP())
	for _, f := range []string{audit, dump} {
		if err := os.Rename(f, f+".1"); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the files reopened", func() bool {
		return strings.Contains(run.logs.String(), "SIGHUP: classifier dump file reopened")
	})
	for _, f := range []string{audit, dump} {
		if fi, err := os.Lstat(f); err != nil || !fi.Mode().IsRegular() {
			t.Errorf("%s after SIGHUP: %v, %v", f, fi, err)
		}
	}
}
