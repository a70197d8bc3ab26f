package server

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

// auditFile is the audit log's file, rotated by size with lumberjack's
// backup names (NAME-TIMESTAMP.EXT beside it). It is written by toolgate
// alone, so it trusts nothing it finds at its path that it did not open:
//   - before each record it compares the path's identity (device and
//     inode, by lstat) with the open file's, so that a file removed or
//     renamed away (an agent, an admin's logrotate) is noticed on the next
//     record, not after every later record went into a deleted inode;
//   - it never opens through a symbolic link (O_NOFOLLOW, and lstat before
//     and fstat after an open must agree), and adopts an existing file only
//     if it is a regular file of its own user with one link, and, when the
//     switch was not asked for (SIGHUP, startup), only an empty one (what
//     logrotate's create leaves): a planted file with records in it, or one
//     hard-linked to a file elsewhere, is set aside and a fresh file made;
//   - a record it cannot write is counted (failed) and reported on the
//     main log at most once per auditReportEvery, with how many were lost.
type auditFile struct {
	path       string // absolute, its directory resolved at startup
	maxSize    int64
	maxBackups int
	log        *zap.Logger // the main log
	failed     func()      // counts one record not written; never nil
	euid       uint32

	mu   sync.Mutex
	f    *os.File // nil until opened, and after a failed open
	id   fileID   // f's device and inode; kept when f is closed
	size int64
	// unreported counts records lost since the last line on the main log
	// about them, lastReport is when that line was written.
	unreported int64
	lastReport time.Time
}

type fileID struct{ dev, ino uint64 }

// auditReportEvery is how often at most the main log gets a line about
// audit records that could not be written: a full or failing disk fails
// every record, and one line per decision would flood the main log (and
// perhaps the same disk). Each line says how many records were lost since
// the previous one; toolgate_audit_write_failures_total counts them all.
const auditReportEvery = 10 * time.Second

// auditOpenAttempts bounds how often an open retries when what is at the
// path changes between its lstat and its open.
const auditOpenAttempts = 4

// backupTimeFormat is lumberjack's: backups of earlier releases are
// recognised, and pruned, alike.
const backupTimeFormat = "2006-01-02T15-04-05.000"

// newAuditFile opens the audit file, creating it (and its directory) now
// so that a path the server cannot write is a startup error.
func newAuditFile(c AuditConfig, log *zap.Logger, failed func()) (*auditFile, error) {
	abs, err := filepath.Abs(c.File)
	if err != nil {
		return nil, fmt.Errorf("server.audit.file: %w", err)
	}
	dir := filepath.Dir(abs)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("server.audit.file: %w", err)
	}
	// The directory as it is now: a symlink swapped later cannot move
	// the records elsewhere.
	if dir, err = filepath.EvalSymlinks(dir); err != nil {
		return nil, fmt.Errorf("server.audit.file: %w", err)
	}
	path := filepath.Join(dir, filepath.Base(abs))
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return nil, fmt.Errorf("server.audit.file: %s is a symbolic link: toolgate writes its audit file only where it can tell it is its own; name the file it points to", c.File)
	}
	if failed == nil {
		failed = func() {}
	}
	w := &auditFile{path: path, maxSize: int64(c.MaxSizeMB) << 20, maxBackups: c.MaxBackups, log: log, failed: failed, euid: uint32(os.Geteuid())}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.open(true); err != nil {
		return nil, fmt.Errorf("server.audit.file: %w", err)
	}
	return w, nil
}

// Write writes one record (zap writes each entry in one call).
func (w *auditFile) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.write(p)
	w.note(err)
	return n, err
}

func (w *auditFile) write(p []byte) (int, error) {
	if err := w.current(); err != nil {
		return 0, err
	}
	if w.size > 0 && w.size+int64(len(p)) > w.maxSize {
		if err := w.rotate(); err != nil {
			return 0, err
		}
	}
	n, err := w.f.Write(p)
	w.size += int64(n)
	if err == nil && n < len(p) {
		err = fmt.Errorf("short write: %d of %d bytes", n, len(p))
	}
	return n, err
}

// current makes sure the open file is the one at the path, reopening when
// it was removed or replaced.
func (w *auditFile) current() error {
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
	w.log.Warn("the audit file was "+what+"; writing the next records to a new file at its path", zap.String("file", w.path))
	w.closeFile()
	return w.open(false)
}

// reopen closes the file and opens the one at the path again (SIGHUP):
// an admin who moved it away, or made a new one, is followed.
func (w *auditFile) reopen() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closeFile()
	return w.open(true)
}

// Close closes the file; a later Write would open it again.
func (w *auditFile) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	return err
}

func (w *auditFile) closeFile() {
	if w.f != nil {
		_ = w.f.Close()
		w.f = nil
	}
}

// open opens the file at the path, or a new one; asked is whether the
// operator asked for it (startup, SIGHUP), which lets it adopt a file that
// already holds records. The file it last had open (after Close, or a
// rotation whose rename failed) is its own and taken back as it is.
func (w *auditFile) open(asked bool) error {
	// An admin may have removed the directory too; what is there now must
	// still be reached without a symbolic link, as it was at startup
	// (O_NOFOLLOW guards the last component only).
	dir := filepath.Dir(w.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if r, err := filepath.EvalSymlinks(dir); err != nil || r != dir {
		return fmt.Errorf("the audit file's directory %s is now reached through a symbolic link (%s, %v); not writing there", dir, r, err)
	}
	for range auditOpenAttempts {
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

func (w *auditFile) use(f *os.File, size int64) error {
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
func (w *auditFile) adoptable(fi fs.FileInfo, asked bool) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && fi.Mode().IsRegular() && st.Nlink == 1 && st.Uid == w.euid && (asked || fi.Size() == 0)
}

// setAside moves what was found at the path out of the way, keeping it for
// whoever looks into it: a symbolic link is removed (the link, never what
// it names), anything else renamed to NAME-TIMESTAMP-replaced.EXT, which
// is guarded like the backups and never pruned as one.
func (w *auditFile) setAside(fi fs.FileInfo) error {
	if fi.Mode()&fs.ModeSymlink != 0 {
		w.log.Warn("a symbolic link replaced the audit file; removed the link, and writing to a new file", zap.String("file", w.path))
		if err := os.Remove(w.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	aside := w.backupName("-replaced")
	w.log.Warn("the audit file's path holds a file toolgate did not make (or one with other names); set it aside, and writing to a new file",
		zap.String("file", w.path), zap.String("set_aside_as", aside), zap.Stringer("mode", fi.Mode()))
	if err := os.Rename(w.path, aside); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// rotate moves the full file to a backup, starts a new one and prunes the
// backups past maxBackups.
func (w *auditFile) rotate() error {
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
func (w *auditFile) backupName(tag string) string {
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
func (w *auditFile) prune() {
	if w.maxBackups <= 0 {
		return
	}
	dir, base := filepath.Split(w.path)
	ext := filepath.Ext(base)
	prefix := base[:len(base)-len(ext)] + "-"
	entries, err := os.ReadDir(dir)
	if err != nil {
		w.log.Warn("pruning the audit backups", zap.Error(err))
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
			w.log.Warn("pruning the audit backups", zap.Error(err))
		}
	}
}

// note counts a record not written (err not nil) and writes a line about
// the records lost since the last one, at most once per auditReportEvery:
// on a failure, or on the first success once that time has passed.
func (w *auditFile) note(err error) {
	if err != nil {
		w.failed()
		w.unreported++
	}
	if w.unreported == 0 {
		return
	}
	now := time.Now()
	if !w.lastReport.IsZero() && now.Sub(w.lastReport) < auditReportEvery {
		return
	}
	if err != nil {
		w.log.Error("audit records not written; the decisions were made but not audited",
			zap.String("file", w.path), zap.Int64("records", w.unreported), zap.Error(err))
	} else {
		w.log.Warn("the audit file takes records again; some were not written since the last report",
			zap.String("file", w.path), zap.Int64("records", w.unreported))
	}
	w.unreported, w.lastReport = 0, now
}

func idOf(fi fs.FileInfo) fileID {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}
	}
	return fileID{uint64(st.Dev), st.Ino}
}

// Backups are the globs of the files the audit log writes besides the
// file itself: its backups, rotated (with lumberjack's gzip suffix too) or
// set aside, beside it. Empty without an audit log.
func (c AuditConfig) Backups() []string {
	if c.File == "" {
		return nil
	}
	abs, err := filepath.Abs(c.File)
	if err != nil {
		return nil
	}
	dir, base := filepath.Split(abs)
	ext := filepath.Ext(base)
	prefix := base[:len(base)-len(ext)]
	return []string{dir + prefix + "-*" + ext, dir + prefix + "-*" + ext + ".gz"}
}
