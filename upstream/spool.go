package upstream

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// SpoolDir is where, in the state directory, a local server keeps the
// decision records not yet acknowledged by the centre.
const SpoolDir = "records"

// The spool's files: segments named by their sequence number, and the
// acknowledgement cursor (the position up to which the centre has
// acknowledged the records).
const (
	segmentSuffix = ".jsonl"
	cursorFile    = "acked"
)

// pos is a position in the spool: a byte offset in a segment. Every
// record before it is acknowledged (the cursor), or read (a batch's end).
type pos struct {
	seq uint64
	off int64
}

func (p pos) before(q pos) bool { return p.seq < q.seq || p.seq == q.seq && p.off < q.off }

type segment struct {
	seq  uint64
	size int64 // bytes of whole lines written (a torn tail of a crashed run's included)
}

// spool is an append-only store of records, one JSON line each, in
// segment files: records are appended to the newest segment (a new one
// per run, and when one reaches segMax), read back in order from the
// cursor, and a segment is deleted once the centre has acknowledged all
// of it. Past max bytes in all, the oldest segment is deleted whole and
// its unacknowledged records counted as dropped. A crash in the middle
// of a write leaves a torn last line: reading skips it.
type spool struct {
	dir     string
	max     int64
	segMax  int64
	dropped func(reason string, n int)

	mu     sync.Mutex
	segs   []segment // oldest first; the last is active once active != nil
	total  int64
	active *os.File
	ack    pos
	dirty  bool // written since the last sync
}

// openSpool opens (making it, 0700) the spool in dir, with what a
// previous run left there.
func openSpool(dir string, limit int64, dropped func(string, int)) (*spool, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	s := &spool{dir: dir, max: limit, segMax: min(max(limit/16, 64<<10), 8<<20), dropped: dropped}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), segmentSuffix)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		seq, err := strconv.ParseUint(name, 10, 64)
		if err != nil {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return nil, err
		}
		s.segs = append(s.segs, segment{seq: seq, size: info.Size()})
	}
	slices.SortFunc(s.segs, func(a, b segment) int { return cmpUint(a.seq, b.seq) })
	for _, g := range s.segs {
		s.total += g.size
	}
	// A missing or unreadable cursor means nothing is known acknowledged:
	// everything is sent again, which the centre ignores.
	if b, err := os.ReadFile(filepath.Join(dir, cursorFile)); err == nil {
		var p pos
		if _, err := fmt.Sscanf(string(b), "%d %d", &p.seq, &p.off); err == nil {
			s.ack = p
		}
	}
	if len(s.segs) > 0 && s.ack.seq < s.segs[0].seq {
		s.ack = pos{seq: s.segs[0].seq}
	}
	s.removeAckedLocked()
	return s, nil
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (s *spool) segPath(seq uint64) string {
	return filepath.Join(s.dir, fmt.Sprintf("%020d%s", seq, segmentSuffix))
}

// append writes lines (each ending in a newline) to the active segment,
// starting a new one when there is none or it is full, then drops the
// oldest segments while the spool is over its cap.
func (s *spool) append(lines [][]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active == nil || s.segs[len(s.segs)-1].size >= s.segMax {
		if err := s.rotateLocked(); err != nil {
			return err
		}
	}
	n, err := s.active.Write(bytes.Join(lines, nil))
	s.segs[len(s.segs)-1].size += int64(n)
	s.total += int64(n)
	s.dirty = true
	for s.total > s.max && len(s.segs) > 1 {
		s.dropOldestLocked()
	}
	return err
}

func (s *spool) rotateLocked() error {
	seq := uint64(1)
	if len(s.segs) > 0 {
		seq = s.segs[len(s.segs)-1].seq + 1
	}
	f, err := os.OpenFile(s.segPath(seq), os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	if s.active != nil {
		// The sealed segment is synced before it is let go: sync only
		// syncs the active one.
		_ = s.active.Sync()
		_ = s.active.Close()
	}
	s.active = f
	s.segs = append(s.segs, segment{seq: seq})
	if len(s.segs) == 1 {
		s.ack = pos{seq: seq}
	}
	syncDir(s.dir)
	return nil
}

// dropOldestLocked deletes the oldest segment, counting the records in
// it not yet acknowledged.
func (s *spool) dropOldestLocked() {
	g := s.segs[0]
	from := int64(0)
	if g.seq == s.ack.seq {
		from = s.ack.off
	}
	n := 0
	if f, err := os.Open(s.segPath(g.seq)); err == nil {
		if _, err := f.Seek(from, io.SeekStart); err == nil {
			n, _ = countLines(io.LimitReader(f, g.size-from))
		}
		_ = f.Close()
	}
	_ = os.Remove(s.segPath(g.seq))
	s.segs = s.segs[1:]
	s.total -= g.size
	if s.ack.before(pos{seq: s.segs[0].seq}) {
		s.ack = pos{seq: s.segs[0].seq}
	}
	if n > 0 {
		s.dropped(dropCap, n)
	}
}

func countLines(r io.Reader) (int, error) {
	buf := make([]byte, 32<<10)
	n := 0
	for {
		k, err := r.Read(buf)
		n += bytes.Count(buf[:k], []byte{'\n'})
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// sync makes what was appended durable.
func (s *spool) sync() error {
	s.mu.Lock()
	f, dirty := s.active, s.dirty
	s.dirty = false
	s.mu.Unlock()
	if f == nil || !dirty {
		return nil
	}
	if err := f.Sync(); err != nil && !errors.Is(err, fs.ErrClosed) {
		return err
	}
	return nil
}

// read returns up to maxLines whole lines (maxBytes in all, but at least
// one) from the cursor on, and the position after the last line read
// (the cursor when nothing was). A line with no newline at the end of a
// sealed segment is a crashed run's torn write: skipped.
func (s *spool) read(maxLines int, maxBytes int64) ([][]byte, pos, error) {
	s.mu.Lock()
	at := s.ack
	segs := slices.Clone(s.segs)
	activeSeq := uint64(0)
	if s.active != nil {
		activeSeq = segs[len(segs)-1].seq
	}
	s.mu.Unlock()
	var lines [][]byte
	var size int64
	for _, g := range segs {
		if g.seq < at.seq {
			continue
		}
		if g.seq > at.seq {
			at = pos{seq: g.seq}
		}
		if at.off >= g.size {
			continue
		}
		f, err := os.Open(s.segPath(g.seq))
		if errors.Is(err, fs.ErrNotExist) {
			continue // dropped by the cap meanwhile
		}
		if err != nil {
			return lines, at, err
		}
		if _, err := f.Seek(at.off, io.SeekStart); err != nil {
			_ = f.Close()
			return lines, at, err
		}
		r := bufio.NewReaderSize(io.LimitReader(f, g.size-at.off), 64<<10)
		for len(lines) < maxLines && (size < maxBytes || len(lines) == 0) {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 && line[len(line)-1] == '\n' {
				at.off += int64(len(line))
				lines = append(lines, line)
				size += int64(len(line))
				continue
			}
			if len(line) > 0 && g.seq != activeSeq {
				at.off += int64(len(line)) // torn
			}
			if err != nil && err != io.EOF {
				_ = f.Close()
				return lines, at, err
			}
			break
		}
		_ = f.Close()
		if len(lines) >= maxLines || size >= maxBytes {
			break
		}
	}
	return lines, at, nil
}

// acknowledge moves the cursor to p (the centre stored everything
// before it), saves it, and deletes the segments wholly before it.
func (s *spool) acknowledge(p pos) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ack.before(p) {
		return nil // the cap dropped past it meanwhile
	}
	s.ack = p
	s.removeAckedLocked()
	// Not synced: a cursor lost in a crash sends records again, which
	// the centre ignores.
	tmp := filepath.Join(s.dir, "."+cursorFile+".tmp")
	if err := os.WriteFile(tmp, fmt.Appendf(nil, "%d %d\n", s.ack.seq, s.ack.off), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(s.dir, cursorFile))
}

// removeAckedLocked deletes the segments the cursor is past: those before
// its segment, and its segment when read to the end and sealed.
func (s *spool) removeAckedLocked() {
	for len(s.segs) > 0 {
		g := s.segs[0]
		active := s.active != nil && len(s.segs) == 1
		if active || g.seq > s.ack.seq || g.seq == s.ack.seq && s.ack.off < g.size {
			return
		}
		_ = os.Remove(s.segPath(g.seq))
		s.segs = s.segs[1:]
		s.total -= g.size
		if len(s.segs) > 0 && s.ack.seq <= g.seq {
			s.ack = pos{seq: s.segs[0].seq}
		}
	}
}

// size is the spool's bytes on disk.
func (s *spool) size() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// close syncs and closes the active segment.
func (s *spool) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active == nil {
		return nil
	}
	err := errors.Join(s.active.Sync(), s.active.Close())
	s.active = nil
	return err
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}

// cursor is the acknowledged position.
func (s *spool) cursor() pos {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ack
}
