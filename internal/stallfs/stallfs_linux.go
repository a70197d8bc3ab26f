//go:build linux

// Package stallfs mounts a FUSE file system that never answers, for tests of
// what toolgate does when the agent's project leads onto a stalled mount
// (sshfs, NFS or FUSE whose server hung).
//
// The mount is made with no FUSE library and no daemon: /dev/fuse is opened
// and passed to mount(2), and its descriptor is never read. The kernel then
// queues every request (even the INIT handshake) and the calling thread
// waits in the system call, as with a real hung server; only a fatal signal
// or aborting the connection ends the wait. Closing the descriptor aborts
// the connection: every blocked system call returns ENOTCONN.
package stallfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// Stall is one stalled mount.
type Stall struct {
	// Dir is the mount point: every operation under it (and stat of Dir
	// itself) blocks until Close.
	Dir string

	mu sync.Mutex
	fd int // -1 once closed
}

// Available reports why a stalled mount cannot be made here (nil if it can):
// mounting needs root and the FUSE device.
func Available() error {
	if os.Geteuid() != 0 {
		return errors.New("mounting a FUSE file system needs root")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return fmt.Errorf("no FUSE device: %w", err)
	}
	return nil
}

// New mounts a stalled file system on dir, an existing directory (what it
// holds is hidden under the mount until Close).
// The caller must call Close, which also unmounts.
func New(dir string) (*Stall, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	// O_CLOEXEC: a child process (the server under test) must not inherit
	// the descriptor, or closing ours would not abort the connection.
	fd, err := unix.Open("/dev/fuse", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open /dev/fuse: %w", err)
	}
	opts := fmt.Sprintf("fd=%d,rootmode=40000,user_id=0,group_id=0", fd)
	if err := unix.Mount("toolgate-stall", dir, "fuse", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("mount fuse on %s: %w", dir, err)
	}
	return &Stall{Dir: dir, fd: fd}, nil
}

// Waiting returns how many system calls on the mount are waiting for the
// server that never answers: each holds a thread.
// It reads the kernel's FUSE control file system, mounted for the call on
// a private temporary directory (it is not mounted on every machine).
func (s *Stall) Waiting() (int, error) {
	dev, err := s.device()
	if err != nil {
		return 0, err
	}
	ctl, err := os.MkdirTemp("", "stallfs-ctl-")
	if err != nil {
		return 0, err
	}
	defer os.Remove(ctl)
	if err := unix.Mount("fusectl", ctl, "fusectl", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return 0, fmt.Errorf("mount fusectl: %w", err)
	}
	defer unix.Unmount(ctl, unix.MNT_DETACH)
	b, err := os.ReadFile(filepath.Join(ctl, dev, "waiting"))
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, err
	}
	// The kernel counts the INIT request it queued at mount time, which
	// nothing ever answers here: it holds no thread.
	return max(0, n-1), nil
}

// device returns the mount's connection number (its device number, as the
// control file system names it), read from the mount table: stat on the
// mount itself would block.
func (s *Stall) device() (string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		// mountinfo: id parent major:minor root mountpoint ...
		if len(f) < 5 || f[4] != s.Dir {
			continue
		}
		major, minor, ok := strings.Cut(f[2], ":")
		if !ok {
			break
		}
		ma, err1 := strconv.ParseUint(major, 10, 12)
		mi, err2 := strconv.ParseUint(minor, 10, 20)
		if err1 != nil || err2 != nil {
			break
		}
		// The control file system names a connection by the kernel's own
		// dev_t encoding (major<<20 | minor), not the one stat returns.
		return strconv.FormatUint(ma<<20|mi, 10), nil
	}
	return "", fmt.Errorf("%s not in the mount table", s.Dir)
}

// Close aborts the connection (every system call blocked on the mount
// returns ENOTCONN) and detaches the mount. It is safe to call twice.
func (s *Stall) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fd < 0 {
		return nil
	}
	// Close first: a lazy unmount of a mount with waiting requests would
	// leave those threads waiting on a connection nobody can reach.
	err := unix.Close(s.fd)
	s.fd = -1
	if uerr := unix.Unmount(s.Dir, unix.MNT_DETACH); uerr != nil && err == nil {
		err = fmt.Errorf("unmount %s: %w", s.Dir, uerr)
	}
	return err
}

// Mount makes a stalled mount on a fresh directory and returns its path; the
// test is skipped (with the reason) where the machine cannot, and the mount
// is aborted and removed when the test ends, before the temporary
// directory holding it is removed.
func Mount(t testing.TB) string {
	t.Helper()
	if err := Available(); err != nil {
		t.Skipf("no stalled FUSE mount: %v", err)
	}
	dir := t.TempDir()
	MountAt(t, dir)
	return dir
}

// MountAt makes a stalled mount at dir (made if missing; a directory that
// holds files is hidden under the mount, as a real mount hides them), for
// a test that needs it at a given place: inside a project, or over a
// directory a server already writes to. The test is skipped where the
// machine cannot mount; the mount is aborted and removed when the test
// ends. dir must not be under a temporary directory made after this call
// (cleanups run last-in first-out: that directory's removal would block on
// the mount).
func MountAt(t testing.TB, dir string) *Stall {
	t.Helper()
	if err := Available(); err != nil {
		t.Skipf("no stalled FUSE mount: %v", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := New(dir)
	if err != nil {
		t.Skipf("no stalled FUSE mount: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("stallfs: %v", err)
		}
	})
	return s
}
