package pathcheck

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"
)

// tree is a scratch filesystem shared by the tests and the fuzz target. All
// paths are already symlink-free, so expectations can be written literally.
type tree struct {
	dir     string // resolved temp dir
	app     string // dir/app, the working directory
	extra   string // dir/extra, an additional directory
	outside string // dir/outside
	evil    string // dir/app-evil, shares app's string prefix
	applink string // dir/applink -> app
}

func newTree(tb testing.TB) tree {
	tb.Helper()
	dir, err := filepath.EvalSymlinks(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tr := tree{
		dir:     dir,
		app:     filepath.Join(dir, "app"),
		extra:   filepath.Join(dir, "extra"),
		outside: filepath.Join(dir, "outside"),
		evil:    filepath.Join(dir, "app-evil"),
		applink: filepath.Join(dir, "applink"),
	}
	for _, d := range []string{"app/sub/a/b", "app/gitdata", "app/.github/workflows", "outside/foo", "app-evil", "extra"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	for _, f := range []string{"app/f.txt", "app/sub/f.txt", "app/gitdata/config", "outside/secret", "app-evil/x"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	for _, l := range [][2]string{
		{"app/link-out-dir", filepath.Join(dir, "outside")},
		{"app/link-out-file", "../outside/secret"},
		{"app/link-in", "sub"},
		{"app/link-in-abs", filepath.Join(dir, "app/sub")},
		{"app/link-foo", filepath.Join(dir, "outside/foo")},
		{"app/deep", "sub/a/b"},
		{"app/loop1", "loop2"},
		{"app/loop2", "loop1"},
		{"app/selfloop", "selfloop"},
		{"app/.git", "gitdata"},
		{"app/gd-alias", ".git"},
		{"app/ci", ".github/workflows"},
		{"app/innocent", "CLAUDE.md"},
		{"app/dangling", "../outside/newfile"},
		{"app/up", ".."},
		{"app/proc", "/proc/self/root"},
		{"applink", "app"},
		{"app-evil-link", "app-evil"},
		{"dotfile", "app/f.txt"},
		{"outside/in-link", "../app/f.txt"},
		{"sublink", "app/sub"},
	} {
		if err := os.Symlink(l[1], filepath.Join(dir, l[0])); err != nil {
			tb.Fatal(err)
		}
	}
	return tr
}

func TestResolve(t *testing.T) {
	tr := newTree(t)
	nested := strings.Repeat("d/", 300) + "f"
	cases := []struct {
		name    string
		base, p string
		want    string // expected result; "" means an error is expected
		errIs   error  // optional: the error must wrap this
	}{
		{name: "plain", base: tr.app, p: "f.txt", want: tr.app + "/f.txt"},
		{name: "absolute p ignores base", base: tr.extra, p: tr.app + "/f.txt", want: tr.app + "/f.txt"},
		{name: "dot and dotdot", base: tr.app, p: "./sub/./../f.txt", want: tr.app + "/f.txt"},
		{name: "double slashes", base: tr.app, p: "sub//f.txt", want: tr.app + "/sub/f.txt"},
		{name: "nonexistent appended", base: tr.app, p: "new/dir/x.go", want: tr.app + "/new/dir/x.go"},
		{name: "kernel: symlink then dotdot", base: tr.app, p: "link-foo/../x", want: tr.outside + "/x"},
		{name: "relative symlink then dotdot", base: tr.app, p: "link-in/../f.txt", want: tr.app + "/f.txt"},
		{name: "deep symlink then two dotdots", base: tr.app, p: "deep/../../x", want: tr.app + "/sub/x"},
		{name: "symlinked base", base: tr.app + "/link-foo", p: "../y", want: tr.outside + "/y"},
		{name: "file symlink out", base: tr.app, p: "link-out-file", want: tr.outside + "/secret"},
		{name: "dir symlink out", base: tr.app, p: "link-out-dir/new", want: tr.outside + "/new"},
		{name: "dangling symlink", base: tr.app, p: "dangling", want: tr.outside + "/newfile"},
		{name: "nonexistent climbs back into symlink", base: tr.app, p: "n1/n2/n3/../../../link-out-dir/x", want: tr.outside + "/x"},
		{name: "nonexistent climbs back into symlink then dotdot", base: tr.app, p: "n1/../link-foo/../y", want: tr.outside + "/y"},
		{name: "nonexistent climbs back inside", base: tr.app, p: "n1/n2/../../link-in/x", want: tr.app + "/sub/x"},
		{name: "symlink to parent", base: tr.app, p: "up/app-evil/x", want: tr.evil + "/x"},
		{name: "root symlink", base: tr.dir, p: "applink/sub/../f.txt", want: tr.app + "/f.txt"},
		{name: "slash", base: tr.app, p: "/", want: "/"},
		{name: "dotdot above slash", base: "/", p: "../../..", want: "/"},
		{name: "many dotdots", base: tr.app, p: strings.Repeat("../", 100) + "etc", want: "/etc"},
		{name: "300 nested components", base: tr.app, p: nested, want: tr.app + "/" + nested},

		{name: "empty", base: tr.app, p: ""},
		{name: "NUL", base: tr.app, p: "x\x00y"},
		{name: "NUL in base", base: tr.app + "\x00", p: "x"},
		{name: "tilde", base: tr.app, p: "~"},
		{name: "tilde slash", base: tr.app, p: "~/.ssh/id_rsa"},
		{name: "tilde user", base: tr.app, p: "~root/.ssh/id_rsa"},
		{name: "relative base", base: "app", p: "x"},
		{name: "empty base", base: "", p: "/etc/passwd"},
		{name: "loop", base: tr.app, p: "loop1", errIs: syscall.ELOOP},
		{name: "loop below", base: tr.app, p: "loop1/x", errIs: syscall.ELOOP},
		{name: "self loop", base: tr.app, p: "selfloop/x", errIs: syscall.ELOOP},
		{name: "ENOTDIR", base: tr.app, p: "f.txt/x", errIs: syscall.ENOTDIR},
		{name: "ENOTDIR then dotdot", base: tr.app, p: "f.txt/../x", errIs: syscall.ENOTDIR},
		{name: "ENOTDIR trailing slash", base: tr.app, p: "f.txt/", errIs: syscall.ENOTDIR},
		{name: "ENOTDIR dot", base: tr.app, p: "f.txt/.", errIs: syscall.ENOTDIR},
		{name: "ENOTDIR via symlink", base: tr.app, p: "link-out-file/x", errIs: syscall.ENOTDIR},
		{name: "ENOTDIR base", base: tr.app + "/f.txt", p: "x", errIs: syscall.ENOTDIR},
		{name: "5000 chars", base: tr.app, p: strings.Repeat("a", 5000), errIs: syscall.ENAMETOOLONG},
		{name: "5000 chars of components", base: tr.app, p: strings.Repeat("a/../", 1000), errIs: syscall.ENAMETOOLONG},
		{name: "component over NAME_MAX", base: tr.app, p: strings.Repeat("n", 256) + "/x", errIs: syscall.ENAMETOOLONG},
		{name: "missing component over NAME_MAX", base: tr.app, p: "new/" + strings.Repeat("n", 256), errIs: syscall.ENAMETOOLONG},
		{name: "component at NAME_MAX", base: tr.app, p: "new/" + strings.Repeat("n", 255), want: tr.app + "/new/" + strings.Repeat("n", 255)},
		{name: "resolved over PATH_MAX", base: tr.app, p: strings.Repeat("a/", 2040), errIs: syscall.ENAMETOOLONG},
		{name: "symlink expands over PATH_MAX", base: tr.app, p: "link-out-dir/" + strings.Repeat("a/", 2040), errIs: syscall.ENAMETOOLONG},
		{name: "proc magic link", base: tr.app, p: "proc/etc/passwd"},
		{name: "proc self", base: "/", p: "/proc/self/cwd/x"},
		{name: "dev fd", base: "/", p: "/dev/fd/0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Resolve(tc.base, tc.p)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("Resolve(%q, %q) = %q, want error", tc.base, tc.p, got)
				}
				if tc.errIs != nil && !errors.Is(err, tc.errIs) {
					t.Fatalf("Resolve(%q, %q) error %v, want %v", tc.base, tc.p, err, tc.errIs)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve(%q, %q): %v", tc.base, tc.p, err)
			}
			if got != tc.want {
				t.Fatalf("Resolve(%q, %q) = %q, want %q", tc.base, tc.p, got, tc.want)
			}
			// Where the target exists, the kernel (through EvalSymlinks,
			// which walks like the kernel) must agree.
			joined := tc.p
			if !filepath.IsAbs(joined) {
				joined = tc.base + "/" + tc.p
			}
			if _, err := os.Stat(joined); err == nil {
				ev, err := filepath.EvalSymlinks(joined)
				if err != nil || ev != got {
					t.Fatalf("EvalSymlinks(%q) = %q, %v; Resolve gave %q", joined, ev, err, got)
				}
			}
		})
	}
}

// TestResolveHopLimit checks the limit is exactly the kernel's: a chain of 40
// links resolves, 41 does not, for both the kernel and Resolve.
func TestResolveHopLimit(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "target"), 0o755); err != nil {
		t.Fatal(err)
	}
	// h0 -> h1 -> ... -> h40 -> target: 41 links from h0, 40 from h1.
	for i := 0; i <= 40; i++ {
		next := "target"
		if i < 40 {
			next = "h" + itoa(i+1)
		}
		if err := os.Symlink(next, filepath.Join(dir, "h"+itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "h1")); err != nil {
		t.Fatalf("kernel rejects 40 hops: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "h0")); !errors.Is(err, syscall.ELOOP) {
		t.Fatalf("kernel accepts 41 hops: %v", err)
	}
	if got, err := Resolve(dir, "h1/x"); err != nil || got != dir+"/target/x" {
		t.Fatalf("Resolve 40 hops = %q, %v", got, err)
	}
	if got, err := Resolve(dir, "h0/x"); !errors.Is(err, syscall.ELOOP) {
		t.Fatalf("Resolve 41 hops = %q, %v; want ELOOP", got, err)
	}
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

func TestResolvePermission(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root bypasses directory permissions")
	}
	dir := t.TempDir()
	locked := filepath.Join(dir, "locked")
	if err := os.Mkdir(locked, 0o000); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(locked, 0o755) })
	if got, err := Resolve(dir, "locked/x"); !errors.Is(err, os.ErrPermission) {
		t.Fatalf("Resolve through unsearchable dir = %q, %v; want EACCES", got, err)
	}
}

func mustNew(t *testing.T, roots []string, protected []string) *Checker {
	t.Helper()
	c, err := New(roots, protected)
	if err != nil {
		t.Fatalf("New(%q): %v", roots, err)
	}
	return c
}

func TestCheckContainment(t *testing.T) {
	tr := newTree(t)
	c := mustNew(t, []string{tr.app, tr.extra}, nil)
	cases := []struct {
		name    string
		base, p string
		root    string // containing root; "" means outside
		wantErr bool
	}{
		{name: "plain file", base: tr.app, p: "f.txt", root: tr.app},
		{name: "new file in new dir", base: tr.app, p: "new/dir/x.go", root: tr.app},
		{name: "absolute inside", base: tr.app, p: tr.app + "/sub/f.txt", root: tr.app},
		{name: "relative from subdir base", base: tr.app + "/sub", p: "../f.txt", root: tr.app},
		{name: "outside absolute", base: tr.app, p: "/etc/passwd"},
		{name: "dotdot escape", base: tr.app, p: "../outside/secret"},
		{name: "dotdot escape through subdir", base: tr.app, p: "sub/../../outside/x"},
		{name: "many dotdots", base: tr.app, p: "a/b/../../../../../../etc/passwd"},
		{name: "shared prefix sibling relative", base: tr.app, p: "../app-evil/x"},
		{name: "shared prefix sibling absolute", base: tr.app, p: tr.evil + "/x"},
		{name: "shared prefix sibling new", base: tr.app, p: tr.app + "-evil2/x"},
		{name: "shared prefix via symlink", base: tr.dir, p: "app-evil-link/x"},
		{name: "symlink dir out", base: tr.app, p: "link-out-dir/secret"},
		{name: "symlink dir out new file", base: tr.app, p: "link-out-dir/new.txt"},
		{name: "symlink file out", base: tr.app, p: "link-out-file"},
		{name: "dangling symlink out", base: tr.app, p: "dangling"},
		{name: "kernel: symlink dir then dotdot", base: tr.app, p: "link-foo/../x"},
		{name: "kernel inside but lexical outside", base: tr.app, p: "deep/../../x"},
		{name: "symlink up then back in", base: tr.app, p: "up/app/x", root: tr.app},
		{name: "symlink up then sibling", base: tr.app, p: "up/app-evil/x"},
		{name: "symlink in", base: tr.app, p: "link-in/x", root: tr.app},
		{name: "final symlink in", base: tr.app, p: "link-in", root: tr.app},
		{name: "final symlink in to protected", base: tr.app, p: "innocent", root: tr.app},
		{name: "outside file symlink into root", base: tr.dir, p: "dotfile"},
		{name: "outside file symlink into root absolute", base: tr.app, p: tr.dir + "/dotfile"},
		{name: "outside file symlink into root lexical", base: tr.app, p: "sub/../../dotfile"},
		{name: "outside file symlink into root after symlink dotdot", base: tr.app, p: "link-foo/../in-link"},
		{name: "outside dir symlink into root", base: tr.dir, p: "sublink/x", root: tr.app},
		{name: "outside dir symlink into root itself", base: tr.dir, p: "sublink"},
		// Followed for the kernel, but a tool that cleans the path first
		// would name the link itself (and this is a directory anyway).
		{name: "outside dir symlink into root trailing slash", base: tr.dir, p: "sublink/"},
		{name: "symlink in absolute", base: tr.app, p: "link-in-abs/x", root: tr.app},
		{name: "symlink in then dotdot", base: tr.app, p: "link-in/../x", root: tr.app},
		{name: "nonexistent climbs into symlink out", base: tr.app, p: "n1/n2/../../link-out-dir/x"},
		{name: "nonexistent climbs into symlink in", base: tr.app, p: "n1/n2/../../link-in/x", root: tr.app},
		{name: "nonexistent climbs out", base: tr.app, p: "n1/../../x"},
		{name: "root itself dot", base: tr.app, p: "."},
		{name: "root itself absolute", base: tr.app, p: tr.app},
		{name: "root itself trailing slash", base: tr.app, p: tr.app + "/"},
		{name: "root itself via dotdot", base: tr.app, p: "sub/.."},
		{name: "root itself via symlink", base: tr.dir, p: "applink"},
		{name: "root via symlink, target via symlink", base: tr.dir, p: "applink/sub/x", root: tr.app},
		{name: "symlink to root dir then dotdot", base: tr.dir, p: "applink/../app-evil/x"},
		{name: "additional dir", base: tr.app, p: "../extra/y", root: tr.extra},
		{name: "additional dir absolute", base: tr.app, p: tr.extra + "/z/y", root: tr.extra},
		{name: "additional dir itself", base: tr.app, p: "../extra"},
		{name: "parent of roots", base: tr.app, p: "../x"},
		{name: "300 nested components", base: tr.app, p: strings.Repeat("d/", 300) + "f", root: tr.app},
		{name: "proc magic link", base: tr.app, p: "proc" + tr.app + "/x", wantErr: true},
		{name: "loop", base: tr.app, p: "loop1", wantErr: true},
		{name: "ENOTDIR", base: tr.app, p: "f.txt/x", wantErr: true},
		{name: "NUL", base: tr.app, p: "f.txt\x00/etc/passwd", wantErr: true},
		{name: "tilde", base: tr.app, p: "~/.ssh/id_rsa", wantErr: true},
		{name: "empty", base: tr.app, p: "", wantErr: true},
		{name: "relative base", base: "app", p: "f.txt", wantErr: true},
		{name: "5000 chars", base: tr.app, p: strings.Repeat("x", 5000), wantErr: true},
		{name: "5000 chars of dotdots", base: tr.app, p: strings.Repeat("d/../", 1000) + "f", wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, err := c.Check(tc.base, tc.p)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("Check(%q, %q) = %+v, want error", tc.base, tc.p, v)
				}
				if v.Inside {
					t.Fatalf("Check(%q, %q) reported Inside with error %v", tc.base, tc.p, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Check(%q, %q): %v", tc.base, tc.p, err)
			}
			if v.Inside != (tc.root != "") || v.Root != tc.root {
				t.Fatalf("Check(%q, %q) = %+v, want root %q", tc.base, tc.p, v, tc.root)
			}
		})
	}
}

// TestCheckSymlinkRoot covers a root configured through a symlink and targets
// given through the other name.
func TestCheckSymlinkRoot(t *testing.T) {
	tr := newTree(t)
	for _, rootName := range []string{tr.app, tr.applink, tr.applink + "/", tr.dir + "/./applink/sub/.."} {
		c := mustNew(t, []string{rootName}, DefaultProtected)
		for _, tc := range []struct {
			base, p   string
			inside    bool
			protected string
		}{
			{tr.app, "x.go", true, ""},
			{tr.applink, "x.go", true, ""},
			{tr.dir, "app/sub/x.go", true, ""},
			{tr.dir, "applink/sub/x.go", true, ""},
			{tr.dir, "applink", false, ""},
			{tr.dir, "app", false, ""},
			{tr.dir, "app-evil/x", false, ""},
			{tr.dir, "applink-evil/x", false, ""},
			{tr.dir, "applink/.git/config", true, ".git/"},
			{tr.dir, "app/.git/config", true, ".git/"},
			{tr.applink, "CLAUDE.md", true, "CLAUDE.md"},
		} {
			v, err := c.Check(tc.base, tc.p)
			if err != nil {
				t.Fatalf("root %q: Check(%q, %q): %v", rootName, tc.base, tc.p, err)
			}
			if v.Inside != tc.inside || v.Protected != tc.protected {
				t.Errorf("root %q: Check(%q, %q) = %+v, want inside=%v protected=%q", rootName, tc.base, tc.p, v, tc.inside, tc.protected)
			}
			if v.Inside && v.Root != tr.app {
				t.Errorf("root %q: Root = %q, want resolved %q", rootName, v.Root, tr.app)
			}
		}
	}
}

func TestCheckProtected(t *testing.T) {
	tr := newTree(t)
	c := mustNew(t, []string{tr.app}, DefaultProtected)
	cases := []struct {
		p    string
		want string // matched pattern; "" means not protected
	}{
		// Every default entry, directly and nested.
		{".git/config", ".git/"},
		{"sub/.git/hooks/pre-commit", ".git/"},
		{"sub/.git", ".git/"},
		{".claude/settings.json", ".claude/"},
		{"sub/.claude/settings.local.json", ".claude/"},
		{".gemini/settings.json", ".gemini/"},
		{".codex/config.toml", ".codex/"},
		{".mcp.json", ".mcp.json"},
		{"sub/.mcp.json", ".mcp.json"},
		{"CLAUDE.md", "CLAUDE.md"},
		{"docs/CLAUDE.md", "CLAUDE.md"},
		{"AGENTS.md", "AGENTS.md"},
		{"GEMINI.md", "GEMINI.md"},
		{".github/workflows/ci.yml", ".github/workflows/"},
		{"sub/.github/workflows/release.yaml", ".github/workflows/"},
		{".env", ".env*"},
		{".env.local", ".env*"},
		{".envrc", ".envrc"},
		{"config/.env.prod", ".env*"},
		{".gitmodules", ".gitmodules"},
		{".cursor/rules/x.mdc", ".cursor/"},
		{".github/actions/setup/action.yml", ".github/actions/"},
		{".gitlab-ci.yml", ".gitlab-ci.yml"},
		{".circleci/config.yml", ".circleci/"},
		{".vscode/tasks.json", ".vscode/"},
		{".idea/workspace.xml", ".idea/"},
		{".devcontainer/devcontainer.json", ".devcontainer/"},
		{".husky/pre-commit", ".husky/"},
		{".pre-commit-config.yaml", ".pre-commit-config.yaml"},
		// Case folding: case-insensitive filesystems map these onto the
		// protected names.
		{".GIT/config", ".git/"},
		{".Git/HEAD", ".git/"},
		{"claude.md", "CLAUDE.md"},
		{"Agents.Md", "AGENTS.md"},
		{".CLAUDE/settings.json", ".claude/"},
		{".GitHub/WorkFlows/ci.yml", ".github/workflows/"},
		{".ENV.local", ".env*"},
		{".mcp.j\u017fon", ".mcp.json"}, // LONG S folds to s
		// Reached through symlinks.
		{"innocent", "CLAUDE.md"},               // innocent -> CLAUDE.md
		{"ci/deploy.yml", ".github/workflows/"}, // ci -> .github/workflows
		{"gd-alias/config", ".git/"},            // gd-alias -> .git -> gitdata
		{"link-in/../.env", ".env*"},
		// Near misses: different names, not the protected ones.
		{".gitignore", ""},
		{".gitattributes", ""},
		{"sub/.gitkeep", ""},
		{".github/CODEOWNERS", ""},
		{".github/dependabot.yml", ""},
		{"github/workflows/ci.yml", ""},
		{"workflows/ci.yml", ""},
		{"env.txt", ""},
		{"x.env", ""},
		{"environment/x", ""},
		{"CLAUDE.md.bak", ""},
		{"MY-CLAUDE.md", ""},
		{"claude/x", ""},
		{"my.claude/x", ""},
		{"mcp.json", ""},
		{"src/main.go", ""},
		{"gitdata/x", ""},        // the real directory behind .git is only known by name
		{".git/../f.txt", ""},    // dotdot leaves .git (here: leaves gitdata)
		{"sub/.git/../x.go", ""}, // nonexistent .git then dotdot
	}
	for _, tc := range cases {
		t.Run(tc.p, func(t *testing.T) {
			v, err := c.Check(tr.app, tc.p)
			if err != nil {
				t.Fatalf("Check(%q): %v", tc.p, err)
			}
			if !v.Inside {
				t.Fatalf("Check(%q) = %+v, want inside", tc.p, v)
			}
			if v.Protected != tc.want {
				t.Fatalf("Check(%q).Protected = %q (resolved %q), want %q", tc.p, v.Protected, v.Resolved, tc.want)
			}
		})
	}
}

// TestCheckProtectedSymlinkedGit covers the symlinked .git: the kernel writes
// into gitdata, which is not a protected name, so the lexical name must count.
func TestCheckProtectedSymlinkedGit(t *testing.T) {
	tr := newTree(t)
	c := mustNew(t, []string{tr.app}, DefaultProtected)
	v, err := c.Check(tr.app, ".git/config")
	if err != nil {
		t.Fatal(err)
	}
	if v.Resolved != tr.app+"/gitdata/config" {
		t.Fatalf("Resolved = %q, want the symlink target", v.Resolved)
	}
	if !v.Inside || v.Protected != ".git/" {
		t.Fatalf("Check(.git/config) = %+v, want inside and protected by .git/", v)
	}
}

func TestCheckNestedRoots(t *testing.T) {
	tr := newTree(t)
	// The outer root sees "app/.git/..." where the inner sees ".git/...";
	// the first root in order is reported.
	c := mustNew(t, []string{tr.app, tr.dir}, []string{".git/", "app/secret"})
	for _, tc := range []struct {
		p         string
		root      string
		protected string
	}{
		{tr.app + "/x", tr.app, ""},
		{tr.outside + "/x", tr.dir, ""},
		{tr.app + "/.git/config", tr.app, ".git/"},
		{tr.app + "/secret", tr.app, "app/secret"}, // only matches relative to the outer root
		{tr.dir + "/.git/config", tr.dir, ".git/"},
	} {
		v, err := c.Check("/", tc.p)
		if err != nil {
			t.Fatal(err)
		}
		if !v.Inside || v.Root != tc.root || v.Protected != tc.protected {
			t.Errorf("Check(%q) = %+v, want root %q protected %q", tc.p, v, tc.root, tc.protected)
		}
	}
}

func TestPatternMatch(t *testing.T) {
	tr := newTree(t)
	c := mustNew(t, []string{tr.app}, []string{"build/", "docs/*.secret", "a/b/c", "[Kk]ey?.pem", "\\*literal"})
	for _, tc := range []struct {
		p, want string
	}{
		{"build", "build/"},
		{"build/out.bin", "build/"},
		{"x/build/y", "build/"},
		{"builds/y", ""},
		{"docs/x.secret", "docs/*.secret"},
		{"sub/docs/x.SECRET", "docs/*.secret"},
		{"docs/sub/x.secret", ""},
		{"docs.secret", ""},
		{"a/b/c", "a/b/c"},
		{"z/a/b/c/d", "a/b/c"},
		{"a/b", ""},
		{"a/x/b/c", ""},
		{"key1.pem", "[Kk]ey?.pem"},
		{"KEY2.PEM", "[Kk]ey?.pem"},
		{"key12.pem", ""},
		{"*literal", "\\*literal"},
		{"xliteral", ""},
	} {
		v, err := c.Check(tr.app, tc.p)
		if err != nil {
			t.Fatal(err)
		}
		if v.Protected != tc.want {
			t.Errorf("Check(%q).Protected = %q, want %q", tc.p, v.Protected, tc.want)
		}
	}
}

func TestNewErrors(t *testing.T) {
	tr := newTree(t)
	for _, tc := range []struct {
		name      string
		roots     []string
		protected []string
		mention   string // the error must name this
	}{
		{"no roots", nil, nil, "root"},
		{"relative root", []string{"app"}, nil, `"app"`},
		{"empty root", []string{tr.app, ""}, nil, `""`},
		{"NUL root", []string{tr.app + "\x00x"}, nil, "NUL"},
		{"tilde root", []string{"~/proj"}, nil, "~/proj"},
		{"loop root", []string{tr.app + "/loop1"}, nil, "loop1"},
		{"ENOTDIR root", []string{tr.app + "/f.txt/x"}, nil, "f.txt/x"},
		{"ambiguous root", []string{tr.app + "/link-foo/.."}, nil, "link-foo/.."},
		{"proc root", []string{"/proc/self/cwd"}, nil, "/proc/self/cwd"},
		{"empty pattern", []string{tr.app}, []string{".git/", ""}, `""`},
		{"absolute pattern", []string{tr.app}, []string{"/etc"}, `"/etc"`},
		{"dotdot pattern", []string{tr.app}, []string{"../x"}, `"../x"`},
		{"inner dotdot pattern", []string{tr.app}, []string{"a/../b"}, `"a/../b"`},
		{"dot pattern", []string{tr.app}, []string{"./x"}, `"./x"`},
		{"empty component", []string{tr.app}, []string{"a//b"}, `"a//b"`},
		{"slash only", []string{tr.app}, []string{"/"}, `"/"`},
		{"bad bracket", []string{tr.app}, []string{"[a"}, `"[a"`},
		{"bad escape", []string{tr.app}, []string{"x\\"}, `"x\\"`},
		{"bad range late", []string{tr.app}, []string{"abc/[]"}, `"abc/[]"`},
		{"NUL pattern", []string{tr.app}, []string{"a\x00"}, "NUL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(tc.roots, tc.protected)
			if err == nil {
				t.Fatalf("New(%q, %q) = %v, want error", tc.roots, tc.protected, c)
			}
			if !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("New error %q does not mention %q", err, tc.mention)
			}
		})
	}
	if _, err := New([]string{tr.app}, []string{"x"}); err == nil {
		// sanity: no error path above is triggered by a valid config
	} else {
		t.Fatal(err)
	}
	if _, err := New([]string{tr.app}, DefaultProtected); err != nil {
		t.Fatalf("DefaultProtected does not compile: %v", err)
	}
}

// TestNonexistentRoot: roots that do not exist here resolve lexically.
func TestNonexistentRoot(t *testing.T) {
	tr := newTree(t)
	missing := tr.dir + "/missing/proj"
	c := mustNew(t, []string{missing + "/../proj2/"}, DefaultProtected)
	for _, tc := range []struct {
		p         string
		inside    bool
		protected string
	}{
		{tr.dir + "/missing/proj2/x", true, ""},
		{tr.dir + "/missing/proj2/.env", true, ".env*"},
		{tr.dir + "/missing/proj2", false, ""},
		{tr.dir + "/missing/proj2-evil/x", false, ""},
		{tr.dir + "/missing/proj/x", false, ""},
	} {
		v, err := c.Check(tr.app, tc.p)
		if err != nil {
			t.Fatal(err)
		}
		if v.Inside != tc.inside || v.Protected != tc.protected {
			t.Errorf("Check(%q) = %+v, want inside=%v protected=%q", tc.p, v, tc.inside, tc.protected)
		}
	}
}

func TestFold(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{".GIT", ".git"},
		{"\u212a", "k"},          // KELVIN SIGN
		{"\u017f", "s"},          // LONG S
		{"\xff\xfe", "\xff\xfe"}, // invalid UTF-8 kept byte for byte
		{"Straße", "straße"},
	} {
		if got := fold(tc.in); got != tc.want {
			t.Errorf("fold(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestCheckConcurrent lets -race confirm a Checker is safe to share.
func TestCheckConcurrent(t *testing.T) {
	tr := newTree(t)
	c := mustNew(t, []string{tr.app, tr.extra}, DefaultProtected)
	done := make(chan Verdict)
	for i := 0; i < 8; i++ {
		go func() {
			var v Verdict
			for j := 0; j < 50; j++ {
				v, _ = c.Check(tr.app, ".git/config")
			}
			done <- v
		}()
	}
	for i := 0; i < 8; i++ {
		if v := <-done; !v.Inside || v.Protected != ".git/" {
			t.Errorf("concurrent Check = %+v", v)
		}
	}
}

// TestNewWithPatterns checks that patterns compiled once protect exactly as
// New's do, for every Checker built from them, and that a bad pattern is
// refused when compiled.
func TestNewWithPatterns(t *testing.T) {
	if _, err := CompilePatterns([]string{".git/", "/abs"}); err == nil || !strings.Contains(err.Error(), `"/abs"`) {
		t.Fatalf("CompilePatterns with an absolute pattern: %v, want an error naming it", err)
	}
	tr := newTree(t)
	pats, err := CompilePatterns(DefaultProtected)
	if err != nil {
		t.Fatal(err)
	}
	for p, protected := range map[string]string{".git/config": ".git/", "sub/.env.local": ".env*", "src/main.go": "", "x/.GitHub/Workflows/ci.yml": ".github/workflows/"} {
		want, werr := mustNew(t, []string{tr.app}, DefaultProtected).Check(tr.app, p)
		if werr != nil || want.Protected != protected {
			t.Fatalf("%s: New gives %+v, %v; want protected by %q", p, want, werr, protected)
		}
		for range 2 {
			c, err := NewWithPatterns([]string{tr.app}, pats)
			if err != nil {
				t.Fatal(err)
			}
			got, gerr := c.Check(tr.app, p)
			if got != want || (gerr == nil) != (werr == nil) {
				t.Fatalf("%s: NewWithPatterns gives %+v, %v; New gives %+v, %v", p, got, gerr, want, werr)
			}
		}
	}
	c, err := NewWithPatterns([]string{tr.app}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := c.Check(tr.app, ".git/config"); err != nil || v.Protected != "" || !v.Inside {
		t.Fatalf("nil patterns: %+v, %v; want inside and unprotected", v, err)
	}
}

// TestTooLongErrorIsUTF8: the error quotes the start of an over-long path,
// cut on a character boundary; a reason that is not UTF-8 cannot be sent.
func TestTooLongErrorIsUTF8(t *testing.T) {
	for _, p := range []string{
		"/" + strings.Repeat("a", 62) + "é" + strings.Repeat("/b", 2100),
		"/" + strings.Repeat("€", 2000),
	} {
		_, err := Resolve("/", p)
		if err == nil || !strings.Contains(err.Error(), "file name too long") || !utf8.ValidString(err.Error()) {
			t.Errorf("Resolve(%.20q...) = %q", p, err)
		}
	}
	if _, err := Resolve("/"+strings.Repeat("é", 3000), "x"); err == nil || !strings.Contains(err.Error(), "file name too long") || !utf8.ValidString(err.Error()) {
		t.Errorf("long base: %q", err)
	}
}

// TestLinkFreeAgreesWithWalk checks the kernel's shortcut against the
// component walk on every shape of the test tree: where it answers, it
// must give the walk's path; where a link, a missing component or an
// error is on the way, it must not answer at all.
func TestLinkFreeAgreesWithWalk(t *testing.T) {
	tr := newTree(t)
	answered := 0
	for _, rel := range []string{
		"", "app", "app/", "app/.", "app/sub/a/b", "app/sub/a/b/../../f.txt", "app/sub/../f.txt", "app/f.txt",
		"app/f.txt/", "app/f.txt/..", "app/nope", "app/nope/../f.txt", "app/link-in", "app/link-in/f.txt",
		"app/link-out-dir/../f.txt", "app/deep/..", "app/loop1", "app/dangling", "app/up/app", "app/proc",
		"app/.git/config", "applink/f.txt", "outside/in-link", strings.Repeat("app/sub/../", 400),
		"app/" + strings.Repeat("x", 256),
	} {
		abs := tr.dir + "/" + rel
		want, werr := walkComponents(testMounts(t), abs, true)
		got, ok := linkFree(testMounts(t), abs, false)
		if !ok {
			continue
		}
		answered++
		if werr != nil || got != want.path || len(want.views) > 0 || want.finalLink {
			t.Errorf("linkFree(%q) = %q; the walk gives %+v, %v", rel, got, want, werr)
		}
	}
	// walk, shortcuts included, answers as the component walk does, for
	// files to create and links at the end too.
	for _, rel := range []string{
		"app/f.txt", "app/new.txt", "app/sub/new", "app/nope/new", "app/link-in", "app/link-out-file",
		"app/dangling", "app/loop1", "app/selfloop", "app/up", "app/proc", "app/f.txt/new", "app/sub/..",
		"app/link-in/new", "app/.git", "app/gd-alias", "app/innocent", "applink", "app/" + strings.Repeat("x", 256),
		"app/sub/a/b/" + strings.Repeat("y", 4000), "app/nope/" + strings.Repeat("z", 256), "app/nope/a/../../f.txt",
		"app/nope/" + strings.Repeat("z", 255),
	} {
		for _, follow := range []bool{true, false} {
			abs := tr.dir + "/" + rel
			got, gerr := (*Proofs)(nil).walk(abs, follow)
			want, werr := walkComponents(testMounts(t), abs, follow)
			if (gerr == nil) != (werr == nil) || gerr == nil && !reflect.DeepEqual(got, want) {
				t.Errorf("walk(%q, %v) = %+v, %v; the component walk gives %+v, %v", rel, follow, got, gerr, want, werr)
			}
		}
	}
	for _, linked := range []string{"app/link-in", "app/link-in/f.txt", "app/dangling", "applink", "app/up/app", "app/proc"} {
		if p, ok := linkFree(testMounts(t), tr.dir+"/"+linked, false); ok {
			t.Errorf("linkFree(%q) = %q past a link", linked, p)
		}
	}
	if answered < 8 && runtime.GOOS == "linux" && !openat2Missing.Load() {
		t.Errorf("linkFree answered %d link-free paths; the shortcut is not taken", answered)
	}
}

// TestPatternFixSound checks that a glob component's literal head and tail
// never refuse a name path.Match accepts, for every built-in pattern and
// names built from the patterns' own pieces.
func TestPatternFixSound(t *testing.T) {
	pats, err := CompilePatterns(append(DefaultProtected, "a*b*c", "x?[yz]*]", "[ab]c*"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pats.list {
		for _, c := range p.comps {
			for _, fill := range []string{"", "a", ".x", "zz", "y"} {
				names = append(names, strings.NewReplacer("*", fill, "?", "q", "[", "", "]", "").Replace(c), strings.ReplaceAll(c, "*", fill))
			}
		}
	}
	checked := 0
	for _, p := range pats.list {
		for j, c := range p.comps {
			if !p.glob[j] {
				continue
			}
			fix := p.fix[j]
			for _, n := range names {
				if m, _ := path.Match(c, n); m {
					checked++
					if !strings.HasPrefix(n, fix[0]) || !strings.HasSuffix(n, fix[1]) || len(n) < len(fix[0])+len(fix[1]) {
						t.Errorf("%q matches %q, but its head and tail %q refuse it", c, n, fix)
					}
				}
			}
		}
	}
	if checked < 50 {
		t.Errorf("only %d matching names tried", checked)
	}
}

// TestProofsAgreeWithWalk: walks sharing one Proofs, as the paths of one
// check do, answer as the component walk does, in either order of the
// paths (so that answers remembered from one path, proven or not, are
// right for the next), and the proofs spare system calls.
func TestProofsAgreeWithWalk(t *testing.T) {
	tr := newTree(t)
	rels := []string{
		"app/sub/f.txt", "app/sub", "app", "app/sub/a/b", "app/sub/a", "app/f.txt", "app/new.txt", "app/sub/new",
		"app/nope/new", "app/link-in", "app/link-in/f.txt", "app/sub/f.txt/x", "app/f.txt", "app/dangling", "app/up",
		"app/.git", "app/.git/config", "applink", "applink/f.txt", "app/sub/../f.txt", "app/./sub", "",
	}
	for _, order := range []string{"forward", "backward"} {
		pr := &Proofs{}
		for i := range rels {
			rel := rels[i]
			if order == "backward" {
				rel = rels[len(rels)-1-i]
			}
			abs := strings.TrimSuffix(tr.dir+"/"+rel, "/")
			for _, follow := range []bool{true, false} {
				got, gerr := pr.walk(abs, follow)
				want, werr := walkComponents(testMounts(t), abs, follow)
				if (gerr == nil) != (werr == nil) || gerr == nil && !reflect.DeepEqual(got, want) {
					t.Errorf("%s: walk(%q, %v) with proofs = %+v, %v; the component walk gives %+v, %v", order, rel, follow, got, gerr, want, werr)
				}
			}
		}
		if runtime.GOOS == "linux" && !openat2Missing.Load() && len(pr.seen) >= 2*len(rels) {
			t.Errorf("%s: %d kernel answers for %d paths walked twice: nothing was answered from the proofs", order, len(pr.seen), len(rels))
		}
	}
	// A directory above a proven file is proven without a system call; a
	// file proven is no directory proven.
	pr := &Proofs{}
	if _, ok := pr.linkFree(testMounts(t), tr.app+"/sub/f.txt", false); !ok && runtime.GOOS == "linux" && !openat2Missing.Load() {
		t.Fatal("app/sub/f.txt is not proven link-free")
	}
	n := len(pr.seen)
	if p, ok := pr.linkFree(testMounts(t), tr.app+"/sub", true); ok && len(pr.seen) != n {
		t.Errorf("app/sub (%q) took a system call after app/sub/f.txt was proven", p)
	}
	if _, ok := pr.linkFree(testMounts(t), tr.app+"/sub/f.txt", true); ok {
		t.Error("app/sub/f.txt, a file, is proven a directory")
	}
}

func TestIsClean(t *testing.T) {
	for p, want := range map[string]bool{
		"/": true, "/a": true, "/a/b": true, "/a/.b": true, "/a/..b": true, "/a/b.": true,
		"": false, "a": false, "/a/": false, "//a": false, "/a//b": false, "/./a": false, "/a/.": false,
		"/a/..": false, "/a/../b": false, "/..": false, "/.": false,
	} {
		if got := isClean(p); got != want {
			t.Errorf("isClean(%q) = %v, want %v", p, got, want)
		}
		if want && filepath.Clean(p) != p {
			t.Errorf("the table says %q is clean; filepath.Clean disagrees", p)
		}
	}
}

// TestCheckRepositoryAbove: a write anywhere below a directory that holds
// a HEAD (a bare repository, a test fixture, a worktree's admin
// directory) is protected, whatever the names on the way; a HEAD file
// itself is protected by name.
func TestCheckRepositoryAbove(t *testing.T) {
	tr := newTree(t)
	for _, d := range []string{"app/fixtures/repo.git/objects", "app/fixtures/repo.git/refs", "app/half", "app/plain"} {
		if err := os.MkdirAll(filepath.Join(tr.dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"app/fixtures/repo.git/HEAD", "app/half/HEAD"} {
		if err := os.WriteFile(filepath.Join(tr.dir, f), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("fixtures/repo.git", filepath.Join(tr.app, "innocent-dir")); err != nil {
		t.Fatal(err)
	}
	c := mustNew(t, []string{tr.app}, DefaultProtected)
	for _, tc := range []struct {
		p    string
		want string
	}{
		{"fixtures/repo.git/config", tr.app + "/fixtures/repo.git/HEAD"},
		{"fixtures/repo.git/hooks/post-checkout", tr.app + "/fixtures/repo.git/HEAD"},
		{"fixtures/repo.git/objects/info/alternates", tr.app + "/fixtures/repo.git/HEAD"},
		{"innocent-dir/config", tr.app + "/innocent-dir/HEAD"}, // a link to it

		// A HEAD without objects/ and refs/ yet: creating them makes it one.
		{"half/objects/x", tr.app + "/half/HEAD"},
		{"half/refs/heads/main", tr.app + "/half/HEAD"},
		{"half/config", tr.app + "/half/HEAD"},
		// Creating a HEAD, in any case, or a commondir, by name.
		{"plain/HEAD", "HEAD"},
		{"plain/head", "HEAD"},
		{"plain/commondir", "commondir"},
		// Neighbours.
		{"plain/config", ""},
		{"plain/objects/x.go", ""},
		{"fixtures/other/config", ""},
		{"fixtures/repo.git.md", ""},
	} {
		v, err := c.Check(tr.app, tc.p)
		if err != nil || !v.Inside {
			t.Fatalf("Check(%q) = %+v, %v; want inside", tc.p, v, err)
		}
		got := strings.TrimSuffix(v.Protected, " (a directory git may take for a repository)")
		if got != tc.want {
			t.Errorf("Check(%q).Protected = %q, want %q", tc.p, v.Protected, tc.want)
		}
	}
}

// TestCheckVirtualenvAbove: a directory holding a pyvenv.cfg is a Python
// virtual environment, whatever its name, whose interpreter, activate
// scripts and site-packages editors and tools run: writes anywhere below
// it are protected.
func TestCheckVirtualenvAbove(t *testing.T) {
	tr := newTree(t)
	if err := os.MkdirAll(filepath.Join(tr.app, "env/bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tr.app, "env/pyvenv.cfg"), []byte("home = /usr/bin\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := mustNew(t, []string{tr.app}, DefaultProtected)
	for p, want := range map[string]bool{"env/bin/python": true, "env/lib/python3.12/site-packages/x.pth": true,
		"env/bin/activate": true, "envelope/x.go": false, "src/env.py": false} {
		v, err := c.Check(tr.app, p)
		if err != nil || !v.Inside {
			t.Fatalf("Check(%q) = %+v, %v; want inside", p, v, err)
		}
		if got := strings.Contains(v.Protected, "pyvenv.cfg"); got != want {
			t.Errorf("Check(%q).Protected = %q, want a pyvenv.cfg above: %v", p, v.Protected, want)
		}
	}
}

// TestCheckHidden: Hidden names the first dot-named component that is not
// an inert dot-file, through every name the target goes by.
func TestCheckHidden(t *testing.T) {
	tr := newTree(t)
	if err := os.Mkdir(filepath.Join(tr.app, ".tool"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, l := range [][2]string{{"app/tool-alias", ".tool"}, {"app/.alias", "sub"}} {
		if err := os.Symlink(l[1], filepath.Join(tr.dir, l[0])); err != nil {
			t.Fatal(err)
		}
	}
	c := mustNew(t, []string{tr.app}, DefaultProtected)
	for _, tc := range []struct{ p, want string }{
		{"src/main.go", ""},
		{".gitignore", ""},
		{"sub/.editorconfig", ""},
		{".github/ISSUE_TEMPLATE/bug.yml", ""},
		{".tool/config.json", ".tool"},
		{"sub/.lsp.json", ".lsp.json"},
		{".prettierrc", ".prettierrc"},
		{"tool-alias/hooks.json", ".tool"}, // resolves into .tool
		{".alias/x.go", ".alias"},          // written by a hidden name
		{".github/dependabot.yml", ".github"},
	} {
		v, err := c.Check(tr.app, tc.p)
		if err != nil || !v.Inside {
			t.Fatalf("Check(%q) = %+v, %v; want inside", tc.p, v, err)
		}
		if v.Hidden != tc.want {
			t.Errorf("Check(%q).Hidden = %q, want %q", tc.p, v.Hidden, tc.want)
		}
	}
	if v, err := c.Check(tr.app, "../outside/.x"); err != nil || v.Inside || v.Hidden != "" {
		t.Errorf("Check(outside) = %+v, %v; want outside with no Hidden", v, err)
	}
}

// testMounts is the mount table as a walk takes it.
func testMounts(tb testing.TB) *mountTable {
	tb.Helper()
	mt, err := currentMounts()
	if err != nil {
		tb.Fatal(err)
	}
	return mt
}

// ReadDir lists a directory sorted, an empty one without error, and
// refuses one past MaxDirEntries rather than reading it all.
func TestReadDirBounded(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	full := filepath.Join(dir, "full")
	for _, d := range []string{empty, full} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if ents, err := ReadDir(empty); err != nil || len(ents) != 0 {
		t.Errorf("empty directory: %d entries, %v", len(ents), err)
	}
	for _, n := range []string{"b", "a", "c"} {
		if err := os.WriteFile(filepath.Join(full, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ents, err := ReadDir(full)
	if err != nil || len(ents) != 3 || ents[0].Name() != "a" || ents[2].Name() != "c" {
		t.Errorf("three files: %v, %v", ents, err)
	}
	for i := 3; i <= MaxDirEntries; i++ {
		f, err := os.Create(filepath.Join(full, fmt.Sprintf("f%05d", i)))
		if err != nil {
			t.Fatal(err)
		}
		_ = f.Close()
	}
	if ents, err := ReadDir(full); !errors.Is(err, ErrTooManyEntries) {
		t.Errorf("%d+1 entries: %d listed, %v; want ErrTooManyEntries", MaxDirEntries, len(ents), err)
	}
}
