package gitrepo

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/engine/pathcheck"
)

// git runs the real git with no system or user configuration, for
// building repositories and for asking git which one it uses.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@x", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@x"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v in %s: %v\n%s", args, dir, err, out)
	}
	return strings.TrimSpace(string(out))
}

// gitDirOf asks git which repository it uses in dir ("" for none).
func gitDirOf(t *testing.T, dir string) string {
	t.Helper()
	cmd := exec.Command("git", "rev-parse", "--absolute-git-dir")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func tempDir(t *testing.T) string {
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func commit(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for f, s := range files {
		write(t, filepath.Join(dir, f), s)
	}
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-qm", "c")
}

// TestDiscoverAgreesWithGit builds the shapes git discovery knows and
// asks git itself which repository it uses in each: Discover must name
// the same one, or none where git finds none.
func TestDiscoverAgreesWithGit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(t *testing.T, root string) string // returns the directory to run in
		bare  bool
	}{
		{"own .git", func(t *testing.T, root string) string {
			git(t, root, "init", "-q")
			return root
		}, false},
		{"subdirectory", func(t *testing.T, root string) string {
			git(t, root, "init", "-q")
			write(t, root+"/a/b/x", "")
			return root + "/a/b"
		}, false},
		{"no repository", func(t *testing.T, root string) string {
			write(t, root+"/p/x", "")
			return root + "/p"
		}, false},
		{"invalid .git directory falls through to the parent", func(t *testing.T, root string) string {
			git(t, root, "init", "-q")
			write(t, root+"/p/.git/config", "[core]\n")
			return root + "/p"
		}, false},
		{"gitdir file", func(t *testing.T, root string) string {
			git(t, root, "init", "-q", "--bare", "store/r.git")
			write(t, root+"/p/.git", "gitdir: ../store/r.git\n")
			return root + "/p"
		}, false},
		{"bare repository as the directory", func(t *testing.T, root string) string {
			write(t, root+"/p/HEAD", "ref: refs/heads/main\n")
			for _, d := range []string{"objects", "refs"} {
				if err := os.MkdirAll(root+"/p/"+d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			return root + "/p"
		}, true},
		{"bare repository above", func(t *testing.T, root string) string {
			write(t, root+"/HEAD", "0123456789012345678901234567890123456789\n")
			for _, d := range []string{"objects", "refs", "p/src"} {
				if err := os.MkdirAll(root+"/"+d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			return root + "/p/src"
		}, true},
		{"HEAD that is no ref is no repository", func(t *testing.T, root string) string {
			write(t, root+"/p/HEAD", "hello\n")
			for _, d := range []string{"objects", "refs"} {
				if err := os.MkdirAll(root+"/p/"+d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			return root + "/p"
		}, false},
		// Inside a repository, a directory git takes for a bare one
		// though its HEAD reads oddly: Discover must not pass over it.
		{"HEAD with a newline after ref:", bareIn("ref:\nrefs/heads/main\n"), true},
		{"HEAD in upper-case hex", bareIn("0123456789ABCDEF0123456789ABCDEF01234567\n"), true},
		{"HEAD with more than 40 hex digits", bareIn("0123456789abcdef0123456789abcdef0123456789abcd\n"), true},
		{"objects an executable file", func(t *testing.T, root string) string {
			git(t, root, "init", "-q")
			write(t, root+"/sub/HEAD", "ref: refs/heads/main\n")
			write(t, root+"/sub/refs/x", "")
			write(t, root+"/sub/objects", "")
			if err := os.Chmod(root+"/sub/objects", 0o755); err != nil {
				t.Fatal(err)
			}
			return root + "/sub"
		}, true},
		{"linked worktree", func(t *testing.T, root string) string {
			git(t, root, "init", "-q", "-b", "main", "main")
			commit(t, root+"/main", map[string]string{"a": "1"})
			git(t, root+"/main", "worktree", "add", "-q", "../wt")
			return root + "/wt"
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := tempDir(t)
			dir := tc.build(t, root)
			want := gitDirOf(t, dir)
			repo, err := Discover(dir)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if repo != nil {
				got = repo.GitDir
				if repo.Bare != tc.bare {
					t.Errorf("bare %v, want %v", repo.Bare, tc.bare)
				}
			}
			if got != want {
				t.Errorf("Discover(%s) = %q, git uses %q", dir, got, want)
			}
		})
	}
}

// bareIn builds a repository with sub/ inside it holding HEAD (as given),
// objects/ and refs/, and returns sub.
func bareIn(head string) func(t *testing.T, root string) string {
	return func(t *testing.T, root string) string {
		git(t, root, "init", "-q")
		write(t, root+"/sub/HEAD", head)
		write(t, root+"/sub/objects/x", "")
		write(t, root+"/sub/refs/x", "")
		return root + "/sub"
	}
}

func TestDiscoverRefusesWhatGitRefuses(t *testing.T) {
	root := tempDir(t)
	write(t, root+"/p/.git", "gitdir: nowhere\n")
	if repo, err := Discover(root + "/p"); err == nil {
		t.Errorf("a .git file naming no repository: got %+v, want an error (git stops there)", repo)
	}
	write(t, root+"/q/.git", "not a gitdir line\n")
	if _, err := Discover(root + "/q"); err == nil {
		t.Error("a malformed .git file: want an error")
	}
	if _, err := Discover("relative"); err == nil {
		t.Error("a relative directory: want an error")
	}
}

func TestWorktreeCommonDir(t *testing.T) {
	root := tempDir(t)
	git(t, root, "init", "-q", "-b", "main", "main")
	commit(t, root+"/main", map[string]string{"a": "1"})
	git(t, root+"/main", "worktree", "add", "-q", "../wt")
	repo, err := Discover(root + "/wt")
	if err != nil || repo == nil {
		t.Fatal(repo, err)
	}
	if repo.CommonDir != root+"/main/.git" || repo.WorkTree != root+"/wt" {
		t.Errorf("got %+v, want the common directory %s/main/.git", repo, root)
	}
}

func names(ss []Setting) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Name()+"="+s.Value)
	}
	return out
}

// TestConfigFollowsIncludes: every file git may read is read, included
// ones too (relative to the including file, ~ from home, conditional
// ones whatever the condition); files that do not exist are skipped as
// git skips them.
func TestConfigFollowsIncludes(t *testing.T) {
	root := tempDir(t)
	home := root + "/home"
	git(t, root, "init", "-q", "p")
	repo, err := Discover(root + "/p")
	if err != nil || repo == nil {
		t.Fatal(repo, err)
	}
	write(t, home+"/.gitconfig", "[user]\n\tname = a\n[include]\n\tpath = ~/inc/one\n\tpath = ~/missing\n")
	write(t, home+"/inc/one", "[includeIf \"gitdir:/nowhere/\"]\n\tpath = two\n")
	write(t, home+"/inc/two", "[core]\n\tpager = less\n")
	write(t, home+"/.config/git/config", "[alias]\n\tst = status\n")
	got, err := Config(repo, home)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"user.name=a", "core.pager=less", "alias.st=status", "core.bare=false"} {
		if !slices.Contains(names(got), want) {
			t.Errorf("settings %v lack %s", names(got), want)
		}
	}
	if _, err := Config(repo, ""); err == nil {
		t.Error("an unknown home: want an error")
	}
	write(t, home+"/.gitconfig", "[include]\n\tpath = ~/.gitconfig\n")
	if _, err := Config(repo, home); err == nil {
		t.Error("an include cycle: want an error, not an endless read")
	}
	write(t, home+"/.gitconfig", "[core\n\tpager = x\n")
	if _, err := Config(repo, home); err == nil {
		t.Error("a file that does not parse: want an error")
	}
	write(t, home+"/.gitconfig", "[include]\n\tpath = ~other/x\n")
	if _, err := Config(repo, home); err == nil {
		t.Error("another user's home: want an error")
	}
}

func secret(p string) bool {
	base := filepath.Base(p)
	return base == ".env" || base == "secrets"
}

func TestIndexAndHistoryPaths(t *testing.T) {
	root := tempDir(t)
	git(t, root, "init", "-q", "-b", "main")
	commit(t, root, map[string]string{"src/a.go": "package a\n", "conf/.env": "K=1\n"})
	git(t, root, "rm", "-q", "conf/.env")
	git(t, root, "commit", "-qm", "rm")
	commit(t, root, map[string]string{"src/b.go": "package a\n"})
	repo, err := Discover(root)
	if err != nil || repo == nil {
		t.Fatal(repo, err)
	}
	idx, err := IndexPaths(repo, secret)
	if err != nil || len(idx.Paths) != 0 {
		t.Errorf("index: %+v, %v; want no secret paths", idx, err)
	}
	hist, err := HistoryPaths(t.Context(), repo, nil, secret)
	if err != nil || !slices.Equal(hist.Paths, []string{"conf/.env"}) {
		t.Errorf("history: %+v, %v; want conf/.env", hist, err)
	}
	// A branch deleted, its commit still in the reflog.
	git(t, root, "checkout", "-q", "-b", "tmp")
	commit(t, root, map[string]string{"secrets/x": "pw\n"})
	git(t, root, "checkout", "-q", "main")
	git(t, root, "branch", "-q", "-D", "tmp")
	hist, err = HistoryPaths(t.Context(), repo, nil, secret)
	if err != nil || !slices.Contains(hist.Paths, "secrets") {
		t.Errorf("history after the branch's deletion: %+v, %v; want secrets (the HEAD reflog holds it)", hist, err)
	}
	saved := maxObjects
	maxObjects = 3
	defer func() { maxObjects = saved }()
	if _, err := HistoryPaths(t.Context(), repo, nil, secret); !errors.Is(err, ErrTooLarge) {
		t.Errorf("past the bound: %v, want ErrTooLarge", err)
	}
}

func TestNamedBlobAndSubmodules(t *testing.T) {
	root := tempDir(t)
	git(t, root, "init", "-q", "-b", "main")
	commit(t, root, map[string]string{"a.go": "package a\n"})
	blob := git(t, root, "hash-object", "-w", "a.go")
	head := git(t, root, "rev-parse", "HEAD")
	repo, err := Discover(root)
	if err != nil || repo == nil {
		t.Fatal(repo, err)
	}
	for _, n := range []string{blob, blob[:7], strings.ToUpper(blob[:9])} {
		if NamedBlob(t.Context(), repo, []string{n}) == "" {
			t.Errorf("%s names a blob: want a reason", n)
		}
	}
	if why := NamedBlob(t.Context(), repo, []string{head[:8], "HEAD", "main~1", "src/x"}); why != "" {
		t.Errorf("commits and refs: %s", why)
	}
	if _, err := HistoryPaths(t.Context(), repo, []string{blob[:8]}, secret); err == nil {
		t.Error("history from a blob's name: want an error")
	}
	git(t, root, "update-index", "--add", "--cacheinfo", "160000,"+head+",vendor/lib")
	idx, err := IndexPaths(repo, secret)
	if err != nil || !idx.Submodules {
		t.Errorf("a gitlink in the index: %+v, %v; want Submodules", idx, err)
	}
}

func TestAlternatesRefused(t *testing.T) {
	root := tempDir(t)
	git(t, root, "init", "-q")
	write(t, root+"/.git/objects/info/alternates", "/elsewhere/objects\n")
	repo, _ := Discover(root)
	if _, err := HistoryPaths(t.Context(), repo, nil, secret); err == nil {
		t.Error("alternates: want an error")
	}
	if err := os.Remove(root + "/.git/objects/info/alternates"); err != nil {
		t.Fatal(err)
	}
	if _, err := HistoryPaths(t.Context(), repo, nil, secret); err != nil {
		t.Fatalf("without alternates: %v", err)
	}
	write(t, root+"/.git/info/grafts", "")
	if _, err := HistoryPaths(t.Context(), repo, nil, secret); err == nil {
		t.Error("grafts: want an error")
	}
}

// TestConfigSeesEveryChange: parses are kept by file version, and a file
// rewritten with the same size within the same clock tick is a new
// version.
func TestConfigSeesEveryChange(t *testing.T) {
	home := tempDir(t)
	for i := range 50 {
		v := string(rune('a' + i%26))
		write(t, home+"/.gitconfig", "[core]\n\tpager = "+v+"\n")
		got, err := Config(nil, home)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(names(got), "core.pager="+v) {
			t.Fatalf("rewrite %d: settings %v, want core.pager=%s", i, names(got), v)
		}
	}
}

// TestHistoryRootsAndWholePaths: ORIG_HEAD and the other pseudo-refs are
// places a revision may start from, and picks see whole paths (a
// credential store of several components, none secret alone).
func TestHistoryRootsAndWholePaths(t *testing.T) {
	root := tempDir(t)
	git(t, root, "init", "-q", "-b", "main")
	commit(t, root, map[string]string{"a.go": "package a\n"})
	commit(t, root, map[string]string{"tools/gh/hosts.yml": "token\n"})
	git(t, root, "reset", "-q", "--hard", "HEAD~1")
	git(t, root, "reflog", "expire", "--expire=now", "--all")
	repo, err := Discover(root)
	if err != nil || repo == nil {
		t.Fatal(repo, err)
	}
	whole := func(p string) bool { return p == "tools/gh/hosts.yml" }
	m, err := HistoryPaths(t.Context(), repo, nil, whole)
	if err != nil || !slices.Equal(m.Paths, []string{"tools/gh/hosts.yml"}) {
		t.Errorf("history through ORIG_HEAD, judged on whole paths: %+v, %v", m, err)
	}
}

func TestConfigRefusesWhatGcfgReadsOtherwise(t *testing.T) {
	home := tempDir(t)
	for name, body := range map[string]string{
		"continuation":     "[include]\n\tpath = no\\\ntes.cfg\n",
		"carriage return":  "[core]\r\n\tbare = false\r\n",
		"prefix include":   "[include]\n\tpath = %(prefix)/etc/x\n",
		"control in value": "[core]\n\tbare = \"a\\bb\"\n",
	} {
		write(t, home+"/.gitconfig", body)
		if got, err := Config(nil, home); err == nil {
			t.Errorf("%s: settings %v, want an error", name, names(got))
		}
	}
}

func TestRefsNameBlob(t *testing.T) {
	root := tempDir(t)
	git(t, root, "init", "-q", "-b", "main")
	commit(t, root, map[string]string{"a.go": "package a\n"})
	repo, _ := Discover(root)
	if why := RefsNameBlob(t.Context(), repo); why != "" {
		t.Fatalf("commits only: %s", why)
	}
	blob := git(t, root, "hash-object", "-w", "a.go")
	git(t, root, "tag", "-a", "-m", "m", "wrapped", blob)
	if RefsNameBlob(t.Context(), repo) == "" {
		t.Error("an annotated tag of a blob: want a reason")
	}
	if NamedBlob(t.Context(), repo, []string{"wrapped"}) == "" || NamedBlob(t.Context(), repo, []string{"wrapped~0"}) == "" {
		t.Error("a blob named through a tag: want a reason")
	}
	if why := NamedBlob(t.Context(), repo, []string{"main", "HEAD~0"}); why != "" {
		t.Errorf("commits by ref: %s", why)
	}
}

// TestDiscoverSeesNewRepositories: directories found plain are
// remembered, and a HEAD or .git that appears in one afterwards is found
// all the same (it changes the directory's identity).
func TestDiscoverSeesNewRepositories(t *testing.T) {
	saved := pathcheck.RacyWindow
	pathcheck.RacyWindow = 20 * time.Millisecond
	defer func() { pathcheck.RacyWindow = saved }()
	root := tempDir(t)
	dir := root + "/a/b/c"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// File times come from a coarse clock: let the directories' times
	// fall out of the racy window, so that they are remembered.
	time.Sleep(50 * time.Millisecond)
	for range 2 {
		if repo, err := Discover(dir); err != nil || repo != nil {
			t.Fatalf("no repository yet: %+v, %v", repo, err)
		}
	}
	// A bare repository appears in a remembered directory.
	write(t, root+"/a/HEAD", "ref: refs/heads/main\n")
	for _, d := range []string{"objects", "refs"} {
		if err := os.Mkdir(root+"/a/"+d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	repo, err := Discover(dir)
	if err != nil || repo == nil || repo.GitDir != root+"/a" {
		t.Errorf("after a HEAD appeared in %s/a: %+v, %v; want that bare repository", root, repo, err)
	}
}

// TestDiscoverSeesChangedRepositories: a repository directory found
// valid is remembered by its identity and its HEAD's; a HEAD rewritten in
// place into one that is no ref unmakes the repository all the same.
func TestDiscoverSeesChangedRepositories(t *testing.T) {
	saved := pathcheck.RacyWindow
	pathcheck.RacyWindow = 20 * time.Millisecond
	defer func() { pathcheck.RacyWindow = saved }()
	root := tempDir(t)
	if err := os.MkdirAll(root+"/p", 0o755); err != nil {
		t.Fatal(err)
	}
	git(t, root, "init", "-q", "--bare", "p/r.git")
	time.Sleep(50 * time.Millisecond) // out of the racy window: remembered
	for range 2 {
		if repo, err := Discover(root + "/p/r.git"); err != nil || repo == nil {
			t.Fatalf("a bare repository: %+v, %v", repo, err)
		}
	}
	// In place, same size: only HEAD's own identity tells.
	f, err := os.OpenFile(root+"/p/r.git/HEAD", os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(root + "/p/r.git/HEAD")
	if _, err := f.WriteAt([]byte(strings.Repeat("x", len(b))), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if repo, err := Discover(root + "/p/r.git"); err != nil || repo != nil {
		t.Errorf("HEAD no longer a ref: %+v, %v; want no repository", repo, err)
	}
	if _, err := Discover(root + "/missing"); !errors.Is(err, ErrNoDirectory) {
		t.Errorf("a directory that is not there: %v, want ErrNoDirectory", err)
	}
}

// TestRefFilesBounded: roots read past the bound on ref files are not
// known, so the walk says so rather than walking from some of them.
func TestRefFilesBounded(t *testing.T) {
	root := tempDir(t)
	git(t, root, "init", "-q", "-b", "main")
	commit(t, root, map[string]string{"a.go": "package a\n"})
	repo, _ := Discover(root)
	line := strings.Repeat("0", 40) + "\t\tbranch 'x' of https://example.com/r\n"
	write(t, root+"/.git/FETCH_HEAD", strings.Repeat(line, maxReflogBytes/len(line)+1))
	if _, err := HistoryPaths(t.Context(), repo, nil, secret); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a FETCH_HEAD past the bound: %v, want ErrTooLarge", err)
	}
	if why := RefsNameBlob(t.Context(), repo); why == "" {
		t.Error("RefsNameBlob with a FETCH_HEAD past the bound: no reason")
	}
}

// TestHistoryPathBytesBounded: the paths a walk builds cost memory in
// every tree they are kept for; past the bound the walk stops.
func TestHistoryPathBytesBounded(t *testing.T) {
	root := tempDir(t)
	git(t, root, "init", "-q", "-b", "main")
	commit(t, root, map[string]string{strings.Repeat("deep-directory-name/", 20) + ".env": "K=1\n"})
	repo, _ := Discover(root)
	if _, err := HistoryPaths(t.Context(), repo, nil, secret); err != nil {
		t.Fatalf("within the bound: %v", err)
	}
	saved := maxPathBytes
	maxPathBytes = 200
	defer func() { maxPathBytes = saved }()
	if _, err := HistoryPaths(t.Context(), repo, nil, secret); !errors.Is(err, ErrTooLarge) {
		t.Errorf("past the bound on path bytes: %v, want ErrTooLarge", err)
	}
}

// TestFIFOsAreRefusedNotWaitedOn: a FIFO where git reads a file (HEAD, a
// .git file, a config file or include, a pseudo-ref) would hold a reader
// in its open; each is refused at once.
func TestFIFOsAreRefusedNotWaitedOn(t *testing.T) {
	root := tempDir(t)
	git(t, root, "init", "-q", "-b", "main", "r")
	commit(t, root+"/r", map[string]string{"a.go": "package a\n"})
	fifo := func(p string) {
		t.Helper()
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A .git file that is a FIFO.
	if err := os.MkdirAll(root+"/p", 0o755); err != nil {
		t.Fatal(err)
	}
	// A .git that is a FIFO is passed over, as git passes over any
	// .git that is neither file nor directory, and never opened.
	fifo(root + "/p/.git")
	if repo, err := Discover(root + "/p"); err != nil || repo != nil {
		t.Errorf("a .git FIFO: %+v, %v; want no repository", repo, err)
	}
	// A commondir that is a FIFO.
	write(t, root+"/q/HEAD", "ref: refs/heads/main\n")
	fifo(root + "/q/commondir")
	if _, err := Discover(root + "/q"); err == nil {
		t.Error("a commondir FIFO: want an error")
	}
	repo, err := Discover(root + "/r")
	if err != nil || repo == nil {
		t.Fatal(repo, err)
	}
	// An include that is a FIFO.
	home := root + "/home"
	write(t, home+"/.gitconfig", "[include]\n\tpath = ~/fifo\n")
	fifo(home + "/fifo")
	if _, err := Config(repo, home); err == nil {
		t.Error("an include that is a FIFO: want an error")
	}
	// A pseudo-ref that is a FIFO is no regular file: not read.
	fifo(root + "/r/.git/ORIG_HEAD")
	if _, err := HistoryPaths(t.Context(), repo, nil, secret); err != nil {
		t.Errorf("a pseudo-ref FIFO: %v", err)
	}
}
