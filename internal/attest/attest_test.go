package attest

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestFor(t *testing.T) {
	id, err := os.ReadFile(bootIDFile)
	if err != nil {
		t.Skipf("no boot id here: %v", err)
	}
	dir := t.TempDir()
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	got, ok := For(dir)
	var ns, root syscall.Stat_t
	if err := syscall.Stat("/proc/self/ns/mnt", &ns); err != nil {
		t.Skipf("no mount namespace here: %v", err)
	}
	if err := syscall.Stat("/", &root); err != nil {
		t.Fatal(err)
	}
	want := Attestation{BootID: string(id[:len(id)-1]), Device: uint64(st.Dev), Inode: st.Ino,
		MountNS: ns.Ino, RootDevice: uint64(root.Dev), RootInode: root.Ino}
	if !ok || got != want {
		t.Errorf("For(%s) = %+v, %v; want %+v, true", dir, got, ok, want)
	}
	// Through a symlink, the directory it names: stat(2), as the server's
	// own view of the working directory is.
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if got, ok := For(link); !ok || got != want {
		t.Errorf("For(%s) = %+v, %v; want %+v, true", link, got, ok, want)
	}
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "relative/dir", filepath.Join(dir, "missing"), file} {
		if got, ok := For(bad); ok {
			t.Errorf("For(%q) = %+v, true; want no attestation", bad, got)
		}
	}
}
