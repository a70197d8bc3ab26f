package pathcheck

import (
	"errors"
	"io/fs"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// openat2Missing is set once the kernel (or a seccomp filter) answers
// openat2 with ENOSYS: every later path takes the component walk.
var openat2Missing atomic.Bool

// linkFree reports whether the kernel resolves abs with no symbolic link on
// the way, itself included, and every component existing (and abs a
// directory, if dir is set): then the
// kernel's resolution and the lexical one agree, and the clean path is the
// answer. One openat2(O_PATH, RESOLVE_NO_SYMLINKS) proves it in two system
// calls where the walk takes one lstat per component. Any other answer
// (a link, a missing component, ENOTDIR, EACCES, ...) says nothing, and the
// caller walks the components, so the two can never disagree on an error.
// Nothing is remembered between calls: each check sees the file system as
// it is. A path whose way enters a foreign mount (by the table t), or
// that ends on a foreign device, is not proven here: the walk refuses it
// at the component where it leads there.
func linkFree(t *mountTable, abs string, dir bool) (string, bool) {
	r, state, _ := probe(t, abs, dir, false)
	return r, state == linkProven
}

// linkState is what one openat2 with RESOLVE_NO_SYMLINKS tells of a path.
type linkState uint8

const (
	// linkUnknown: a link on the way, a foreign mount, an error: the
	// components must be walked.
	linkUnknown linkState = iota
	// linkProven: no link, every component there, on a local device.
	linkProven
	// linkAbsent: a component is missing, and no link came before it:
	// the kernel, following links or not, finds nothing there either.
	linkAbsent
)

// probe is linkFree's one look, also telling a path absent, with the
// stat of what it found. With noFollowFinal, a link as the last component
// is itself the answer (O_PATH|O_NOFOLLOW opens the link), as for lstat.
func probe(t *mountTable, abs string, dir, noFollowFinal bool) (string, linkState, *syscall.Stat_t) {
	if openat2Missing.Load() || len(abs) >= pathMax || t.foreignOnWay(abs) != "" || t.scope.refuse(abs, true) != nil {
		return "", linkUnknown, nil
	}
	// O_PATH opens nothing: no FIFO blocks, no device is touched, and no
	// read permission is needed, as for lstat.
	flags := uint64(unix.O_PATH | unix.O_CLOEXEC)
	if dir {
		flags |= unix.O_DIRECTORY
	}
	if noFollowFinal {
		flags |= unix.O_NOFOLLOW
	}
	countOpen()
	fd, err := unix.Openat2(unix.AT_FDCWD, abs, &unix.OpenHow{
		Flags:   flags,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		switch {
		case errors.Is(err, unix.ENOSYS):
			openat2Missing.Store(true)
		case errors.Is(err, unix.ENOENT):
			return "", linkAbsent, nil
		}
		return "", linkUnknown, nil
	}
	// The look after the look: the device of what was found. The table
	// was polled at the walk's start, so this is a map lookup.
	var st syscall.Stat_t
	countFstat()
	err = syscall.Fstat(fd, &st)
	_ = unix.Close(fd)
	if err != nil || t.refuseDev(abs, st.Dev) != nil {
		return "", linkUnknown, nil
	}
	return filepath.Clean(abs), linkProven, &st
}

// statInfo is the fs.FileInfo of a stat, as os.Lstat builds it.
type statInfo struct {
	name string
	st   *syscall.Stat_t
}

func (s statInfo) Name() string       { return s.name }
func (s statInfo) Size() int64        { return s.st.Size }
func (s statInfo) ModTime() time.Time { return time.Unix(s.st.Mtim.Unix()) }
func (s statInfo) IsDir() bool        { return s.Mode().IsDir() }
func (s statInfo) Sys() any           { return s.st }
func (s statInfo) Mode() fs.FileMode {
	m := fs.FileMode(s.st.Mode & 0o777)
	switch s.st.Mode & syscall.S_IFMT {
	case syscall.S_IFBLK:
		m |= fs.ModeDevice
	case syscall.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFDIR:
		m |= fs.ModeDir
	case syscall.S_IFIFO:
		m |= fs.ModeNamedPipe
	case syscall.S_IFLNK:
		m |= fs.ModeSymlink
	case syscall.S_IFSOCK:
		m |= fs.ModeSocket
	}
	if s.st.Mode&syscall.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if s.st.Mode&syscall.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if s.st.Mode&syscall.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// probeInfo is probe's answer for Lstat (noFollowFinal) or Stat: the
// FileInfo when proven, fs.ErrNotExist when absent; ok false when only
// the walk can tell.
func probeInfo(t *mountTable, p string, follow bool) (fs.FileInfo, bool, error) {
	if !isClean(p) {
		return nil, false, nil
	}
	r, state, st := probe(t, p, false, !follow)
	switch state {
	case linkProven:
		return statInfo{name: filepath.Base(r), st: st}, true, nil
	case linkAbsent:
		return nil, true, &fs.PathError{Op: "lstat", Path: p, Err: syscall.ENOENT}
	}
	return nil, false, nil
}
