package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"

	"github.com/toolgate/toolgate/engine"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// TestAuditFailuresMetric: the server counts records the audit file did
// not take in toolgate_audit_write_failures_total. Its directory replaced
// by a link makes every write fail (the file is never written through one).
func TestAuditFailuresMetric(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "logs")
	cfg := DefaultConfig()
	cfg.Audit.File = filepath.Join(dir, "audit.jsonl")
	audit, q, err := openAudit(cfg.Audit, zap.NewNop(), m.auditFailed)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close(auditWait)
	if err := os.Rename(dir, dir+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(t.TempDir(), dir); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		audit.Info("decision", zap.Int("i", i))
	}
	if err := q.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(m.auditFailures); got != 3 {
		t.Errorf("toolgate_audit_write_failures_total %v, want 3", got)
	}
	if n, err := testutil.GatherAndCount(reg, "toolgate_audit_write_failures_total"); err != nil || n != 1 {
		t.Errorf("the metric is not registered: %d, %v", n, err)
	}
}

// TestAuditRecordsSurviveRemoval: through the service, every decision
// made after the audit file was removed is in the new file.
func TestAuditRecordsSurviveRemoval(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	env := newEnv(t, withConfig(func(c *Config) { c.Audit.File = path }))
	for i := range 5 {
		if i == 2 {
			// The records are written by the audit writer: let it write
			// the first two before the file goes.
			if err := env.srv.auditFile.Flush(t.Context()); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}
		req := checkReq(t, fmt.Sprintf("r%d", i), "Read", map[string]any{"file_path": "/usr/include/stdio.h"})
		if _, err := env.client.Check(t.Context(), req); err != nil {
			t.Fatal(err)
		}
	}
	env.stop(t)
	records := readAudit(t, path)
	if len(records) != 3 || records[0]["request_id"] != "r2" || records[2]["request_id"] != "r4" {
		t.Fatalf("records after the removal: %v, want r2..r4", records)
	}
}

// newAuditEnv serves toolgate with an audit log at path and the server's
// metrics on a registry of its own.
func newAuditEnv(t *testing.T, path string) (*testEnv, *Metrics) {
	t.Helper()
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.ShutdownTimeout = 5 * time.Second
	cfg.Audit.File = path
	eng, err := engine.New(engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(cfg, eng, zap.NewNop(), WithMetrics(m))
	if err != nil {
		t.Fatal(err)
	}
	return serveEnv(t, srv), m
}

// harmlessCheck sends a check the local stages allow and returns how long
// its answer took; it fails the test past a second.
func harmlessCheck(t *testing.T, env *testEnv, id string) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	start := time.Now()
	resp, err := env.client.Check(ctx, checkReq(t, id, "Read", map[string]any{"file_path": "/usr/include/stdio.h"}))
	took := time.Since(start)
	if err != nil || resp.GetDecision() != pb.Decision_DECISION_ALLOW {
		t.Fatalf("check %s: %v, %v", id, resp, err)
	}
	if took > time.Second {
		t.Errorf("check %s took %s", id, took)
	}
	return took
}
