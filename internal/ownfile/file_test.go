package ownfile

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// newTestAuditFile opens an audit file in a fresh directory; failures
// counts the records it could not write.
func newTestAuditFile(t *testing.T, log *zap.Logger) (w *File, failures *atomic.Int64) {
	t.Helper()
	failures = new(atomic.Int64)
	w, err := Open(Options{Path: filepath.Join(t.TempDir(), "audit.jsonl"), Field: "server.audit.file", What: "audit", MaxSize: 1 << 20, MaxBackups: 2, Log: log,
		Failed: func(n int) { failures.Add(int64(n)) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return w, failures
}

func record(t *testing.T, w *File, s string) {
	t.Helper()
	if _, err := w.Write([]byte(s + "\n")); err != nil {
		t.Fatalf("writing %q: %v", s, err)
	}
}

func fileText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// isRegular fails the test unless path is a regular file (not a link).
func isRegular(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.Mode().IsRegular() {
		t.Fatalf("%s is %v, want a regular file", path, fi.Mode())
	}
}

// TestAuditFileRemoved: a removed or renamed-away audit file is noticed on
// the next record, which goes to a new file at the path; nothing goes to
// the unlinked inode.
func TestAuditFileRemoved(t *testing.T) {
	w, failures := newTestAuditFile(t, zap.NewNop())
	record(t, w, "one")
	if err := os.Remove(w.path); err != nil {
		t.Fatal(err)
	}
	record(t, w, "two")
	if got := fileText(t, w.path); got != "two\n" {
		t.Fatalf("after removal the file holds %q, want the next record", got)
	}
	// logrotate without create: renamed away, nothing made in its place.
	if err := os.Rename(w.path, w.path+".1"); err != nil {
		t.Fatal(err)
	}
	record(t, w, "three")
	if got, old := fileText(t, w.path), fileText(t, w.path+".1"); got != "three\n" || old != "two\n" {
		t.Fatalf("after a rename the file holds %q and the renamed one %q", got, old)
	}
	// logrotate with create: an empty file of this user takes the records.
	if err := os.Rename(w.path, w.path+".2"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w.path, nil, 0o640); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(w.path)
	record(t, w, "four")
	after, _ := os.Stat(w.path)
	if got := fileText(t, w.path); got != "four\n" || !os.SameFile(before, after) {
		t.Fatalf("the empty file logrotate made was not adopted: %q", got)
	}
	if n := failures.Load(); n != 0 {
		t.Errorf("%d failures counted", n)
	}
}

// TestAuditFileReplaced: whatever is planted at the path (a file with
// records in it, a link to another file, a hard link, a FIFO) never gets
// the records: they go to a fresh file the audit file made, and what was
// planted is kept aside (a link is removed, never what it names).
func TestAuditFileReplaced(t *testing.T) {
	for _, tt := range []struct {
		name  string
		plant func(t *testing.T, path, victim string)
	}{
		{"file with forged records", func(t *testing.T, path, _ string) {
			tmp := path + ".tmp"
			if err := os.WriteFile(tmp, []byte("forged\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
		}},
		{"symlink", func(t *testing.T, path, victim string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(victim, path); err != nil {
				t.Fatal(err)
			}
		}},
		{"symlink to /dev/null", func(t *testing.T, path, _ string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("/dev/null", path); err != nil {
				t.Fatal(err)
			}
		}},
		{"hard link", func(t *testing.T, path, victim string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := os.Link(victim, path); err != nil {
				t.Fatal(err)
			}
		}},
		{"fifo", func(t *testing.T, path, _ string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w, failures := newTestAuditFile(t, zap.NewNop())
			victim := filepath.Join(t.TempDir(), "victim")
			if err := os.WriteFile(victim, []byte("keep\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			record(t, w, "one")
			tt.plant(t, w.path, victim)
			record(t, w, "two")
			isRegular(t, w.path)
			if got := fileText(t, w.path); got != "two\n" {
				t.Errorf("the path holds %q, want a fresh file with the next record", got)
			}
			if got := fileText(t, victim); got != "keep\n" {
				t.Errorf("a file outside got the record: %q", got)
			}
			if n := failures.Load(); n != 0 {
				t.Errorf("%d failures counted", n)
			}
			set, _ := filepath.Glob(filepath.Join(filepath.Dir(w.path), "audit-*-replaced.jsonl"))
			if tt.name == "file with forged records" && (len(set) != 1 || fileText(t, set[0]) != "forged\n") {
				t.Errorf("the planted file was not kept aside: %v", set)
			}
		})
	}
}

// TestAuditFileDirectoryReplaced: a directory swapped for a link to
// another is not written through; the record is counted as not written.
func TestAuditFileDirectoryReplaced(t *testing.T) {
	w, failures := newTestAuditFile(t, zap.NewNop())
	record(t, w, "one")
	dir := filepath.Dir(w.path)
	elsewhere := t.TempDir()
	if err := os.Rename(dir, dir+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("two\n")); err == nil {
		t.Error("a record was written through a directory link")
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Errorf("files made through the link: %v", entries)
	}
	if n := failures.Load(); n != 1 {
		t.Errorf("%d failures counted, want 1", n)
	}
}

// TestAuditFileReopen: SIGHUP's reopen follows an admin's rotation at
// once, and adopts a file of this user that already has records.
func TestAuditFileReopen(t *testing.T) {
	w, _ := newTestAuditFile(t, zap.NewNop())
	record(t, w, "one")
	if err := os.Rename(w.path, w.path+".1"); err != nil {
		t.Fatal(err)
	}
	if err := w.Reopen(); err != nil {
		t.Fatal(err)
	}
	isRegular(t, w.path) // made by the reopen, before any record
	record(t, w, "two")
	if got := fileText(t, w.path); got != "two\n" {
		t.Fatalf("after the reopen the file holds %q", got)
	}
	if err := w.Reopen(); err != nil {
		t.Fatal(err)
	}
	record(t, w, "three")
	if got := fileText(t, w.path); got != "two\nthree\n" {
		t.Fatalf("the reopened file holds %q", got)
	}
}

// TestAuditFileKeepsItsOwn: after Close (a check answered past
// shutdown), the file it had is taken back, not set aside as planted.
func TestAuditFileKeepsItsOwn(t *testing.T) {
	w, _ := newTestAuditFile(t, zap.NewNop())
	record(t, w, "one")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	record(t, w, "two")
	if got := fileText(t, w.path); got != "one\ntwo\n" {
		t.Fatalf("the file holds %q", got)
	}
}

// TestAuditFileStartup: a link at the configured path is refused at
// startup; an existing file with records is appended to.
func TestAuditFileStartup(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "audit.jsonl")
	if err := os.Symlink("/dev/null", link); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Options{Path: link, Field: "server.audit.file", What: "audit", MaxSize: 1 << 20}); err == nil || !strings.Contains(err.Error(), "server.audit.file") {
		t.Errorf("a link at the audit path: %v, want an error naming server.audit.file", err)
	}
	path := filepath.Join(dir, "kept.jsonl")
	if err := os.WriteFile(path, []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := Open(Options{Path: path, Field: "server.audit.file", What: "audit", MaxSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	record(t, w, "new")
	if got := fileText(t, path); got != "old\nnew\n" {
		t.Errorf("the file holds %q", got)
	}
}

// TestAuditFileRotates: full files become backups with lumberjack's names,
// which the guard's globs (Backups) match, and only max_backups are kept.
func TestAuditFileRotates(t *testing.T) {
	w, _ := newTestAuditFile(t, zap.NewNop())
	w.maxSize = 100
	line := strings.Repeat("x", 60)
	for range 6 {
		record(t, w, line)
	}
	entries, err := os.ReadDir(filepath.Dir(w.path))
	if err != nil {
		t.Fatal(err)
	}
	var backups []string
	for _, e := range entries {
		if e.Name() == filepath.Base(w.path) {
			continue
		}
		p := filepath.Join(filepath.Dir(w.path), e.Name())
		matched := false
		for _, g := range Backups(w.path) {
			if m, _ := filepath.Match(g, p); m {
				matched = true
			}
		}
		if !matched {
			t.Errorf("backup %s is not matched by the guarded globs %v", p, Backups(w.path))
		}
		backups = append(backups, e.Name())
	}
	if len(backups) != w.maxBackups {
		t.Errorf("backups %v, want %d", backups, w.maxBackups)
	}
	if got := fileText(t, w.path); got != line+"\n" {
		t.Errorf("the current file holds %q", got)
	}
}

// TestAuditFileFailures: a record the file does not take is counted, and
// the main log gets at most one line about such records per
// ReportEvery, each with how many were lost since the previous line.
func TestAuditFileFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		core, logs := observer.New(zapcore.InfoLevel)
		w, failures := newTestAuditFile(t, zap.New(core))
		record(t, w, "one")
		full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
		if err != nil {
			t.Skipf("no /dev/full to fail writes: %v", err)
		}
		good := w.f
		w.f = full // a full disk under the same path
		for range 50 {
			if _, err := w.Write([]byte("lost\n")); err == nil {
				t.Fatal("a write to a full disk succeeded")
			}
		}
		if n := failures.Load(); n != 50 {
			t.Errorf("%d failures counted, want 50", n)
		}
		lines := logs.FilterMessageSnippet("not written").All()
		if len(lines) != 1 || lines[0].ContextMap()["records"] != int64(1) {
			t.Fatalf("log lines %v, want one about the first record", lines)
		}
		time.Sleep(ReportEvery)
		for range 10 {
			_, _ = w.Write([]byte("lost\n"))
		}
		if lines := logs.FilterMessageSnippet("not written").All(); len(lines) != 2 || lines[1].ContextMap()["records"] != int64(50) {
			t.Fatalf("log lines %v, want a second with the 50 records since the first", lines)
		}
		for range 5 {
			_, _ = w.Write([]byte("lost\n"))
		}
		w.f = good
		_ = full.Close()
		time.Sleep(ReportEvery)
		record(t, w, "two")
		record(t, w, "three")
		again := logs.FilterMessageSnippet("takes records again").All()
		if len(again) != 1 || again[0].ContextMap()["records"] != int64(14) {
			t.Fatalf("log lines %v, want one saying the 14 records since the last line were lost", again)
		}
		if n := failures.Load(); n != 65 {
			t.Errorf("%d failures counted, want 65", n)
		}
		if got := fileText(t, w.path); got != "one\ntwo\nthree\n" {
			t.Errorf("the file holds %q", got)
		}
	})
}

// BenchmarkFileWrite is the cost of one record written in the caller's
// goroutine, with the lstat that notices a removed file.
func BenchmarkFileWrite(b *testing.B) {
	w, err := Open(Options{Path: filepath.Join(b.TempDir(), "audit.jsonl"), MaxSize: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	line := []byte(strings.Repeat("x", 400) + "\n")
	for b.Loop() {
		if _, err := w.Write(line); err != nil {
			b.Fatal(err)
		}
	}
}
