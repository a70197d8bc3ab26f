package pathcheck

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/toolgate/toolgate/engine/knowledge"
)

// The mount table, read from /proc/self/mountinfo, is how a walk knows,
// before it looks a name up, that the name is a mount point of a file
// system it does not follow (the lookup itself may never return: a FUSE
// daemon that never answers holds the thread in the kernel), and, after a
// look, which file system the device it found belongs to.
//
// It is kept fresh by poll(2): the kernel reports POLLPRI on an open
// mountinfo once the namespace's mounts changed since it was last polled,
// and the mount system call changes that state before it returns. So one
// poll per look tells whether the table is still the kernel's; the table
// is read again only then. An answer never comes from a table older than
// the last mount the kernel had finished.

// maxMountInfo bounds the bytes of one reading of the mount table: a
// namespace with tens of thousands of mounts is refused (no proofs) rather
// than read without end on every change.
const maxMountInfo = 8 << 20

// maxStatfsDevs bounds the devices typed by statfs that are remembered
// (dropped whole when full; they are asked again).
const maxStatfsDevs = 1024

// mountTable is one reading of the mount table.
type mountTable struct {
	// foreign are the mount points of types not in
	// knowledge.LocalFileSystems, with their types.
	foreign []mountPoint
	// devs maps every mounted device to its type.
	devs map[uint64]string
	// scope, in a confined check's copy of the table, is where it may look.
	scope *scope
}

// confined is a copy of the table for a check confined to s.
func (t *mountTable) confined(s *scope) *mountTable {
	cp := *t
	cp.scope = s
	return &cp
}

type mountPoint struct{ path, fstype string }

var mounts struct {
	sync.Mutex
	opened bool
	fd     int // the open mountinfo, polled for changes
	table  *mountTable
	err    error // why there is no table: nothing is proven
	statfs map[uint64]string
}

func freshLocked() (*mountTable, error) {
	if !mounts.opened {
		fd, err := unix.Open("/proc/self/mountinfo", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			// Retried on the next look: /proc may be mounted later.
			return nil, fmt.Errorf("pathcheck: the mount table cannot be read, so no path is proven: %w", err)
		}
		mounts.fd, mounts.opened = fd, true
		return reloadLocked()
	}
	if mounts.err == nil {
		changed, err := mountsChanged(mounts.fd)
		switch {
		case err != nil:
			return nil, fmt.Errorf("pathcheck: the mount table cannot be polled, so no path is proven: %w", err)
		case !changed:
			return mounts.table, nil
		}
	}
	return reloadLocked()
}

// mountsChanged polls the open mountinfo: the kernel reports POLLPRI
// (and POLLERR) once the namespace's mounts changed since the last poll.
// A zero timeout never waits, so the raw system call is used: it spares
// the scheduler's hand-off that a blocking call costs, on every look.
func mountsChanged(fd int) (bool, error) {
	pfd := unix.PollFd{Fd: int32(fd), Events: unix.POLLPRI}
	var ts unix.Timespec
	countPoll()
	for {
		n, _, errno := unix.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&pfd)), 1, uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
		switch {
		case errno == unix.EINTR:
			continue
		case errno != 0:
			return false, errno
		}
		return n > 0 && pfd.Revents&(unix.POLLPRI|unix.POLLERR) != 0, nil
	}
}

// reloadLocked reads the table again from the open mountinfo. Devices
// typed by statfs are forgotten: a device number freed by an unmount may
// now be another file system's.
func reloadLocked() (*mountTable, error) {
	mounts.statfs = nil
	mounts.table, mounts.err = readMountInfo(mounts.fd)
	return mounts.table, mounts.err
}

func readMountInfo(fd int) (*mountTable, error) {
	if _, err := unix.Seek(fd, 0, 0); err != nil {
		return nil, fmt.Errorf("pathcheck: the mount table cannot be read, so no path is proven: %w", err)
	}
	var buf []byte
	chunk := make([]byte, 64<<10)
	for {
		n, err := unix.Read(fd, chunk)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("pathcheck: the mount table cannot be read, so no path is proven: %w", err)
		}
		if n == 0 {
			break
		}
		if buf = append(buf, chunk[:n]...); len(buf) > maxMountInfo {
			return nil, fmt.Errorf("pathcheck: the mount table is larger than %d bytes, so no path is proven", maxMountInfo)
		}
	}
	return parseMountInfo(buf)
}

// parseMountInfo reads mountinfo lines: "ID PARENT MAJOR:MINOR ROOT
// MOUNTPOINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPEROPTIONS" (proc(5)).
func parseMountInfo(b []byte) (*mountTable, error) {
	t := &mountTable{devs: map[uint64]string{}}
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		f := strings.Fields(string(line))
		sep := -1
		for i := 6; i < len(f); i++ {
			if f[i] == "-" {
				sep = i
				break
			}
		}
		if len(f) < 5 || sep < 0 || sep+1 >= len(f) {
			return nil, fmt.Errorf("pathcheck: the mount table has a line that cannot be read (%q), so no path is proven", truncateLine(line))
		}
		maj, min, ok := strings.Cut(f[2], ":")
		ma, err1 := strconv.ParseUint(maj, 10, 32)
		mi, err2 := strconv.ParseUint(min, 10, 32)
		if !ok || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("pathcheck: the mount table has a device that cannot be read (%q), so no path is proven", f[2])
		}
		fstype := f[sep+1]
		t.devs[unix.Mkdev(uint32(ma), uint32(mi))] = fstype
		if !knowledge.LocalFileSystem(fstype) {
			t.foreign = append(t.foreign, mountPoint{unescapeMountPath(f[4]), fstype})
		}
	}
	return t, nil
}

func truncateLine(b []byte) string { return head(string(b), 200) }

// unescapeMountPath undoes the kernel's octal escapes of space, tab,
// newline and backslash in mount points.
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// foreignAt returns the type of the foreign mount that p, a clean
// absolute path with no link on the way, lies on or below, or "".
func (t *mountTable) foreignAt(p string) string {
	for _, m := range t.foreign {
		if p == m.path || m.path == "/" || strings.HasPrefix(p, m.path) && len(p) > len(m.path) && p[len(m.path)] == '/' {
			return m.fstype
		}
	}
	return ""
}

// foreignOnWay returns the type of a foreign mount that the kernel's walk
// of abs (absolute, possibly with "." and ".." but no link) passes
// through, or "": every directory the walk enters counts, since entering
// one asks its file system (a permission check may).
func (t *mountTable) foreignOnWay(abs string) string {
	if len(t.foreign) == 0 {
		return ""
	}
	if isClean(abs) {
		return t.foreignAt(abs)
	}
	cur := "/"
	for c := range strings.SplitSeq(abs, "/") {
		switch c {
		case "", ".":
			continue
		case "..":
			if i := strings.LastIndexByte(cur, '/'); i > 0 {
				cur = cur[:i]
			} else {
				cur = "/"
			}
			continue
		}
		if cur == "/" {
			cur = "/" + c
		} else {
			cur += "/" + c
		}
		if ft := t.foreignAt(cur); ft != "" {
			return ft
		}
	}
	return ""
}

// currentMounts returns the mount table as the kernel has it now: one
// poll(2), and a reading only when the mounts changed.
func currentMounts() (*mountTable, error) {
	mounts.Lock()
	defer mounts.Unlock()
	return freshLocked()
}

// refuseWay is the look before the look: an error when the walk of abs
// would enter a foreign mount.
func (t *mountTable) refuseWay(abs string) error {
	if err := t.scope.refuse(abs, true); err != nil {
		return err
	}
	if ft := t.foreignOnWay(abs); ft != "" {
		return &ForeignError{Path: abs, FSType: ft}
	}
	return nil
}

// refuseFound is the look after the look: p was found as fi, whose device
// must belong to a local file system. A map lookup, unless the table does
// not name the device: then the table is polled once more (a mount made
// since it was taken), and a device it still does not name (a btrfs
// subvolume's, an overlay layer's) is typed by statfs of p itself.
func (t *mountTable) refuseFound(p string, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("pathcheck: %s has no device to tell its file system by", p)
	}
	return t.refuseDev(p, uint64(st.Dev))
}

// refuseDev is refuseFound for the device dev.
func (t *mountTable) refuseDev(p string, dev uint64) error {
	ft, ok := t.devs[dev]
	if !ok {
		mounts.Lock()
		defer mounts.Unlock()
		nt, err := freshLocked()
		if err != nil {
			return err
		}
		if ft, ok = nt.devs[dev]; !ok {
			ft, ok = mounts.statfs[dev]
		}
		if !ok {
			if ft, err = statfsType(p); err != nil {
				return err
			}
			if mounts.statfs == nil || len(mounts.statfs) >= maxStatfsDevs {
				mounts.statfs = map[uint64]string{}
			}
			mounts.statfs[dev] = ft
		}
	}
	if !knowledge.LocalFileSystem(ft) {
		return &ForeignError{Path: p, FSType: ft}
	}
	return nil
}

// statfsType names the file system p is on by its statfs magic: a local
// type's name, or the magic in hex. p itself is opened with O_PATH and
// O_NOFOLLOW: nothing is opened on the file system, and a link is not
// followed.
func statfsType(p string) (string, error) {
	fd, err := unix.Open(p, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", &fs.PathError{Op: "open", Path: p, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Statfs_t
	if err := unix.Fstatfs(fd, &st); err != nil {
		return "", &fs.PathError{Op: "statfs", Path: p, Err: err}
	}
	if n := knowledge.LocalMagic(int64(st.Type)); n != "" {
		return n, nil
	}
	return fmt.Sprintf("0x%x", uint64(st.Type)), nil
}
