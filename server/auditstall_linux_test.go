package server

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/toolgate/toolgate/internal/stallfs"
)

// TestAuditFileSystemHangs: the audit log's file system stops answering
// after startup (a stalled FUSE mount over its directory: the lstat that
// notices a removed file waits for ever, as on a hung NFS server). Checks
// keep being answered at once, the records the writer cannot write are
// counted in toolgate_audit_write_failures_total when the server stops,
// and Shutdown returns within its wait for the audit writer. Real time:
// the writer is held in the kernel, which synctest does not see.
func TestAuditFileSystemHangs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "logs")
	env, m := newAuditEnv(t, filepath.Join(dir, "audit.jsonl"))
	harmlessCheck(t, env, "before")
	if err := env.srv.auditFile.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	stallfs.MountAt(t, dir)
	const after = 200
	var slowest time.Duration
	for i := range after {
		slowest = max(slowest, harmlessCheck(t, env, fmt.Sprintf("r%d", i)))
	}
	// A SIGHUP's reopen waits on the held writer no longer than its bound.
	start := time.Now()
	if err := env.srv.ReopenAudit(); err == nil {
		t.Error("reopening an audit file whose writer is held succeeded")
	}
	if d := time.Since(start); d > auditWait+time.Second {
		t.Errorf("ReopenAudit took %s", d)
	}
	start = time.Now()
	env.srv.Shutdown(context.Background())
	if d := time.Since(start); d > auditWait+time.Second {
		t.Errorf("Shutdown took %s with the audit writer held; want at most its %s wait", d, auditWait)
	}
	if got := testutil.ToFloat64(m.auditFailures); got != after {
		t.Errorf("toolgate_audit_write_failures_total %v, want the %d records made after the file system hung", got, after)
	}
	t.Logf("%d checks while the audit file system hung, slowest %s", after, slowest)
}
