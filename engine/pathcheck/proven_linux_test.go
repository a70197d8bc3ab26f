package pathcheck

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolgate/toolgate/internal/stallfs"
)

// A check's look at the names of a walk up to / (toolchain files,
// markers) costs one poll of the mount table, one openat2 to prove the
// directory it starts from, and one lstat per name: the directories
// above a proven one are proven too, and a name in one needs no walk of
// its own.
func TestProvenLookCost(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	deep := dir + "/a/b/c"
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir+"/a/go.mod", []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	names := []string{"go.work", "go.mod", ".go-version", ".tool-versions", ".mise.toml", "mise.toml", ".config/mise.toml", ".config/mise"}
	if _, err := currentMounts(); err != nil { // the first reading is not a poll
		t.Fatal(err)
	}
	var pr Proofs
	stop := CountLookups()
	if r, err := pr.Resolve(deep, "."); err != nil || r != deep {
		t.Fatalf("Resolve = %q, %v", r, err)
	}
	lk := pr.Look()
	looks, found := 0, 0
	for d := deep; ; d = filepath.Dir(d) {
		for _, n := range names {
			p := filepath.Join(d, n)
			fi, err := lk.Lstat(p)
			looks++
			switch {
			case err == nil:
				found++
				if !fi.Mode().IsRegular() || fi.Name() != filepath.Base(p) {
					t.Errorf("Lstat(%q) = %v %q", p, fi.Mode(), fi.Name())
				}
			case !errors.Is(err, os.ErrNotExist):
				t.Errorf("Lstat(%q): %v", p, err)
			}
		}
		if d == "/" {
			break
		}
	}
	got := stop()
	if found < 1 {
		t.Errorf("found %d files, want the go.mod at least", found)
	}
	want := Lookups{Polls: 1, Opens: 1, Fstats: 1, Stats: int64(looks)}
	if got != want {
		t.Errorf("%d names looked up from a proven directory cost %+v, want %+v", looks, got, want)
	}
}

// A check's look answers as os.Lstat and os.Stat do, once the directories
// are proven: the names in them are looked up one component at a time,
// and a link on the way (or a link asked to be followed) is left to the
// walk.
func TestProvenLookAgreesWithOS(t *testing.T) {
	tr := newTree(t)
	var pr Proofs
	for _, d := range []string{tr.app + "/sub/a", tr.dir + "/outside/foo"} {
		if _, err := pr.Resolve(d, "."); err != nil {
			t.Fatal(err)
		}
	}
	lk := pr.Look()
	for _, rel := range []string{
		"", "app", "app/f.txt", "app/sub", "app/sub/f.txt", "app/nope", "app/nope/x", "app/f.txt/x", "app/link-in",
		"app/link-in/f.txt", "app/link-out-file", "app/dangling", "app/loop1", "applink", "applink/f.txt",
		"app/sub/../f.txt", "app/./sub", "app/up", "app/sub/a/b", "app/sub/nope/x", "app/link-out-dir/foo",
		"app/deep/x", "outside/foo", "outside/secret", "outside/secret/x",
	} {
		p := tr.dir + "/" + rel
		agreesWithOS(t, rel, p, lk.Lstat, func(p string) (os.FileInfo, error) { fi, _, err := lk.Stat(p); return fi, err })
	}
}

// A name in a proven directory that is a FUSE mount that never answers,
// or leads onto one, is refused, never looked up: the proven directory
// does not let a look past the mount table.
func TestProvenLookNotIntoStalledFUSE(t *testing.T) {
	needRoot(t)
	stall, proj := stallLayout(t)
	stallfs.MountAt(t, stall)
	var pr Proofs
	if _, err := pr.Resolve(proj, "sub"); err != nil {
		t.Fatal(err)
	}
	lk := pr.Look()
	for _, c := range []struct {
		name string
		f    func() error
	}{
		{"Lstat of the mount point", func() error { _, err := lk.Lstat(stall); return err }},
		{"Stat of the mount point", func() error { _, _, err := lk.Stat(stall); return err }},
		{"Lstat below the mount point", func() error { _, err := lk.Lstat(stall + "/x"); return err }},
		{"Lstat far below the mount point", func() error { _, err := lk.Lstat(stall + "/x/y/z"); return err }},
		{"Stat of the link", func() error { _, _, err := lk.Stat(proj + "/link"); return err }},
		{"Lstat through the link", func() error { _, err := lk.Lstat(proj + "/link/x"); return err }},
		{"Resolve through the link", func() error { _, err := pr.Resolve(proj, "link/x"); return err }},
		{"Resolve of the mount point", func() error { _, err := pr.Resolve(filepath.Dir(stall), "stall"); return err }},
		{"Resolve below the mount point", func() error { _, err := pr.Resolve(filepath.Dir(stall), "stall/x"); return err }},
	} {
		foreign(t, c.name, bounded(t, c.name, c.f))
	}
	if bounded(t, "NoneIn", func() error {
		if lk.NoneIn(stall, "HEAD") {
			return errors.New("none")
		}
		return nil
	}) != nil {
		t.Error("NoneIn says nothing is in the stalled mount")
	}
}
