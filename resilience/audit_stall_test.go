package resilience

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
	"github.com/toolgate/toolgate/internal/stallfs"
)

// TestStalledAuditFileSystem: the audit log's file system stops answering
// after startup, as a hung NFS or FUSE server does: a stalled FUSE mount
// is put over the audit file's directory, so that the lstat toolgate makes
// before each write (to notice a removed file) waits for ever. Checks,
// small and with large inputs (which fill the audit queue's bytes), keep
// being answered within a second, none differently; SIGHUP's reopen gives
// up instead of holding the reloads (the reload it starts is held on the
// mount, resolving toolgate's own files); every record made after the stall is
// reported on the main log as not written (the counts of its lines add up
// to the checks), and SIGTERM ends the process within shutdown_timeout and
// the audit writer's one-second wait.
func TestStalledAuditFileSystem(t *testing.T) {
	base := t.TempDir()
	project := filepath.Join(base, "project")
	logs := filepath.Join(base, "logs")
	for _, d := range []string{project, logs} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(project, "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	audit := filepath.Join(logs, "audit.jsonl")
	if err := stallfs.Available(); err != nil {
		t.Skipf("no stalled FUSE mount: %v", err)
	}
	cfg := fmt.Sprintf("server:\n  listen: 127.0.0.1:0\n  shutdown_timeout: %s\n  audit:\n    file: %s\npolicies:\n  default: {}\n", hostileShutdown, audit)
	g := startTarget(t, cfg)
	if err := g.harmless(project); err != nil {
		t.Fatal(err)
	}
	// The server's records so far are written (WaitReady's and the one
	// above); what follows is all after the stall.
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, _ := os.ReadFile(audit)
		if strings.Count(string(b), "\n") >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond) // another process's file: poll it
	}
	stall := stallfs.MountAt(t, logs)

	read := shellReq(project, "Read", map[string]any{"file_path": filepath.Join(project, "main.go")})
	// 128 KiB of content, allowed as an edit inside the project: 16 MiB
	// of them fill the audit queue's bytes long before its records.
	write := shellReq(project, "Write", map[string]any{"file_path": filepath.Join(project, "big.txt"), "content": strings.Repeat("x", 128<<10)})
	write.Mode = pb.PermissionMode_PERMISSION_MODE_ACCEPT_EDITS
	n := scale(4000)
	var next, answered atomic.Int64
	var mu sync.Mutex
	var problems []string
	var slowest time.Duration
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				req := read
				if i%5 == 0 {
					req = write
				}
				o := g.check(req)
				mu.Lock()
				slowest = max(slowest, o.took)
				if o.err != nil || o.resp.GetDecision() != pb.Decision_DECISION_ALLOW {
					if problems = append(problems, fmt.Sprintf("check %d (%s): %v", i, req.GetTool().GetName(), o)); len(problems) == 1 {
						next.Store(int64(n))
					}
				} else {
					answered.Add(1)
				}
				mu.Unlock()
			}
		})
	}
	// A SIGHUP while the checks run: its reopen waits for the held
	// writer at most a second, and the reloads are not held behind it.
	if err := g.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if _, err := g.waitLog("SIGHUP: reopening the audit file failed", "", 0, 5*time.Second); err != nil {
		t.Error(err)
	}
	wg.Wait()
	for _, p := range problems[:min(len(problems), 5)] {
		t.Error(p)
	}
	if slowest > time.Second {
		t.Errorf("the slowest of %d checks while the audit file system hung took %s, over a second", n, slowest)
	}
	if err := g.harmless(project); err != nil {
		t.Errorf("after the checks: %v", err)
	}
	// The SIGHUP's reload builds an engine, which resolves toolgate's own
	// files (the audit file among them): it is held on the mount too.
	// Wait until it is, so that SIGTERM finds a reload held as well as
	// the audit writer.
	held := 0
	for deadline := time.Now().Add(10 * time.Second); held < 2 && time.Now().Before(deadline); {
		n, err := stall.Waiting()
		if err != nil {
			t.Fatal(err)
		}
		if held = n; held < 2 {
			time.Sleep(20 * time.Millisecond) // the kernel's count: poll it
		}
	}
	t.Logf("%d system calls held on the stalled mount before SIGTERM", held)
	rss := g.checkRSS("checks while the audit file system hung")
	full := 0
	for _, m := range g.logLines("audit records not written") {
		if e, _ := m["error"].(string); strings.Contains(e, "queue is full") {
			full++
		}
	}
	if full == 0 {
		t.Error("no log line says the audit queue was full")
	}
	took := g.terminate()
	if limit := hostileShutdown + 2*time.Second; took > limit {
		t.Errorf("SIGTERM to exit took %s, over shutdown_timeout and the audit writer's wait (%s)", took.Round(time.Millisecond), limit)
	}
	// Every record made after the stall (the checks', and the one
	// harmless check after them) is reported as not written.
	var lost int64
	for _, m := range g.logLines("audit records not written") {
		r, _ := m["records"].(float64)
		lost += int64(r)
	}
	if want := answered.Load() + 1; lost != want {
		t.Errorf("the main log reports %d audit records not written; %d checks were answered after the stall", lost, want)
	}
	t.Logf("%d checks while the audit file system hung: slowest %s, %d records reported not written; peak RSS %d MiB; SIGTERM to exit %s",
		answered.Load(), slowest.Round(time.Microsecond), lost, rss>>20, took.Round(time.Millisecond))
}
