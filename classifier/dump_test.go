package classifier

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"

	"github.com/toolgate/toolgate/fakellm"
)

// dumpLines returns the dump's lines once its writer wrote what is queued.
func dumpLines(t *testing.T, c *Classifier, path string) []string {
	t.Helper()
	if err := c.dump.q.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// TestDumpFileIsOwned: the dump file has the audit log's guarantees: a
// link at its path is refused at startup and never written through later
// (what was planted is set aside), a removed file is noticed on the next
// record, and ReopenDump (SIGHUP) follows an admin's rotation at once.
func TestDumpFileIsOwned(t *testing.T) {
	fake := fakellm.Start(t, blockOn("BAD"))
	dir := t.TempDir()
	path := filepath.Join(dir, "dump.jsonl")
	if err := os.Symlink("/dev/null", path); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(fake.URL())
	cfg.DumpFile = path
	if _, err := New(cfg, nil, zap.NewNop()); err == nil || !strings.Contains(err.Error(), "classifier.dump_file") {
		t.Fatalf("a link at the dump path: %v, want an error naming classifier.dump_file", err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	c := newTestClassifier(t, cfg)
	defer c.Close()
	classify := func(cmd string) {
		t.Helper()
		if _, err := c.Classify(t.Context(), input("Bash", cmd, "")); err != nil {
			t.Fatal(err)
		}
	}
	classify("echo one")
	if err := c.dump.q.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Removed: the next record goes to a new file at the path.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	classify("echo two")
	if lines := dumpLines(t, c, path); len(lines) != 1 || !strings.Contains(lines[0], "echo two") {
		t.Fatalf("after removal the dump holds %q", lines)
	}
	// Replaced by a link: never written through.
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("keep\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, path); err != nil {
		t.Fatal(err)
	}
	classify("echo three")
	if lines := dumpLines(t, c, path); len(lines) != 1 || !strings.Contains(lines[0], "echo three") {
		t.Fatalf("after a link was planted the dump holds %q", lines)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep\n" {
		t.Errorf("a dump record went through the link: %q", b)
	}
	// Rotated, then SIGHUP: the file is made again at once.
	if err := os.Rename(path, path+".2"); err != nil {
		t.Fatal(err)
	}
	if err := c.ReopenDump(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("after ReopenDump: %v, %v", fi, err)
	}
}

// TestDumpFailuresMetric: dump records that cannot be written (the
// directory replaced by a link, which is never written through) are
// counted in toolgate_classifier_dump_write_failures_total.
func TestDumpFailuresMetric(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	fake := fakellm.Start(t, blockOn("BAD"))
	dir := filepath.Join(t.TempDir(), "logs")
	cfg := testConfig(fake.URL())
	cfg.DumpFile = filepath.Join(dir, "dump.jsonl")
	c, err := New(cfg, nil, zap.NewNop(), WithMetrics(m))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := os.Rename(dir, dir+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(t.TempDir(), dir); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"echo 1", "echo 2"} {
		if _, err := c.Classify(t.Context(), input("Bash", cmd, "")); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.dump.q.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(m.dumpFailures); got != 2 {
		t.Errorf("toolgate_classifier_dump_write_failures_total %v, want 2", got)
	}
}

func TestDumpFileNoGlob(t *testing.T) {
	cfg := testConfig("http://127.0.0.1:1")
	cfg.DumpFile = "/var/log/dump-*.jsonl"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "classifier.dump_file") {
		t.Errorf("a glob dump path: %v, want an error naming classifier.dump_file", err)
	}
}
