// Package attest says where a client beside an agent stands: the running
// kernel's boot id and the device and inode of a directory as this
// process sees them. A server compares them with its own view before it
// trusts a proof about files (CheckRequest.attestation). It imports
// nothing heavy: the hook binary links it.
package attest

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// Attestation is what this process sees of a working directory.
type Attestation struct {
	BootID string
	Device uint64
	Inode  uint64
	// MountNS, RootDevice and RootInode place the whole view: the mount
	// namespace (the inode of /proc/self/ns/mnt) and the root directory.
	// Zero when they cannot be read: the server then counts only the
	// files under the directory as the client's.
	MountNS, RootDevice, RootInode uint64
}

// View is this process's mount namespace (the inode of /proc/self/ns/mnt)
// and root directory (device, inode), read once: a process keeps both
// while it runs. Zero when they cannot be read. A server compares a
// client's attestation with its own.
var View = sync.OnceValue(func() (v [3]uint64) {
	var ns, root syscall.Stat_t
	if syscall.Stat("/proc/self/ns/mnt", &ns) != nil || syscall.Stat("/", &root) != nil {
		return v
	}
	return [3]uint64{ns.Ino, uint64(root.Dev), root.Ino}
})

// bootIDFile names the running kernel; a variable for tests.
var bootIDFile = "/proc/sys/kernel/random/boot_id"

// BootID is this kernel's boot id, read once per process: it cannot
// change while it runs. "" when it cannot be read.
var BootID = sync.OnceValue(func() string {
	data, err := os.ReadFile(bootIDFile)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
})

// For returns the attestation for dir, or false when there is none to
// give: dir is not absolute, cannot be stat'ed, is not a directory, or the
// kernel has no boot id to name it by. No attestation is not an error: the
// server then decides as it does for any client it cannot place.
func For(dir string) (Attestation, bool) {
	if dir == "" || !filepath.IsAbs(dir) {
		return Attestation{}, false
	}
	id := BootID()
	if id == "" {
		return Attestation{}, false
	}
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return Attestation{}, false
	}
	v := View()
	return Attestation{BootID: id, Device: uint64(st.Dev), Inode: st.Ino, MountNS: v[0], RootDevice: v[1], RootInode: v[2]}, true
}
