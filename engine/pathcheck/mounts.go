package pathcheck

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// A proof about a path holds only on a file system whose answers come from
// this machine: a path that leads onto a network or FUSE file system (any
// type not in knowledge.LocalFileSystems) is refused with a *ForeignError,
// before the name that would enter it is looked up where the mount table
// tells, and after every look by the device found. Every walker of the
// engine looks at the disk through this file's functions or the walk, so
// the rule lives here once.

// ForeignError is the refusal of a path that leads onto a file system
// toolgate does not follow for proofs. Callers treat it as any error of a
// look: nothing is proven.
type ForeignError struct {
	Path   string
	FSType string
}

func (e *ForeignError) Error() string {
	return fmt.Sprintf("%s leads onto a file system of type %s, which toolgate does not follow for proofs (only local disk and kernel file systems)", e.Path, e.FSType)
}

// Look is one look at the file system: the mount table as it was when
// it began, shared by every call on it, so that a walker's looks in a row
// (git's setup up to /, a config's includes) poll the table once. Keep
// one for one walker's run within a check, never longer; a nil *Look
// polls on every call. Its methods are the package's functions of the
// same names. A check's Look (Proofs.Look) also starts from the
// directories its check has proven (see fromProven).
type Look struct {
	t  *mountTable
	pr *Proofs // the check's; nil for NewLook's
	// unseen refuses every look of a blind check (Proofs.Blind).
	unseen *UnseenError
}

// NewLook begins a look; the error is the mount table's (nothing proven).
func NewLook() (*Look, error) {
	t, err := currentMounts()
	if err != nil {
		return nil, err
	}
	return &Look{t: t}, nil
}

func (l *Look) table() (*mountTable, error) {
	switch {
	case l == nil:
		return currentMounts()
	case l.unseen != nil:
		return nil, l.unseen
	}
	return l.t, nil
}

// Lstat is os.Lstat that refuses a foreign file system: p (absolute) is
// walked as the kernel would, every directory on its way checked (links
// followed, their targets too) and its last component not followed; the
// device of what is found must be a local one. A missing component is
// fs.ErrNotExist, as for os.Lstat.
func Lstat(p string) (fs.FileInfo, error) { return (*Look)(nil).Lstat(p) }

// Lstat is the package's Lstat.
func (l *Look) Lstat(p string) (fs.FileInfo, error) {
	fi, _, err := l.look(p, false)
	return fi, err
}

// Stat is os.Stat that refuses a foreign file system anywhere on the way,
// links' targets included. It returns the resolved path too.
func Stat(p string) (fs.FileInfo, string, error) { return (*Look)(nil).Stat(p) }

// Stat is the package's Stat.
func (l *Look) Stat(p string) (fs.FileInfo, string, error) { return l.look(p, true) }

// look walks p and looks at what it leads to.
func (l *Look) look(p string, follow bool) (fs.FileInfo, string, error) {
	if !filepath.IsAbs(p) {
		return nil, "", fmt.Errorf("pathcheck: %q is not absolute", p)
	}
	t, err := l.table()
	if err != nil {
		return nil, "", err
	}
	// A name in a directory proven in this check: one lstat answers.
	if fi, ok, err := l.fromProven(t, p, follow); ok {
		return fi, p, err
	}
	// A clean path with no link on its way: one openat2 answers.
	if fi, ok, err := probeInfo(t, p, follow); ok {
		return fi, p, err
	}
	w, err := (*Proofs)(nil).walkWith(t, p, follow)
	if err != nil {
		return nil, "", err
	}
	fi, err := t.lstat(w.path)
	return fi, w.path, err
}

// lstat is os.Lstat of p, whose directories are free of links, refused on
// a foreign file system by the table t before and by the device after.
func (t *mountTable) lstat(p string) (fs.FileInfo, error) {
	if err := t.refuseWay(p); err != nil {
		return nil, err
	}
	countStat()
	fi, err := os.Lstat(p)
	if err != nil {
		return nil, err
	}
	if err := t.refuseFound(p, fi); err != nil {
		return nil, err
	}
	return fi, nil
}

// OpenFile opens p for reading (flag adds to O_RDONLY: O_NONBLOCK, ...)
// as Stat finds it: resolved by the walk, refused on a foreign file
// system, and opened at its resolved path without following a link
// there (one planted since the walk is an error, not followed).
func OpenFile(p string, flag int) (*os.File, error) { return (*Look)(nil).OpenFile(p, flag) }

// OpenFile is the package's OpenFile.
func (l *Look) OpenFile(p string, flag int) (*os.File, error) {
	_, r, err := l.Stat(p)
	if err != nil {
		return nil, err
	}
	return os.OpenFile(r, os.O_RDONLY|flag|syscall.O_NOFOLLOW, 0)
}

// OpenDir opens the directory p to list it, refusing a foreign file
// system by the table before the open and by the device of what was
// opened after. p must be resolved (free of links, itself included: the
// open does not follow one). os.Open would also try to register the
// directory with the network poller and make it non-blocking, four system
// calls of no use for a directory; os.NewFile asks one.
func OpenDir(p string) (*os.File, error) { return (*Look)(nil).OpenDir(p) }

// OpenDir is the package's OpenDir.
func (l *Look) OpenDir(p string) (*os.File, error) {
	t, err := l.table()
	if err != nil {
		return nil, err
	}
	if err := t.refuseWay(p); err != nil {
		return nil, err
	}
	// A directory on the way to a confined check's directory is passed,
	// never listed.
	if err := t.scope.refuse(p, false); err != nil {
		return nil, err
	}
	fd, err := syscall.Open(p, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	f := os.NewFile(uintptr(fd), p)
	fi, err := f.Stat()
	if err == nil {
		err = t.refuseFound(p, fi)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// ReadDir is os.ReadDir of p found as Stat finds it (links on the way
// followed, a foreign file system refused before it is entered), sorted
// by name.
func ReadDir(p string) ([]fs.DirEntry, error) { return (*Look)(nil).ReadDir(p) }

// ReadDir is the package's ReadDir.
func (l *Look) ReadDir(p string) ([]fs.DirEntry, error) {
	_, r, err := l.Stat(p)
	if err != nil {
		return nil, err
	}
	f, err := l.OpenDir(r)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ents, err := f.ReadDir(MaxDirEntries + 1)
	switch {
	case len(ents) > MaxDirEntries:
		return nil, fmt.Errorf("%s: %w", p, ErrTooManyEntries)
	case errors.Is(err, io.EOF):
		err = nil // an empty directory
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return ents, err
}

// MaxDirEntries bounds what ReadDir lists: the directory is the agent's,
// and a listing of millions of names would be work and memory without
// bound for one check. Git's own directories (hooks, packs, worktrees,
// loose refs) hold far fewer.
const MaxDirEntries = 16384

// ErrTooManyEntries is ReadDir's answer for a directory past MaxDirEntries:
// nothing about it is proven.
var ErrTooManyEntries = errors.New("the directory holds more entries than toolgate lists for a proof")
