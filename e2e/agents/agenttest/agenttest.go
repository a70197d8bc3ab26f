// Package agenttest is what the real-agent end-to-end tests share: the
// toolgate binary under test, a `toolgate serve` on a free loopback port
// stopped with the test, and small helpers for the processes they run.
package agenttest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ToolgateBinary is the toolgate under test: TOOLGATE_BIN (make
// e2e-agents sets it), or one built from this checkout.
func ToolgateBinary(ctx context.Context, t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("TOOLGATE_BIN"); bin != "" {
		abs, err := filepath.Abs(bin)
		if err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(abs); err != nil || !fi.Mode().IsRegular() {
			t.Fatalf("TOOLGATE_BIN=%s: not a file (%v)", bin, err)
		}
		return abs
	}
	bin := filepath.Join(t.TempDir(), "toolgate")
	bctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(bctx, "go", "build", "-o", bin, "github.com/toolgate/toolgate/cmd/toolgate")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/toolgate: %v\n%s", err, Tail(out, 4000))
	}
	return bin
}

// Server is a running `toolgate serve`.
type Server struct {
	Addr string      // host:port, on 127.0.0.1
	Log  *SyncBuffer // its stdout and stderr
	// Centre is the central toolgate a local server forwards to, or nil.
	Centre *Server
}

// StartToolgate runs toolgate in its two roles, as an organisation does: a
// central `bin serve` with no config (no classifier: what no stage decides
// is ASK) and a local `bin serve --upstream CENTRE` with no config, a
// state directory of its own and the extra args, with HOME set to home
// unless it is empty. It returns the local server, which the agents'
// hooks call. Each waits for its "serving" line and is stopped with
// SIGTERM when the test ends, failing the test if it does not exit
// cleanly within 15 s. When the test passed, the local server's stages
// must have left some checks open, and the centre answered each of them.
func StartToolgate(ctx context.Context, t *testing.T, bin, home string, args ...string) *Server {
	t.Helper()
	centre := startServe(ctx, t, bin, home)
	local := startServe(ctx, t, bin, home, append([]string{"--upstream", centre.Addr, "--state-dir", t.TempDir()}, args...)...)
	local.Centre = centre
	t.Cleanup(func() {
		// Runs after the local server stopped (cleanups run last first),
		// so its log is complete.
		if t.Failed() {
			return
		}
		forwarded, answered := local.countLog("decision", openSources), centre.countLog("upstream classification", nil)
		if forwarded != answered || forwarded == 0 {
			t.Errorf("the local server decided %d checks its stages left open, the centre classified %d\nlocal:\n%s\ncentre:\n%s",
				forwarded, answered, local.Log.Tail(3000), centre.Log.Tail(3000))
		}
	})
	return local
}

// openSources are the sources of decisions no local stage made.
var openSources = map[string]bool{"classifier": true, "cache": true, "classifier_unavailable": true, "no_classifier": true, "upstream_unavailable": true}

// countLog counts the server's log lines with message msg (and, with
// sources, a source among them).
func (s *Server) countLog(msg string, sources map[string]bool) int {
	n := 0
	for _, line := range bytes.Split(s.Log.Bytes(), []byte("\n")) {
		var l struct {
			Msg    string `json:"msg"`
			Source string `json:"source"`
		}
		if json.Unmarshal(line, &l) == nil && l.Msg == msg && (sources == nil || sources[l.Source]) {
			n++
		}
	}
	return n
}

// startServe runs `bin serve` on a free loopback port with the args.
func startServe(ctx context.Context, t *testing.T, bin, home string, args ...string) *Server {
	t.Helper()
	// Not CommandContext: the server is stopped by SIGTERM in Cleanup, and
	// its clean exit checked.
	cmd := exec.Command(bin, append([]string{"serve", "--listen", "127.0.0.1:0", "--metrics-listen", "off"}, args...)...)
	if home != "" {
		cmd.Env = append(os.Environ(), "HOME="+home)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	s := &Server{Log: &SyncBuffer{}}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatalf("toolgate serve: %v", err)
	}
	exited := make(chan error, 1)
	go func() { err := cmd.Wait(); pw.Close(); exited <- err }()
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Bytes()
			s.Log.Write(append(append([]byte(nil), line...), '\n'))
			var l struct {
				Msg  string `json:"msg"`
				Addr string `json:"addr"`
			}
			if json.Unmarshal(line, &l) == nil && l.Msg == "serving" && l.Addr != "" {
				select {
				case ready <- l.Addr:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	stopped := false
	t.Cleanup(func() {
		if stopped {
			return
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil && !t.Failed() {
				t.Errorf("toolgate serve exited with %v\n%s", err, s.Log.Tail(4000))
			}
		case <-time.After(15 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
			t.Errorf("toolgate serve did not stop within 15s of SIGTERM\n%s", s.Log.Tail(4000))
		}
	})
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	select {
	case s.Addr = <-ready:
	case err := <-exited:
		stopped = true
		t.Fatalf("toolgate serve exited before serving: %v\n%s", err, s.Log.Tail(4000))
	case <-wctx.Done():
		t.Fatalf("toolgate serve did not report serving: %v\n%s", context.Cause(wctx), s.Log.Tail(4000))
	}
	if !strings.HasPrefix(s.Addr, "127.0.0.1:") {
		t.Fatalf("toolgate serves on %q, want loopback", s.Addr)
	}
	return s
}

// SyncBuffer is a bytes.Buffer safe for a process's writers and the test.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// Bytes returns a copy of what was written.
func (b *SyncBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

func (b *SyncBuffer) String() string { return string(b.Bytes()) }

// Tail is the last n bytes written.
func (b *SyncBuffer) Tail(n int) string { return Tail(b.Bytes(), n) }

// Tail is the last n bytes of b, marked when cut.
func Tail(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return "..." + string(b[len(b)-n:])
}

// ShellQuote quotes s for sh.
func ShellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// CheckPin fails the test unless version is the release of pkg that
// e2e/agents/npm/AGENT pins in its package.json and package-lock.json,
// which make e2e-agents installs: a test written for one release must not
// run, or install, another without saying so. It is called from a test
// package under e2e/agents, whose directory is the working directory.
func CheckPin(t *testing.T, agent, pkg, version string) {
	t.Helper()
	dir := filepath.Join("..", "npm", agent)
	var manifest struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	var lock struct {
		Packages map[string]struct {
			Version string `json:"version"`
		} `json:"packages"`
	}
	for file, v := range map[string]any{"package.json": &manifest, "package-lock.json": &lock} {
		data, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, v); err != nil {
			t.Fatalf("%s: %v", filepath.Join(dir, file), err)
		}
	}
	if got := manifest.Dependencies[pkg]; got != version {
		t.Errorf("%s pins %s %q; the test is written for %s", filepath.Join(dir, "package.json"), pkg, got, version)
	}
	if got := lock.Packages["node_modules/"+pkg].Version; got != version {
		t.Errorf("%s locks %s %q; the test is written for %s", filepath.Join(dir, "package-lock.json"), pkg, got, version)
	}
}
