package upstream

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func lines(from, to int) [][]byte {
	var out [][]byte
	for i := from; i < to; i++ {
		out = append(out, fmt.Appendf(nil, "{\"id\":\"r%05d\"}\n", i))
	}
	return out
}

func ids(ls [][]byte) []string {
	var out []string
	for _, l := range ls {
		out = append(out, strings.TrimSpace(string(l)))
	}
	return out
}

type dropCount map[string]int

func (d dropCount) add(reason string, n int) { d[reason] += n }

// TestSpoolTornLastLine: a crash in the middle of a write leaves a line
// without its newline at the end of the last segment; the next run reads
// every whole record, skips the torn one, and goes on appending.
func TestSpoolTornLastLine(t *testing.T) {
	dir := t.TempDir()
	sp, err := openSpool(dir, 1<<20, dropCount{}.add)
	if err != nil {
		t.Fatal(err)
	}
	if err := sp.append(lines(0, 3)); err != nil {
		t.Fatal(err)
	}
	// The crash: half a record written, nothing closed.
	seg := sp.segPath(sp.segs[0].seq)
	f, err := os.OpenFile(seg, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"id":"torn`); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()

	sp, err = openSpool(dir, 1<<20, dropCount{}.add)
	if err != nil {
		t.Fatal(err)
	}
	if err := sp.append(lines(3, 5)); err != nil {
		t.Fatal(err)
	}
	got, next, err := sp.read(100, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if want := ids(lines(0, 5)); !slices.Equal(ids(got), want) {
		t.Fatalf("read %q, want %q", ids(got), want)
	}
	if err := sp.acknowledge(next); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := sp.read(100, 1<<20); len(got) != 0 {
		t.Errorf("after acknowledging everything, read %q", ids(got))
	}
	// The crashed run's segment, torn tail and all, is gone.
	if _, err := os.Stat(seg); !os.IsNotExist(err) {
		t.Errorf("acknowledged segment %s: %v", seg, err)
	}
}

// TestSpoolAcknowledge: only what the centre acknowledged is forgotten;
// a restart sends the rest, in order; a lost cursor sends everything
// again rather than anything less.
func TestSpoolAcknowledge(t *testing.T) {
	dir := t.TempDir()
	sp, err := openSpool(dir, 1<<20, dropCount{}.add)
	if err != nil {
		t.Fatal(err)
	}
	if err := sp.append(lines(0, 10)); err != nil {
		t.Fatal(err)
	}
	got, next, err := sp.read(4, 1<<20)
	if err != nil || len(got) != 4 {
		t.Fatalf("read %d lines, %v", len(got), err)
	}
	// Read again before the acknowledgement: the same batch (a resend).
	again, _, _ := sp.read(4, 1<<20)
	if !slices.Equal(ids(again), ids(got)) {
		t.Fatalf("unacknowledged batch read again as %q, want %q", ids(again), ids(got))
	}
	if err := sp.acknowledge(next); err != nil {
		t.Fatal(err)
	}
	if err := sp.close(); err != nil {
		t.Fatal(err)
	}

	sp, err = openSpool(dir, 1<<20, dropCount{}.add)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err = sp.read(100, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if want := ids(lines(4, 10)); !slices.Equal(ids(got), want) {
		t.Fatalf("after a restart read %q, want %q", ids(got), want)
	}

	if err := os.Remove(filepath.Join(dir, cursorFile)); err != nil {
		t.Fatal(err)
	}
	sp, err = openSpool(dir, 1<<20, dropCount{}.add)
	if err != nil {
		t.Fatal(err)
	}
	got, _, _ = sp.read(100, 1<<20)
	if want := ids(lines(0, 10)); !slices.Equal(ids(got), want) {
		t.Fatalf("without a cursor read %q, want everything: %q", ids(got), want)
	}
}

// TestSpoolCap: past its cap the spool drops its oldest records, counts
// each, and keeps the newest; what it holds stays within the cap.
func TestSpoolCap(t *testing.T) {
	dir := t.TempDir()
	drops := dropCount{}
	const limit = 256 << 10
	sp, err := openSpool(dir, limit, drops.add)
	if err != nil {
		t.Fatal(err)
	}
	const n = 40000 // 16 bytes each: 640 KB, over twice the cap
	for i := 0; i < n; i += 100 {
		if err := sp.append(lines(i, i+100)); err != nil {
			t.Fatal(err)
		}
		if sp.size() > limit {
			t.Fatalf("spool holds %d bytes, over its cap of %d", sp.size(), limit)
		}
	}
	var read []string
	for {
		got, next, err := sp.read(shipBatch, shipBatchBytes)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			break
		}
		read = append(read, ids(got)...)
		if err := sp.acknowledge(next); err != nil {
			t.Fatal(err)
		}
	}
	if drops[dropCap] == 0 || drops[dropCap]+len(read) != n {
		t.Fatalf("dropped %d and read %d, want them to add up to %d with some dropped", drops[dropCap], len(read), n)
	}
	if want := ids(lines(n-len(read), n)); !slices.Equal(read, want) {
		t.Errorf("kept %d records from %s, want the newest", len(read), read[0])
	}
}
