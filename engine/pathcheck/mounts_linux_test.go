package pathcheck

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toolgate/toolgate/engine/knowledge"
	"github.com/toolgate/toolgate/internal/stallfs"
)

func TestParseMountInfo(t *testing.T) {
	info := strings.Join([]string{
		`27 1 254:0 / / rw,relatime - ext4 /dev/vda rw`,
		`22 27 0:21 / /proc rw,relatime - proc proc rw`,
		`60 27 0:55 / /home/dev/remote\040dir rw,nosuid shared:7 master:1 - fuse.sshfs dev@host: rw`,
		`61 27 0:56 / /mnt/nfs rw - nfs4 srv:/x rw`,
		`62 27 0:57 / /mnt/back\134slash rw - 9p tag rw`,
	}, "\n") + "\n"
	mt, err := parseMountInfo([]byte(info))
	if err != nil {
		t.Fatal(err)
	}
	want := []mountPoint{{"/home/dev/remote dir", "fuse.sshfs"}, {"/mnt/nfs", "nfs4"}, {`/mnt/back\slash`, "9p"}}
	if !slices.Equal(mt.foreign, want) {
		t.Errorf("foreign = %q, want %q", mt.foreign, want)
	}
	if got := mt.devs[unix.Mkdev(254, 0)]; got != "ext4" {
		t.Errorf("254:0 is %q, want ext4", got)
	}
	if got := mt.devs[unix.Mkdev(0, 55)]; got != "fuse.sshfs" {
		t.Errorf("0:55 is %q, want fuse.sshfs", got)
	}
	for _, c := range []struct{ path, want string }{
		{"/home/dev/remote dir", "fuse.sshfs"},
		{"/home/dev/remote dir/x/y", "fuse.sshfs"},
		{"/home/dev/remote dirx", ""},
		{"/home/dev/remote", ""},
		{"/mnt/nfs/../ok", "nfs4"}, // the walk enters /mnt/nfs before it climbs
		{"/mnt/x/../nfs/a", "nfs4"},
		{"/mnt/./nfs", "nfs4"},
		{"/mnt/nfsx/..", ""},
		{"/proc/self", ""},
		{"/", ""},
	} {
		if got := mt.foreignOnWay(c.path); got != c.want {
			t.Errorf("foreignOnWay(%q) = %q, want %q", c.path, got, c.want)
		}
	}
	for _, bad := range []string{"27 1 254:0 / / rw ext4 /dev/vda rw\n", "27 1 x:0 / / rw - ext4 /dev/vda rw\n", "27 1\n"} {
		if _, err := parseMountInfo([]byte(bad)); err == nil {
			t.Errorf("parseMountInfo(%q) accepted", bad)
		}
	}
}

// The magic numbers of the list are the kernel's (as x/sys has them).
func TestLocalFileSystemsMagic(t *testing.T) {
	for name, m := range map[string]int64{
		"ext4": unix.EXT4_SUPER_MAGIC, "xfs": unix.XFS_SUPER_MAGIC, "btrfs": unix.BTRFS_SUPER_MAGIC,
		"tmpfs": unix.TMPFS_MAGIC, "overlay": unix.OVERLAYFS_SUPER_MAGIC, "f2fs": unix.F2FS_SUPER_MAGIC,
		"proc": unix.PROC_SUPER_MAGIC, "sysfs": unix.SYSFS_MAGIC, "devpts": unix.DEVPTS_SUPER_MAGIC,
		"cgroup2": unix.CGROUP2_SUPER_MAGIC, "squashfs": unix.SQUASHFS_MAGIC,
		"ramfs": unix.RAMFS_MAGIC, "nsfs": unix.NSFS_MAGIC, "bpf": unix.BPF_FS_MAGIC,
	} {
		i := slices.IndexFunc(knowledge.LocalFileSystems, func(f knowledge.FileSystem) bool { return f.Name == name })
		if i < 0 || knowledge.LocalFileSystems[i].Magic != m {
			t.Errorf("%s: magic 0x%x in the list, the kernel's is 0x%x", name, knowledge.LocalFileSystems[i].Magic, m)
		}
	}
	for _, n := range []string{"fuse", "fuse.sshfs", "fuseblk", "nfs", "nfs4", "cifs", "smb3", "9p", "virtiofs", "autofs", "ceph"} {
		if knowledge.LocalFileSystem(n) {
			t.Errorf("%s is in the local list", n)
		}
	}
}

// needRoot skips a test that mounts file systems.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a file system needs root")
	}
}

// mountTmpfs mounts a tmpfs at dir until the test ends.
func mountTmpfs(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("toolgate-test", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=1m"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
}

// bounded runs f and fails the test if it has not returned after a bound
// far past any answer's time: a call that waits on the stalled mount never
// returns until the test's end aborts it.
func bounded(t *testing.T, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: still waiting on the stalled file system after 20s", what)
		return nil
	}
}

// stallLayout makes a project whose link, proj/link, leads to stall,
// where a test mounts a file system that never answers; proj/sub exists.
func stallLayout(t *testing.T) (stall, proj string) {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	stall, proj = dir+"/stall", dir+"/proj"
	if err := os.MkdirAll(proj+"/sub", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../stall", proj+"/link"); err != nil {
		t.Fatal(err)
	}
	return stall, proj
}

// foreign asserts err refuses a FUSE file system with the reason that says so.
func foreign(t *testing.T, what string, err error) {
	t.Helper()
	var fe *ForeignError
	if !errors.As(err, &fe) || !strings.HasPrefix(fe.FSType, "fuse") || !strings.Contains(err.Error(), "which toolgate does not follow for proofs") {
		t.Errorf("%s: err = %v, want a refusal of the fuse file system", what, err)
	}
}

func TestStalledFUSENotEntered(t *testing.T) {
	needRoot(t)
	stall, proj := stallLayout(t)
	if err := os.Symlink(stall+"/x", proj+"/sub/deep"); err != nil {
		t.Fatal(err)
	}
	// The table is read before the mount: the poll must see it.
	if _, err := Resolve(proj, "sub"); err != nil {
		t.Fatal(err)
	}
	stallfs.MountAt(t, stall)
	chk, err := New([]string{proj}, DefaultProtected)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		f    func() error
	}{
		{"Resolve through a link onto the mount", func() error { _, err := Resolve(proj, "link/x"); return err }},
		{"Resolve of the link itself", func() error { _, err := Resolve(proj, "link"); return err }},
		{"Resolve through a link to below the mount", func() error { _, err := Resolve(proj, "sub/deep/y"); return err }},
		{"Resolve of the mount point", func() error { _, err := Resolve("/", stall); return err }},
		{"Resolve below the mount point", func() error { _, err := Resolve("/", stall+"/a/b"); return err }},
		{"Resolve climbing out of the mount", func() error { _, err := Resolve("/", stall+"/../proj"); return err }},
		{"Check of an edit through the link", func() error { _, err := chk.Check(proj, "link/x"); return err }},
		{"Check of an edit below the mount", func() error { _, err := chk.Check(proj, stall+"/x"); return err }},
		{"Lstat through the link", func() error { _, err := Lstat(proj + "/link/x"); return err }},
		{"Lstat of the mount point", func() error { _, err := Lstat(stall); return err }},
		{"Stat of the link", func() error { _, _, err := Stat(proj + "/link"); return err }},
		{"OpenFile through the link", func() error {
			f, err := OpenFile(proj+"/link/x", 0)
			if err == nil {
				f.Close()
			}
			return err
		}},
		{"OpenDir of the mount point", func() error {
			f, err := OpenDir(stall)
			if err == nil {
				f.Close()
			}
			return err
		}},
		{"ReadDir through the link", func() error { _, err := ReadDir(proj + "/link"); return err }},
	} {
		foreign(t, c.name, bounded(t, c.name, c.f))
	}
	if bounded(t, "NoneIn", func() error {
		if NoneIn(stall, "HEAD") {
			return errors.New("none")
		}
		return nil
	}) != nil {
		t.Error("NoneIn says nothing is in the stalled mount")
	}
	// A root on the mount is refused too.
	err = bounded(t, "New", func() error { _, err := New([]string{proj + "/link"}, nil); return err })
	foreign(t, "New with a root through the link", err)
}

// A local file system mounted in the project is followed; one of a type
// not in the list is refused by the table before it is entered and, when
// the table a walk holds is older than the mount, by the device found.
func TestMountTypes(t *testing.T) {
	needRoot(t)
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	proj := dir + "/proj"
	mountTmpfs(t, proj+"/mnt")
	if err := os.WriteFile(proj+"/mnt/f", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("mnt", proj+"/link"); err != nil {
		t.Fatal(err)
	}
	if r, err := Resolve(proj, "link/f"); err != nil || r != proj+"/mnt/f" {
		t.Fatalf("Resolve through a link onto a tmpfs = %q, %v", r, err)
	}
	stale, err := currentMounts()
	if err != nil {
		t.Fatal(err)
	}

	// Now take tmpfs for a foreign type.
	saved := knowledge.LocalFileSystems
	t.Cleanup(func() {
		knowledge.LocalFileSystems = saved
		mounts.Lock()
		_, _ = reloadLocked()
		mounts.Unlock()
	})
	knowledge.LocalFileSystems = slices.DeleteFunc(slices.Clone(saved), func(f knowledge.FileSystem) bool { return f.Name == "tmpfs" })
	mounts.Lock()
	_, _ = reloadLocked()
	mounts.Unlock()

	for _, rel := range []string{"link/f", "mnt", "mnt/f", "mnt/new/file"} {
		_, err := Resolve(proj, rel)
		var fe *ForeignError
		if !errors.As(err, &fe) || fe.FSType != "tmpfs" || !strings.Contains(err.Error(), "file system of type tmpfs, which toolgate does not follow for proofs") {
			t.Errorf("Resolve(%q): err = %v, want a refusal of tmpfs", rel, err)
		}
	}
	if _, err := Resolve(proj, "other"); err != nil {
		t.Errorf("a path beside the mount: %v", err)
	}
	// A walk holding a table read before the mount knew nothing of it:
	// the device it finds there is not in its table, and the table is
	// polled again before the answer.
	old := &mountTable{devs: map[uint64]string{}}
	fi, err := os.Lstat(proj + "/mnt/f")
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range stale.devs {
		if k != devOf(t, fi) {
			old.devs[k] = v
		}
	}
	var fe *ForeignError
	if err := old.refuseFound(proj+"/mnt/f", fi); !errors.As(err, &fe) || fe.FSType != "tmpfs" {
		t.Errorf("a device found that a stale table does not name: err = %v, want a refusal of tmpfs", err)
	}
}

func devOf(t *testing.T, fi os.FileInfo) uint64 {
	t.Helper()
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		t.Fatalf("no Stat_t: %T", fi.Sys())
	}
	return st.Dev
}

// agreesWithOS asserts that lstat and stat answer for p (rel in messages)
// as os.Lstat and os.Stat do: the same error, or the same file.
func agreesWithOS(t *testing.T, rel, p string, lstat, stat func(string) (os.FileInfo, error)) {
	t.Helper()
	for _, c := range []struct {
		name string
		mine func(string) (os.FileInfo, error)
		os   func(string) (os.FileInfo, error)
	}{
		{"Lstat", lstat, os.Lstat},
		{"Stat", stat, os.Stat},
	} {
		got, gerr := c.mine(p)
		want, werr := c.os(p)
		switch {
		case (gerr == nil) != (werr == nil) || errors.Is(gerr, os.ErrNotExist) != errors.Is(werr, os.ErrNotExist):
			t.Errorf("%s(%q): err %v; os gives %v", c.name, rel, gerr, werr)
		case gerr == nil && (got.Mode() != want.Mode() || got.Size() != want.Size() || !got.ModTime().Equal(want.ModTime()) || c.name == "Lstat" && got.Name() != want.Name() ||
			got.Sys().(*syscall.Stat_t).Ino != want.Sys().(*syscall.Stat_t).Ino):
			t.Errorf("%s(%q) = %v %d %v %q; os gives %v %d %v %q", c.name, rel, got.Mode(), got.Size(), got.ModTime(), got.Name(), want.Mode(), want.Size(), want.ModTime(), want.Name())
		}
	}
}

// Lstat and Stat answer as os.Lstat and os.Stat do on local file systems,
// whether one openat2 answers or the walk does (Stat names what a link
// leads to, not the link).
func TestStatAgreesWithOS(t *testing.T) {
	tr := newTree(t)
	for _, rel := range []string{
		"", "app", "app/f.txt", "app/sub", "app/sub/f.txt", "app/nope", "app/nope/x", "app/f.txt/x", "app/link-in",
		"app/link-in/f.txt", "app/link-out-file", "app/dangling", "app/loop1", "applink", "applink/f.txt",
		"app/sub/../f.txt", "app/./sub", "app/up",
	} {
		p := tr.dir + "/" + rel
		agreesWithOS(t, rel, p, Lstat, func(p string) (os.FileInfo, error) { fi, _, err := Stat(p); return fi, err })
	}
}
