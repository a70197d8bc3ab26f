// Package ownfile writes a file toolgate owns: the audit log, the
// classifier's dump. Such a file holds records an agent must not forge,
// hide or redirect, so the writer trusts nothing it finds at its path that
// it did not open itself:
//   - before each write it compares the path's identity (device and
//     inode, by lstat) with the open file's, so that a file removed or
//     renamed away (an agent, an admin's logrotate) is noticed on the next
//     write, not after every later record went into a deleted inode;
//   - it never opens through a symbolic link (O_NOFOLLOW, and lstat before
//     and fstat after an open must agree), and adopts an existing file only
//     if it is a regular file of its own user with one link, and, when the
//     switch was not asked for (SIGHUP, startup), only an empty one (what
//     logrotate's create leaves): a planted file with records in it, or one
//     hard-linked to a file elsewhere, is set aside and a fresh file made;
//   - it rotates by size, with lumberjack's backup names, when asked;
//   - a record it cannot write is counted (Options.Failed) and reported on
//     the main log at most once per ReportEvery, with how many were lost.
//
// File writes in the caller's goroutine; Queue puts a bounded queue and a
// writer goroutine in front of it, so that a file system that stops
// answering holds the writer, never the caller.
package ownfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"
)

// Options describe one owned file.
type Options struct {
	// Path is the file. Its directory is made if missing and resolved at
	// Open: a symbolic link swapped in later cannot move the records.
	Path string
	// Field is the config path named in errors ("server.audit.file").
	Field string
	// What names the records in log lines ("audit", "classifier dump").
	What string
	// MaxSize rotates the file when a write would take it past this many
	// bytes; 0 never rotates. MaxBackups is how many rotated files are
	// kept (0: all).
	MaxSize    int64
	MaxBackups int
	// Log is the main log, for what happens to the file; nil logs nothing.
	Log *zap.Logger
	// Failed counts records not written; nil counts nothing. It is called
	// from the writer and from Queue.Write: it must not block.
	Failed func(records int)
}

// File is an owned file, written in the caller's goroutine.
type File struct {
	path       string // absolute, its directory resolved at Open
	maxSize    int64
	maxBackups int
	what       string
	log        *zap.Logger
	euid       uint32
	rep        *reporter

	mu   sync.Mutex
	f    *os.File // nil until opened, and after a failed open
	id   fileID   // f's device and inode; kept when f is closed
	size int64
	buf  []byte // joins a chunk of records for one write; at most writeChunk
}

type fileID struct{ dev, ino uint64 }

// ReportEvery is how often at most the main log gets a line about records
// that could not be written: a full or failing disk fails every record,
// and one line per record would flood the main log (and perhaps the same
// disk). Each line says how many records were lost since the previous
// one; Options.Failed counts them all.
const ReportEvery = 10 * time.Second

// openAttempts bounds how often an open retries when what is at the
// path changes between its lstat and its open.
const openAttempts = 4

// backupTimeFormat is lumberjack's: backups of earlier releases are
// recognised, and pruned, alike.
const backupTimeFormat = "2006-01-02T15-04-05.000"

// Open opens the file, creating it (and its directory) now so that a path
// the process cannot write is a startup error.
func Open(o Options) (*File, error) {
	abs, err := filepath.Abs(o.Path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.Field, err)
	}
	dir := filepath.Dir(abs)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("%s: %w", o.Field, err)
	}
	// The directory as it is now: a symlink swapped later cannot move
	// the records elsewhere.
	if dir, err = filepath.EvalSymlinks(dir); err != nil {
		return nil, fmt.Errorf("%s: %w", o.Field, err)
	}
	path := filepath.Join(dir, filepath.Base(abs))
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return nil, fmt.Errorf("%s: %s is a symbolic link: toolgate writes its %s file only where it can tell it is its own; name the file it points to", o.Field, o.Path, o.What)
	}
	log := o.Log
	if log == nil {
		log = zap.NewNop()
	}
	failed := o.Failed
	if failed == nil {
		failed = func(int) {}
	}
	w := &File{path: path, maxSize: o.MaxSize, maxBackups: o.MaxBackups, what: o.What, log: log, euid: uint32(os.Geteuid()),
		rep: &reporter{path: path, what: o.What, log: log, failed: failed}}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.open(true); err != nil {
		return nil, fmt.Errorf("%s: %w", o.Field, err)
	}
	return w, nil
}

// Path is the file's absolute path, its directory resolved.
func (w *File) Path() string { return w.path }

// Write writes one record (zap writes each entry in one call). A record
// not written is counted and reported.
func (w *File) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.write(p)
	w.rep.note(1, err)
	return n, err
}

func (w *File) write(p []byte) (int, error) {
	if err := w.current(); err != nil {
		return 0, err
	}
	if err := w.rotateFor(len(p)); err != nil {
		return 0, err
	}
	n, err := w.f.Write(p)
	w.size += int64(n)
	if err == nil && n < len(p) {
		err = fmt.Errorf("short write: %d of %d bytes", n, len(p))
	}
	return n, err
}

// writeChunk bounds the bytes of records joined into one write: few
// system calls per batch, and a small buffer kept for the next.
const writeChunk = 256 << 10

// writeRecords writes recs in as few writes as the rotation size and
// writeChunk allow (one lstat and one write per chunk, not per record),
// and counts the ones not written.
func (w *File) writeRecords(recs [][]byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := 0; i < len(recs); {
		if err := w.current(); err != nil {
			w.rep.note(len(recs)-i, err)
			return
		}
		if err := w.rotateFor(len(recs[i])); err != nil {
			w.rep.note(len(recs)-i, err)
			return
		}
		// The records that fit before the next rotation and in a chunk;
		// at least one.
		j, n := i+1, len(recs[i])
		for j < len(recs) && n+len(recs[j]) <= writeChunk && (w.maxSize <= 0 || w.size+int64(n+len(recs[j])) <= w.maxSize) {
			n += len(recs[j])
			j++
		}
		p := recs[i]
		if j > i+1 {
			w.buf = w.buf[:0]
			for _, r := range recs[i:j] {
				w.buf = append(w.buf, r...)
			}
			p = w.buf
		}
		written, err := w.f.Write(p)
		w.size += int64(written)
		if err == nil && written < len(p) {
			err = fmt.Errorf("short write: %d of %d bytes", written, len(p))
		}
		if err != nil {
			// Records cut short count as lost, and so does the rest of
			// the batch: the next batch tries again.
			done, end := i, 0
			for done < j && end+len(recs[done]) <= written {
				end += len(recs[done])
				done++
			}
			w.rep.note(done-i, nil)
			w.rep.note(len(recs)-done, err)
			return
		}
		w.rep.note(j-i, nil)
		i = j
	}
}

// rotateFor rotates the file first if n more bytes would take it past
// the rotation size (a file holding nothing yet takes any record).
func (w *File) rotateFor(n int) error {
	if w.maxSize > 0 && w.size > 0 && w.size+int64(n) > w.maxSize {
		return w.rotate()
	}
	return nil
}

// current makes sure the open file is the one at the path, reopening when
// it was removed or replaced.
func (w *File) current() error {
	if w.f == nil {
		return w.open(false)
	}
	fi, err := os.Lstat(w.path)
	if err == nil && idOf(fi) == w.id {
		return nil
	}
	what := "replaced"
	if errors.Is(err, fs.ErrNotExist) {
		what = "removed"
	}
	w.log.Warn("the "+w.what+" file was "+what+"; writing the next records to a new file at its path", zap.String("file", w.path))
	w.closeFile()
	return w.open(false)
}

// Reopen closes the file and opens the one at the path again (SIGHUP):
// an admin who moved it away, or made a new one, is followed.
func (w *File) Reopen() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closeFile()
	return w.open(true)
}

// Close closes the file; a later Write would open it again.
func (w *File) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	return err
}

func (w *File) closeFile() {
	if w.f != nil {
		_ = w.f.Close()
		w.f = nil
	}
}

// open opens the file at the path, or a new one; asked is whether the
// operator asked for it (startup, SIGHUP), which lets it adopt a file that
// already holds records. The file it last had open (after Close, or a
// rotation whose rename failed) is its own and taken back as it is.
func (w *File) open(asked bool) error {
	// An admin may have removed the directory too; what is there now must
	// still be reached without a symbolic link, as it was at startup
	// (O_NOFOLLOW guards the last component only).
	dir := filepath.Dir(w.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if r, err := filepath.EvalSymlinks(dir); err != nil || r != dir {
		return fmt.Errorf("the %s file's directory %s is now reached through a symbolic link (%s, %v); not writing there", w.what, dir, r, err)
	}
	for range openAttempts {
		fi, err := os.Lstat(w.path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// O_EXCL: never through a link, never a file someone made
			// since the lstat.
			f, err := os.OpenFile(w.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
			if errors.Is(err, fs.ErrExist) {
				continue
			}
			if err != nil {
				return err
			}
			return w.use(f, 0)
		case err != nil:
			return err
		case w.adoptable(fi, asked || idOf(fi) == w.id):
			// O_NONBLOCK: a FIFO swapped in since the lstat must not hold
			// the open; fstat then tells it from the file lstat saw.
			f, err := os.OpenFile(w.path, os.O_WRONLY|os.O_APPEND|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
			if err != nil {
				if errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.ENXIO) || errors.Is(err, fs.ErrNotExist) {
					continue // changed since the lstat
				}
				return err
			}
			st, err := f.Stat()
			if err != nil || !st.Mode().IsRegular() || idOf(st) != idOf(fi) {
				_ = f.Close()
				if err != nil {
					return err
				}
				continue
			}
			return w.use(f, st.Size())
		default:
			if err := w.setAside(fi); err != nil {
				return err
			}
		}
	}
	return fmt.Errorf("%s kept changing while it was opened", w.path)
}

func (w *File) use(f *os.File, size int64) error {
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return err
	}
	w.f, w.id, w.size = f, idOf(st), size
	return nil
}

// adoptable reports whether the file found at the path may take the
// records: a regular file of this user with no other name (a hard link
// would put them, and the agents' text in them, into a file elsewhere)
// and, unless the operator asked, empty.
func (w *File) adoptable(fi fs.FileInfo, asked bool) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && fi.Mode().IsRegular() && st.Nlink == 1 && st.Uid == w.euid && (asked || fi.Size() == 0)
}

// setAside moves what was found at the path out of the way, keeping it for
// whoever looks into it: a symbolic link is removed (the link, never what
// it names), anything else renamed to NAME-TIMESTAMP-replaced.EXT, which
// is guarded like the backups and never pruned as one.
func (w *File) setAside(fi fs.FileInfo) error {
	if fi.Mode()&fs.ModeSymlink != 0 {
		w.log.Warn("a symbolic link replaced the "+w.what+" file; removed the link, and writing to a new file", zap.String("file", w.path))
		if err := os.Remove(w.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	aside := w.backupName("-replaced")
	w.log.Warn("the "+w.what+" file's path holds a file toolgate did not make (or one with other names); set it aside, and writing to a new file",
		zap.String("file", w.path), zap.String("set_aside_as", aside), zap.Stringer("mode", fi.Mode()))
	if err := os.Rename(w.path, aside); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// rotate moves the full file to a backup, starts a new one and prunes the
// backups past maxBackups.
func (w *File) rotate() error {
	w.closeFile()
	if err := os.Rename(w.path, w.backupName("")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := w.open(false); err != nil {
		return err
	}
	w.prune()
	return nil
}

// backupName is a name beside the file, NAME-TIMESTAMP[tag].EXT, that is
// not taken yet (two rotations within a millisecond would otherwise share
// one).
func (w *File) backupName(tag string) string {
	dir, base := filepath.Split(w.path)
	ext := filepath.Ext(base)
	prefix := base[:len(base)-len(ext)]
	t := time.Now().UTC()
	for {
		name := filepath.Join(dir, prefix+"-"+t.Format(backupTimeFormat)+tag+ext)
		if _, err := os.Lstat(name); errors.Is(err, fs.ErrNotExist) {
			return name
		}
		t = t.Add(time.Millisecond)
	}
}

// prune removes the oldest backups past maxBackups (0 keeps them all), as
// lumberjack did: its backups, and compressed ones, count too.
func (w *File) prune() {
	if w.maxBackups <= 0 {
		return
	}
	dir, base := filepath.Split(w.path)
	ext := filepath.Ext(base)
	prefix := base[:len(base)-len(ext)] + "-"
	entries, err := os.ReadDir(dir)
	if err != nil {
		w.log.Warn("pruning the "+w.what+" backups", zap.Error(err))
		return
	}
	type backup struct {
		name string
		t    time.Time
	}
	var backups []backup
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		ts, ok := strings.CutPrefix(strings.TrimSuffix(e.Name(), ".gz"), prefix)
		if !ok {
			continue
		}
		ts, ok = strings.CutSuffix(ts, ext)
		if !ok {
			continue
		}
		if t, err := time.Parse(backupTimeFormat, ts); err == nil {
			backups = append(backups, backup{e.Name(), t})
		}
	}
	slices.SortFunc(backups, func(a, b backup) int { return b.t.Compare(a.t) })
	for _, b := range backups[min(len(backups), w.maxBackups):] {
		if err := os.Remove(filepath.Join(dir, b.name)); err != nil {
			w.log.Warn("pruning the "+w.what+" backups", zap.Error(err))
		}
	}
}

// reporter counts records not written and writes a line about them on
// the main log, at most once per ReportEvery. It has a lock of its own:
// Queue.Write reports a record the queue has no room for while the writer
// may be held in a system call with the file's lock.
type reporter struct {
	path   string
	what   string
	log    *zap.Logger
	failed func(int)

	mu sync.Mutex
	// unreported counts records lost since the last line on the main log
	// about them, lastReport is when that line was written.
	unreported int64
	lastReport time.Time
}

// note counts n records: not written when err is not nil, written
// otherwise. It writes a line about the records lost since the last one,
// at most once per ReportEvery: on a failure, or on the first success
// once that time has passed.
func (r *reporter) note(n int, err error) {
	if n == 0 {
		return
	}
	if err != nil {
		r.failed(n)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.unreported += int64(n)
	}
	if r.unreported == 0 {
		return
	}
	now := time.Now()
	if !r.lastReport.IsZero() && now.Sub(r.lastReport) < ReportEvery {
		return
	}
	r.flush(err)
	r.lastReport = now
}

// flush writes the line about the unreported records now.
func (r *reporter) flush(err error) {
	if err != nil {
		r.log.Error(r.what+" records not written",
			zap.String("file", r.path), zap.Int64("records", r.unreported), zap.Error(err))
	} else {
		r.log.Warn("the "+r.what+" file takes records again; some were not written since the last report",
			zap.String("file", r.path), zap.Int64("records", r.unreported))
	}
	r.unreported = 0
}

func idOf(fi fs.FileInfo) fileID {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}
	}
	return fileID{uint64(st.Dev), st.Ino}
}

// Backups are the globs of the files written besides the file at path:
// its backups, rotated (with lumberjack's gzip suffix too) or set aside,
// beside it.
func Backups(path string) []string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil
	}
	dir, base := filepath.Split(abs)
	ext := filepath.Ext(base)
	prefix := base[:len(base)-len(ext)]
	return []string{dir + prefix + "-*" + ext, dir + prefix + "-*" + ext + ".gz"}
}
