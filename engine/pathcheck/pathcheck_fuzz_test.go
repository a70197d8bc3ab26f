package pathcheck

import (
	"os"
	"path/filepath"
	"strings"
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
		"./.git/config", ".git/../x", "gd-alias/config", "ci/x.yml", "innocent",
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
		// (a) the resolved form is a clean absolute path.
		if strings.IndexByte(res, 0) >= 0 || !filepath.IsAbs(res) || filepath.Clean(res) != res {
			t.Fatalf("Check(%q, %q).Resolved = %q is not clean and absolute", base, p, res)
		}
		// (c) it really is symlink-free: its longest existing ancestor
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
		// (d) where the kernel can resolve the input, it agrees.
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
			// (e) a tool that cleans lexically first must also land inside.
			if v.Inside && !lexicalIn {
				t.Fatalf("Check(%q, %q) = %+v, but the cleaned path %q is really %q", base, p, v, lexical, ev)
			}
		}
		if !v.Inside {
			if v.Root != "" {
				t.Fatalf("Check(%q, %q) = %+v: Root set while outside", base, p, v)
			}
			// Completeness where the kernel can tell: both readings inside
			// means Inside.
			if kernelOK && lexicalIn && strings.HasPrefix(res, rootSlash) {
				t.Fatalf("Check(%q, %q) = %+v, but both readings are inside", base, p, v)
			}
			return
		}
		// (b) inside by an independent prefix test on the clean paths.
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
