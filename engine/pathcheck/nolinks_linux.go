package pathcheck

import (
	"errors"
	"path/filepath"
	"sync/atomic"

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
	if openat2Missing.Load() || len(abs) >= pathMax || t.foreignOnWay(abs) != "" {
		return "", false
	}
	// O_PATH opens nothing: no FIFO blocks, no device is touched, and no
	// read permission is needed, as for lstat.
	flags := uint64(unix.O_PATH | unix.O_CLOEXEC)
	if dir {
		flags |= unix.O_DIRECTORY
	}
	fd, err := unix.Openat2(unix.AT_FDCWD, abs, &unix.OpenHow{
		Flags:   flags,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		if errors.Is(err, unix.ENOSYS) {
			openat2Missing.Store(true)
		}
		return "", false
	}
	var st unix.Stat_t
	err = unix.Fstat(fd, &st)
	_ = unix.Close(fd)
	if err != nil || t.refuseDev(abs, st.Dev) != nil {
		return "", false
	}
	return filepath.Clean(abs), true
}
