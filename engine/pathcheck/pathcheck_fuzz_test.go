package pathcheck

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// FuzzCheck checks Check's "inside" answers against oracles that do not share
// its resolution code: the kernel (os.Stat) and filepath.EvalSymlinks.
func FuzzCheck(f *testing.F) {
	// Fuzz functions run many iterations: build the tree once per process.
	tr := newTree(f)
	c, err := New([]string{tr.app}, DefaultProtected)
	if err != nil {
		f.Fatal(err)
	}
	bases := []string{
		tr.app,
		tr.app + "/sub",
		tr.app + "/link-in",
		tr.app + "/link-out-dir",
		tr.app + "/new/dir",
		tr.applink,
		tr.dir,
		"/",
	}
	for _, s := range []string{
		"", ".", "..", "../..", "a/../../x", "x", "f.txt", "sub/f.txt", "new/dir/x.go",
		"link-in/../x", "link-out-dir/../x", "link-foo/../x", "deep/../../x", "deep/../../../x",
		"link-in/../../app/x", "up/app/x", "up/app-evil/x", "up/../x", "applink/x",
		"../root-evil/x", "../app-evil/x", "../app-evil-link/x", "../applink/x", "../app/x",
		"x\x00y", strings.Repeat("a/", 2100), strings.Repeat("d/", 300) + "f", strings.Repeat("../", 60) + "etc/passwd",
		"~/.ssh/id_rsa", "~", "/etc/passwd", "/", "/proc/self/cwd/x", "proc/x",
		"link-out-dir/secret", "link-out-file", "link-out-file/x", "dangling", "f.txt/../x", "f.txt/",
		"loop1", "loop2/x", "selfloop", "selfloop/../x",
		"link-foo/../in-link", "link-out-dir/in-link", "../dotfile", "../sublink", "../sublink/x", "../sublink/", "link-in", "link-in/",
		"./.git/config", ".git/../x", "gd-alias/config", "ci/x.yml", "innocent",
		"deep/../../outside/secret", "deep/../../app-evil/x", "link-in/../../outside/x",
		"n1/n2/../../link-out-dir/x", "n1/../link-foo/../y", "n1/n2/../../link-in/x",
		tr.app + "/x", tr.app + "-evil/x", tr.applink + "/sub/../x", tr.outside + "/x",
	} {
		for b := range bases {
			f.Add(s, byte(b))
		}
	}

	rootSlash := tr.app + "/"
	f.Fuzz(func(t *testing.T, p string, b byte) {
		base := bases[int(b)%len(bases)]
		v, err := c.Check(base, p)
		// A check's proofs (the engine's way: the directories proven
		// first are where later looks start) answer the same, and so
		// does their look as a look of its own.
		var pr Proofs
		if _, err := pr.Resolve(tr.app, "sub/a/b"); err != nil {
			t.Fatal(err)
		}
		pc, perr := pr.NewChecker([]string{tr.app}, c.patterns)
		if perr != nil {
			t.Fatal(perr)
		}
		if pv, perr := pc.Check(base, p); (perr == nil) != (err == nil) || !reflect.DeepEqual(pv, v) {
			t.Fatalf("Check(%q, %q) = %+v, %v; with a check's proofs %+v, %v", base, p, v, err, pv, perr)
		}
		if filepath.IsAbs(p) && isClean(p) && len(p) < pathMax {
			got, gerr := pr.Look().Lstat(p)
			want, werr := Lstat(p)
			if (gerr == nil) != (werr == nil) || errors.Is(gerr, os.ErrNotExist) != errors.Is(werr, os.ErrNotExist) ||
				gerr == nil && (got.Mode() != want.Mode() || got.Sys().(*syscall.Stat_t).Ino != want.Sys().(*syscall.Stat_t).Ino) {
				t.Fatalf("a check's Lstat(%q) = %v, %v; Lstat gives %v, %v", p, got, gerr, want, werr)
			}
		}
		if err != nil {
			if v.Inside || v.Root != "" {
				t.Fatalf("Check(%q, %q) = %+v with error %v", base, p, v, err)
			}
			return
		}
		if r, err := Resolve(base, p); err != nil || r != v.Resolved {
			t.Fatalf("Resolve(%q, %q) = %q, %v; Check resolved %q", base, p, r, err, v.Resolved)
		}
		res := v.Resolved
		// (1) the resolved form is a clean absolute path.
		if strings.IndexByte(res, 0) >= 0 || !filepath.IsAbs(res) || filepath.Clean(res) != res {
			t.Fatalf("Check(%q, %q).Resolved = %q is not clean and absolute", base, p, res)
		}
		// (2) it really is symlink-free: its longest existing ancestor
		// is its own EvalSymlinks.
		anc := res
		for {
			if _, err := os.Lstat(anc); err == nil {
				break
			}
			anc = filepath.Dir(anc)
		}
		if ev, err := filepath.EvalSymlinks(anc); err != nil || ev != anc {
			t.Fatalf("Check(%q, %q).Resolved = %q but EvalSymlinks(%q) = %q, %v", base, p, res, anc, ev, err)
		}
		joined := p
		if !filepath.IsAbs(p) {
			joined = base + "/" + p
		}
		lexical := filepath.Clean(joined)
		// (3) wherever the kernel reports a non-directory used as a
		// directory before a "", "." or "..", Check must have failed.
		comps := strings.Split(joined, "/")
		for i := 1; i < len(comps); i++ {
			if c := comps[i]; c != "" && c != "." && c != ".." {
				continue
			}
			prefix := strings.Join(comps[:i], "/")
			if prefix == "" {
				continue
			}
			fi, err := os.Stat(prefix)
			if errors.Is(err, syscall.ENOTDIR) || (err == nil && !fi.IsDir()) {
				t.Fatalf("Check(%q, %q) = %+v, but %q is not a directory", base, p, v, prefix)
			}
		}
		// (4) an independent reading of paths without "..": the real
		// location of the deepest existing ancestor plus the missing rest.
		if !slices.Contains(comps, "..") {
			if kv, ok := kernelView(lexical); ok && kv != res {
				t.Fatalf("Check(%q, %q).Resolved = %q, but the kernel view is %q", base, p, res, kv)
			}
		}
		// The same reading of the cleaned path must be inside too.
		if kv, ok := kernelView(lexical); ok && v.Inside && !strings.HasPrefix(kv, rootSlash) {
			t.Fatalf("Check(%q, %q) = %+v, but the cleaned path %q is really %q", base, p, v, lexical, kv)
		}
		// (5) where the kernel can resolve the input, it agrees.
		kernelOK := false
		if _, err := os.Stat(joined); err == nil {
			ev, err := filepath.EvalSymlinks(joined)
			if err != nil || ev != res {
				t.Fatalf("Check(%q, %q).Resolved = %q but EvalSymlinks(%q) = %q, %v", base, p, res, joined, ev, err)
			}
			kernelOK = true
		}
		lexicalIn := false
		if _, err := os.Stat(lexical); err == nil {
			ev, err := filepath.EvalSymlinks(lexical)
			if err != nil {
				t.Fatalf("EvalSymlinks(%q): %v after Stat succeeded", lexical, err)
			}
			lexicalIn = strings.HasPrefix(ev, rootSlash)
			// (6) a tool that cleans lexically first must also land inside.
			if v.Inside && !lexicalIn {
				t.Fatalf("Check(%q, %q) = %+v, but the cleaned path %q is really %q", base, p, v, lexical, ev)
			}
		}
		if !v.Inside {
			if v.Root != "" {
				t.Fatalf("Check(%q, %q) = %+v: Root set while outside", base, p, v)
			}
			// Completeness where the kernel can tell: all readings inside
			// means Inside.
			lin, _ := entryIn(lexical, rootSlash)
			jin, _ := entryIn(joined, rootSlash)
			if kernelOK && lexicalIn && strings.HasPrefix(res, rootSlash) && lin && jin {
				t.Fatalf("Check(%q, %q) = %+v, but all readings are inside", base, p, v)
			}
			return
		}
		// (7) replacing the last component itself (rename onto it) also
		// stays inside.
		if pv, ok := kernelView(filepath.Dir(lexical)); ok && !strings.HasPrefix(filepath.Join(pv, filepath.Base(lexical)), rootSlash) {
			t.Fatalf("Check(%q, %q) = %+v, but the entry %q is in %q", base, p, v, lexical, pv)
		}
		if in, known := entryIn(joined, rootSlash); known && !in {
			t.Fatalf("Check(%q, %q) = %+v, but the entry %q is outside", base, p, v, joined)
		}
		// (8) inside by an independent prefix test on the clean paths.
		if v.Root != tr.app || !strings.HasPrefix(res, rootSlash) {
			t.Fatalf("Check(%q, %q) = %+v, not under %q", base, p, v, rootSlash)
		}
		for _, bad := range []string{tr.outside, tr.evil, tr.extra} {
			if res == bad || strings.HasPrefix(res, bad+"/") {
				t.Fatalf("Check(%q, %q) = %+v, inside %q", base, p, v, bad)
			}
		}
	})
}

// kernelView resolves a clean absolute path without ".." independently of
// walk: EvalSymlinks of its deepest existing ancestor, then the missing
// components. ok is false when that cannot be told (dangling symlinks, loops,
// a non-directory with components below it).
func kernelView(clean string) (string, bool) {
	a := clean
	for {
		if _, err := os.Lstat(a); err == nil {
			break
		}
		a = filepath.Dir(a)
	}
	ev, err := filepath.EvalSymlinks(a)
	if err != nil {
		return "", false
	}
	if a == clean {
		return ev, true
	}
	if fi, err := os.Stat(ev); err != nil || !fi.IsDir() {
		return "", false
	}
	rest, err := filepath.Rel(a, clean)
	if err != nil {
		return "", false
	}
	return filepath.Join(ev, rest), true
}

// entryIn reports whether the directory entry named by the last component of
// p (what rename(2) onto it would replace) is under prefix; known is false
// when the kernel cannot tell because its parent does not resolve.
func entryIn(p, prefix string) (in, known bool) {
	i := strings.LastIndexByte(p, '/')
	name := p[i+1:]
	if name == "" || name == "." || name == ".." {
		ev, err := filepath.EvalSymlinks(p)
		return err == nil && strings.HasPrefix(ev, prefix), err == nil
	}
	parent := p[:i]
	if parent == "" {
		parent = "/"
	}
	ev, err := filepath.EvalSymlinks(parent)
	return err == nil && strings.HasPrefix(filepath.Join(ev, name), prefix), err == nil
}
