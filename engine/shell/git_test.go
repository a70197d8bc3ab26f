package shell

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestGitFormats(t *testing.T) {
	ok := []string{
		"git log --format='%h %an %s'", "git log --pretty=format:'%H %ad' --date=short", "git log --pretty=oneline", "git log --pretty",
		"git log --format=%ai -1", "git show -s --format='%C(auto)%h%d %s %Cgreen(%cr)%Creset'", "git log --format='%<(20,trunc)%s|%w(72,2,4)%b'",
		"git log --format='%x09%H%x00'", "git log --format='%(describe) %(trailers:key=Signed-off-by)'", "git log --format=tformat:'%+b'",
		"git for-each-ref --format='%(refname:short) %(objectname)' refs/heads", "git branch --format='%(refname:short)'",
		"git tag -l --format='%(refname) %(*objectname)'", "git ls-files --format='%(objectname) %(path)'",
		"git ls-tree --format='%(objectmode) %(path)' HEAD", "git cat-file --batch-check='%(objectname) %(objecttype)'",
		"git shortlog -sn --format='%an'", "git log --format=fuller", "git log --pretty=reference -3", "git log --format='%%G? is literal'",
		"git stash list --format='%gd %s'", "git reflog show --format='%gd %gs'", "git log --format='%Cred%h%Creset %Cblue%an'",
		"git for-each-ref --format='%(if)%(upstream)%(then)%(upstream:short)%(end)'", "git log --format=%B -1",
	}
	bad := []string{
		"git log --format='%G?'", "git log --format='%GS %GK'", "git log --pretty=format:%GG", "git log --format=%+GG",
		"git log --pretty=evil", "git log --format=myalias", "git show --format='%h %GF'", "git log --format='%(foo)'",
		"git for-each-ref --format='%(signature)'", "git for-each-ref --format='%(signature:grade)'",
		"git branch --format='%(unknownatom)'", "git log --show-signature", "git log --format='%Cbogus'", "git rev-list --format='%GT' HEAD",
		"git shortlog --format='%GS'", "git stash list --format='%G?'", "git reflog show --format='%GK'", "git log --format='% GP'",
		"git log --format='%-G?'", "git log --format='%<(5)%G?'", "git tag --format='%(signature)'", "git log --format='%'",
		"git cat-file --batch-check='%(signature)'", "git log --format='%(describe'",
	}
	for _, line := range ok {
		if a := Analyze(line); !a.ReadOnly {
			t.Errorf("Analyze(%q): not read-only (%s), want read-only", line, a.Reason)
		}
	}
	for _, line := range bad {
		if a := Analyze(line); a.ReadOnly {
			t.Errorf("Analyze(%q): read-only, want not", line)
		}
	}
}

// TestGitFormatsAgainstGit runs git log with every generated format the
// checker accepts, in a repository whose commit carries a signature and
// whose gpg.program creates a file: the file appearing means an accepted
// format verified the signature.
func TestGitFormatsAgainstGit(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git found")
	}
	dir := t.TempDir()
	run := func(stdin string, args ...string) string {
		t.Helper()
		cmd := exec.Command(git, args...)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1"}
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %s: %v", strings.Join(args, " "), err)
		}
		return strings.TrimSpace(string(out))
	}
	run("", "init", "-q", ".")
	tree := run("", "hash-object", "-t", "tree", "-w", "--stdin")
	commit := run("tree "+tree+"\nauthor A <a@b> 0 +0000\ncommitter A <a@b> 0 +0000\n"+
		"gpgsig -----BEGIN PGP SIGNATURE-----\n \n xx\n -----END PGP SIGNATURE-----\n\nmsg\n",
		"hash-object", "-t", "commit", "-w", "--stdin")
	run("", "update-ref", "refs/heads/main", commit)
	run("", "symbolic-ref", "HEAD", "refs/heads/main")
	pwned := filepath.Join(dir, "PWNED")
	gpg := filepath.Join(dir, "fakegpg")
	if err := os.WriteFile(gpg, []byte("#!/bin/sh\ntouch "+pwned+"\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	logWith := func(format string) bool {
		cmd := exec.Command(git, "-c", "gpg.program="+gpg, "log", "--format="+format)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1"}
		_ = cmd.Run()
		_, err := os.Stat(pwned)
		os.Remove(pwned)
		return err == nil
	}
	if !logWith("%G?") {
		t.Skip("this git does not run gpg.program for signature placeholders")
	}
	pieces := []string{"%G?", "%GG", "%GS", "%GK", "%GF", "%GP", "%GT", "%+G?", "%-GS", "% GK", "%%G?", "%x25G?", "%C(auto)",
		"%<(5)", "%>>(3,ltrunc)", "%w(20)", "%h", "%an", "%s", "%(describe)", "%(trailers)", "%n", "%%", "G?", "%Cred", "%Creset",
		"%(decorate)", "%gd", "%x", "%(", ")", "%C(", "%<|(4)", "%G", "%"}
	r := rand.New(rand.NewPCG(8, 9))
	accepted := 0
	for range 300 {
		var b strings.Builder
		for range 1 + r.IntN(4) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		format := b.String()
		if gitPrettyFormat(format) != "" {
			continue
		}
		accepted++
		if logWith(format) {
			t.Errorf("format %q: accepted, but git ran gpg.program", format)
		}
	}
	t.Logf("%d formats accepted and run", accepted)
}

// TestGitGrepPathspecs: git grep's pathspecs are read with their magic;
// an exclude keeps every other file, top may reach above the project,
// unknown magic is refused, a glob or icase one is the whole tree, and
// the index (--cached) and submodules are not on disk to judge.
func TestGitGrepPathspecs(t *testing.T) {
	tests := []struct {
		line string
		want []Tree // nil: refused
	}{
		{"git grep -n -e TODO -- src", []Tree{{Path: "src", Hidden: true, SkipDirs: []string{".git"}}}},
		{"git grep -n -e TODO -- ':(literal)src'", []Tree{{Path: "src", Hidden: true, SkipDirs: []string{".git"}}}},
		{"git grep -n -e TODO -- ':(literal)*.go'", []Tree{{Path: "*.go", Hidden: true, SkipDirs: []string{".git"}}}},
		{"git grep -n -e TODO -- ':(icase)src'", []Tree{{Path: ".", Hidden: true, SkipDirs: []string{".git"}}}},
		{"git grep -n -e TODO -- ':(glob)src/*.go'", []Tree{{Path: ".", Hidden: true, SkipDirs: []string{".git"}}}},
		{"git --icase-pathspecs grep -n -e TODO -- src", []Tree{{Path: ".", Hidden: true, SkipDirs: []string{".git"}}}},
		{`git grep -n -e TODO -- 'sr\c'`, []Tree{{Path: ".", Hidden: true, SkipDirs: []string{".git"}}}},
		{"git grep -n -e TODO -- 'x:src'", []Tree{{Path: "x:src", Hidden: true, SkipDirs: []string{".git"}}}},
		{"git grep -n -e TODO -- ':.env'", []Tree{{Path: ".env", Hidden: true, SkipDirs: []string{".git"}}}},
		{"git grep -n -e TODO -- ':(literal)'", []Tree{{Path: ".", Hidden: true, SkipDirs: []string{".git"}}}},
		{"git grep --untracked -e SECRET -- ':!src'", nil},
		{"git grep -n -e API_KEY -- ':(exclude)docs'", nil},
		{"git grep -e BEGIN -- ':^test'", nil},
		{"git grep -e BEGIN -- src ':(exclude,literal)src/x'", nil},
		{"git grep -e BEGIN -- ':/!src'", nil},
		{"git grep -e x -- ':/src'", nil},
		{"git grep -e x -- ':(top)src'", nil},
		{"git grep -e x -- ':(attr:secret)'", nil},
		{"git grep -e x -- ':(prefix:0)src'", nil},
		{"git grep -e x -- ':(foo)src'", nil},
		{"git grep -e x -- ':(TOP)src'", nil},
		{"git grep -e x -- ':(literal'", nil},
		{"git grep --cached -e API_KEY", nil},
		{"git grep --cached -e API_KEY -- src", nil},
		{"git grep --recurse-submodules -e x -- src", nil},
	}
	for _, tt := range tests {
		a := Analyze(tt.line)
		switch {
		case tt.want == nil && a.ReadOnly:
			t.Errorf("Analyze(%q): read-only (trees %+v), want not", tt.line, a.Trees)
		case tt.want != nil && !a.ReadOnly:
			t.Errorf("Analyze(%q): not read-only (%s)", tt.line, a.Reason)
		case tt.want != nil && !reflect.DeepEqual(a.Trees, tt.want):
			t.Errorf("Analyze(%q).Trees = %+v, want %+v", tt.line, a.Trees, tt.want)
		}
	}
	// The object forms name a staged or committed file: each reading is
	// a read.
	for line, want := range map[string]string{"git show :0:.env": ".env", "git show HEAD:.env": ".env", "git show :.env": ".env"} {
		if a := Analyze(line); !slices.Contains(a.Reads, want) {
			t.Errorf("Analyze(%q).Reads = %q, want %q among them", line, a.Reads, want)
		}
	}
}

// TestPathspecsAgainstGit checks parsePathspec against git ls-files in a
// repository: what it reads as a plain path (no exclude, glob or icase)
// lists only files below that path, an exclude lists files outside it,
// and git refuses the magic words it refuses.
func TestPathspecsAgainstGit(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git found")
	}
	dir := t.TempDir()
	run := func(args ...string) (string, error) {
		cmd := exec.Command(git, args...)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1"}
		out, err := cmd.Output()
		return string(out), err
	}
	for _, f := range []string{"src/a.go", "docs/b.md", ".env", "x:src/c", "test/k.pem"} {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := run("init", "-q"); err != nil {
		t.Skip("git init failed")
	}
	if _, err := run("add", "-A"); err != nil {
		t.Fatal(err)
	}
	for _, spec := range []string{"src", ":(literal)src", ":src", "::src", ":.env", "x:src", ":!src", ":^src", ":(exclude)docs",
		":!:src", ":(exclude,literal)src", ":/src", ":(top)docs", ":(icase)SRC"} {
		ps, why := parsePathspec(spec)
		if why != "" {
			t.Errorf("parsePathspec(%q): %s", spec, why)
			continue
		}
		out, err := run("ls-files", "--", spec)
		if err != nil {
			t.Errorf("git ls-files -- %q: %v", spec, err)
			continue
		}
		for _, f := range strings.Fields(out) {
			under := f == ps.path || strings.HasPrefix(f, ps.path+"/")
			switch {
			case ps.exclude && under:
				t.Errorf("%q: git lists %s, below the path %q it excludes", spec, f, ps.path)
			case !ps.exclude && !ps.icase && !ps.glob && !under:
				t.Errorf("%q: git lists %s, not below the path %q", spec, f, ps.path)
			}
		}
	}
	for _, spec := range []string{":(foo)src", ":(TOP)src", ":(literal"} {
		if _, why := parsePathspec(spec); why == "" {
			t.Errorf("parsePathspec(%q): accepted", spec)
		}
		if _, err := run("ls-files", "--", spec); err == nil {
			t.Errorf("git ls-files -- %q: accepted; the refusal may be stale", spec)
		}
	}
}

// TestGitDiffOptionsClassified: every diff option git commands take is
// known to print patches (gitPatchOpts: git's diff-options say it implies
// --patch), to replace them (gitNoPatchOpts), or only to shape what is
// printed: an option added to gitDiffOpts must be placed, so that none
// makes git log print file contents unnoticed.
func TestGitDiffOptionsClassified(t *testing.T) {
	shaping := strings.Fields("z w b a R D t M C B X l S G O I output-indicator-new output-indicator-old " +
		"output-indicator-context indent-heuristic no-indent-heuristic minimal patience histogram anchored diff-algorithm " +
		"stat-width stat-name-width stat-graph-width stat-count cumulative submodule color no-color color-moved " +
		"no-color-moved color-moved-ws no-color-moved-ws no-renames rename-empty no-rename-empty ws-error-highlight " +
		"full-index abbrev no-abbrev break-rewrites find-renames find-copies find-copies-harder irreversible-delete " +
		"diff-filter find-object pickaxe-all pickaxe-regex skip-to rotate-to relative no-relative text ignore-cr-at-eol " +
		"ignore-space-at-eol ignore-space-change ignore-all-space ignore-blank-lines ignore-matching-lines exit-code " +
		"no-ext-diff no-textconv ignore-submodules src-prefix dst-prefix no-prefix default-prefix line-prefix " +
		"ita-invisible-in-index ita-visible-in-index #")
	for _, o := range strings.Fields(gitDiffOpts) {
		name := strings.TrimRight(o, ":~")
		if !slices.Contains(gitPatchOpts, name) && !slices.Contains(gitNoPatchOpts, name) && !slices.Contains(shaping, name) {
			t.Errorf("diff option %q is not classified: does it make git log print patches?", name)
		}
	}
	// And the classification holds in the analysis: log prints no file
	// content unless a patch option says so.
	for _, line := range []string{"git log --unified=1", "git log --inter-hunk-context=2", "git log -W", "git log --binary"} {
		a := Analyze(line)
		if len(a.Git) != 1 || a.Git[0].Scope != GitHistory {
			t.Errorf("Analyze(%q).Git = %+v, want history content", line, a.Git)
		}
	}
}
