package ownfile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func newTestQueue(t *testing.T, log *zap.Logger, maxBytes, maxRecords int) (*Queue, *File, *atomic.Int64) {
	t.Helper()
	f, failures := newTestAuditFile(t, log)
	q := NewQueue(f, maxBytes, maxRecords)
	t.Cleanup(func() { _ = q.Close(time.Second) })
	return q, f, failures
}

// hold holds the file's lock, as a write held in a system call by a file
// system that does not answer holds it, until the returned function.
func hold(f *File) (release func()) {
	f.mu.Lock()
	return f.mu.Unlock
}

// TestQueueNeverWaitsOnTheFile: with the writer held, records are taken
// until the queue is full, in records or in bytes (what the writer holds
// counts); past that each is refused at once, counted and reported, never
// dropped silently. The ones taken are written, in order, once the writer
// goes on.
func TestQueueNeverWaitsOnTheFile(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	q, f, failures := newTestQueue(t, zap.New(core), 20, 3)
	release := hold(f)
	for _, r := range []string{"one", "two", "three", "four", "five"} {
		_, err := q.Write([]byte(r + "\n"))
		if want := r == "four" || r == "five"; want != errors.Is(err, ErrFull) {
			t.Errorf("%s: %v", r, err)
		}
	}
	if n := failures.Load(); n != 2 {
		t.Errorf("%d failures counted, want 2", n)
	}
	if lines := logs.FilterMessageSnippet("not written").All(); len(lines) != 1 || !strings.Contains(lines[0].ContextMap()["error"].(string), "queue is full") {
		t.Errorf("log lines %v, want one saying the queue is full", lines)
	}
	release()
	if err := q.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Bytes: 3 of 20 left by a record of 30 is refused, one of 10 taken.
	if _, err := q.Write([]byte(strings.Repeat("x", 29) + "\n")); !errors.Is(err, ErrFull) {
		t.Errorf("a record larger than the queue: %v", err)
	}
	release = hold(f)
	for _, r := range []string{"123456789", "abcdefghi", "ABCDEFGHI"} {
		_, err := q.Write([]byte(r + "\n"))
		if want := r == "ABCDEFGHI"; want != errors.Is(err, ErrFull) {
			t.Errorf("%s: %v", r, err)
		}
	}
	release()
	if err := q.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := fileText(t, f.path); got != "one\ntwo\nthree\n123456789\nabcdefghi\n" {
		t.Errorf("the file holds %q", got)
	}
	if n := failures.Load(); n != 4 {
		t.Errorf("%d failures counted, want 4", n)
	}
}

// TestQueueCloseBounded: Close drains what is queued; when the writer is
// held, it returns after its wait, counting and reporting what was not
// written. Records after Close are counted too.
func TestQueueCloseBounded(t *testing.T) {
	q, f, failures := newTestQueue(t, zap.NewNop(), 1<<20, 100)
	record(t, q.f, "direct") // the File itself, in the caller's goroutine
	for range 3 {
		if _, err := q.Write([]byte("queued\n")); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.Close(time.Second); err != nil {
		t.Fatal(err)
	}
	if got := fileText(t, f.path); got != "direct\nqueued\nqueued\nqueued\n" {
		t.Errorf("after Close the file holds %q", got)
	}
	if _, err := q.Write([]byte("late\n")); err == nil {
		t.Error("a record after Close was taken")
	}
	if n := failures.Load(); n != 1 {
		t.Errorf("%d failures counted, want the one after Close", n)
	}

	core, logs := observer.New(zapcore.InfoLevel)
	q, f, failures = newTestQueue(t, zap.New(core), 1<<20, 100)
	release := hold(f)
	for range 5 {
		if _, err := q.Write([]byte("held\n")); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	err := q.Close(50 * time.Millisecond)
	if d := time.Since(start); err == nil || d > time.Second {
		t.Errorf("Close with the writer held: %v after %s, want an error after its wait", err, d)
	}
	if n := failures.Load(); n != 5 {
		t.Errorf("%d failures counted, want the 5 records queued", n)
	}
	if lines := logs.FilterMessageSnippet("not written").All(); len(lines) != 1 || lines[0].ContextMap()["records"] != int64(5) {
		t.Errorf("log lines %v, want one about the 5 records", lines)
	}
	release()
	<-q.done // the writer, freed, leaves
}

// TestQueueReopen: SIGHUP's reopen runs on the writer, after the records
// queued before it, and follows a rotation; with the writer held, it gives
// up when its context ends.
func TestQueueReopen(t *testing.T) {
	q, f, _ := newTestQueue(t, zap.NewNop(), 1<<20, 100)
	if _, err := q.Write([]byte("one\n")); err != nil {
		t.Fatal(err)
	}
	release := hold(f)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if err := q.Reopen(ctx); err == nil {
		t.Error("a reopen with the writer held succeeded")
	}
	release()
	if err := q.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(f.path, f.path+".1"); err != nil {
		t.Fatal(err)
	}
	if err := q.Reopen(t.Context()); err != nil {
		t.Fatal(err)
	}
	isRegular(t, f.path) // made by the reopen, before any record
	if _, err := q.Write([]byte("two\n")); err != nil {
		t.Fatal(err)
	}
	if err := q.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got, old := fileText(t, f.path), fileText(t, f.path+".1"); got != "two\n" || old != "one\n" {
		t.Errorf("the file holds %q, the rotated one %q", got, old)
	}
}

// TestQueueRotates: records written in one batch still rotate at the
// configured size, never past it with a whole record.
func TestQueueRotates(t *testing.T) {
	q, f, _ := newTestQueue(t, zap.NewNop(), 1<<20, 100)
	f.maxSize = 100
	line := strings.Repeat("x", 30) + "\n"
	release := hold(f)
	for range 7 {
		if _, err := q.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	release()
	if err := q.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Dir(f.path))
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, e := range entries {
		text := fileText(t, filepath.Join(filepath.Dir(f.path), e.Name()))
		if len(text) > 100 {
			t.Errorf("%s holds %d bytes, past the rotation size", e.Name(), len(text))
		}
		total += len(text)
	}
	// Three records a file: the current one holds the seventh; two
	// backups are kept of the two full files.
	if len(entries) != 3 || total != 7*len(line) || fileText(t, f.path) != line {
		t.Errorf("%d files with %d bytes, the current one %q", len(entries), total, fileText(t, f.path))
	}
}

// BenchmarkQueueWrite is what a caller pays for one record: a copy into
// the queue; the writer's lstat and write run apart, once per batch.
func BenchmarkQueueWrite(b *testing.B) {
	f, err := Open(Options{Path: filepath.Join(b.TempDir(), "audit.jsonl"), MaxSize: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	q := NewQueue(f, 16<<20, 16<<10)
	defer q.Close(time.Second)
	line := []byte(strings.Repeat("x", 400) + "\n")
	refused := 0
	for b.Loop() {
		if _, err := q.Write(line); errors.Is(err, ErrFull) {
			refused++ // the writer fell behind: not the cost measured here
		} else if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	_ = q.Flush(context.Background())
	b.ReportMetric(float64(refused)/float64(b.N), "refused/op")
}
