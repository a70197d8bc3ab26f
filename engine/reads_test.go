package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/engine/shell"
)

// TestReadsJudgedOnTheFileSystem covers what only the file system shows:
// globs expanded the way bash expands them (.. after a link included),
// and the trees recursive searches read.
func TestReadsJudgedOnTheFileSystem(t *testing.T) {
	base := t.TempDir()
	project := filepath.Join(base, "project")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{"project/src/pkg", "project/conf", "project/deep/a/b", "outside/x/y"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for f, body := range map[string]string{
		"project/src/main.go": "package main", "project/deep/a/b/in.go": "package b", "project/conf/.env": "TOKEN=x", "project/conf/app.yaml": "a: 1",
		"outside/x/notes.go": "private", "outside/x/y/z.txt": "z",
	} {
		if err := os.WriteFile(filepath.Join(base, f), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// deep/a/b/up leads outside; up/.. is outside/x to bash, not deep/a/b.
	if err := os.Symlink(filepath.Join(outside, "x", "y"), filepath.Join(project, "deep", "a", "b", "up")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(project, "src", "pkg", "ext")); err != nil {
		t.Fatal(err)
	}
	e := newEngine(t, nil, nil)
	check := func(cmd string) Result {
		return mustCheck(t, e, &Request{Tool: bashCmd(cmd), WorkingDirectory: project})
	}
	for cmd, want := range map[string]string{
		"cat deep/a/b/up/../*.go": "outside the read roots",
		"grep -r TOKEN conf":      "conf/.env",
		"grep -r TOKEN .":         "may hold secrets",
		"grep -R x src":           "following links",
		"rg -L x src":             "following links",
		"grep -r x s*c":           "glob of trees",
		"rg --hidden TOKEN conf":  "conf/.env",
	} {
		if res := check(cmd); res.Decision == Allow || !strings.Contains(res.Reason, want) {
			t.Errorf("%s: %s %q, want not allowed, naming %q", cmd, res.Decision, res.Reason, want)
		}
	}
	for _, cmd := range []string{"cat src/*.go", "grep -r main src", "rg TOKEN conf", "grep -r x src/pkg/../main.go", "ls deep/a/b"} {
		if res := check(cmd); res.Decision != Allow {
			t.Errorf("%s: %s %q, want allowed", cmd, res.Decision, res.Reason)
		}
	}
	// The Grep tool is ripgrep with its defaults: hidden files are skipped.
	if res := mustCheck(t, e, &Request{Tool: tool("Grep", map[string]any{"pattern": "TOKEN", "path": "conf"}), WorkingDirectory: project}); res.Decision != Allow {
		t.Errorf("Grep conf: %s %q, want allowed", res.Decision, res.Reason)
	}
}

// TestShellTreesSkipAndKeep judges the trees shell searches read with
// what they skip (grep --exclude-dir, rg -g '!NAME') and the file names
// they keep (grep --include): only what the program surely leaves out is
// left unjudged, and a repository's .git is never searched into.
func TestShellTreesSkipAndKeep(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	project := filepath.Join(base, "project")
	for f, body := range map[string]string{
		".git/config": "[remote \"o\"]\n\turl = https://x:TOKEN@host/r", ".git/HEAD": "ref: refs/heads/main",
		"node_modules/pkg/.env": "K=v", "src/a.js": "a", "src/b.go": "b", "dist/secrets/k.rst": "k", "conf/.env": "K=v",
		"conf/app.yaml": "a: 1",
	} {
		p := filepath.Join(project, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rs := &readScope{ctx: t.Context(), dirs: []string{project}}
	judge := func(cmd string) string {
		a := shell.Analyze(cmd)
		if !a.ReadOnly {
			return "not read-only: " + a.Reason
		}
		for _, tr := range a.Trees {
			if why := rs.judgeShellTree(project, tr); why != "" {
				return why
			}
		}
		return ""
	}
	const skipRest = " --exclude-dir=node_modules --exclude-dir=conf --exclude-dir=dist"
	for cmd, want := range map[string]string{
		"grep -r x .":                                        "/.git",
		"grep -r x --exclude-dir=.git .":                     ".env",
		"grep -r x --exclude-dir=.GIT" + skipRest + " .":     "/.git",
		"grep -r x --exclude-dir='[.]git'" + skipRest + " .": "/.git",
		"grep -r x --exclude-dir='\\.git'" + skipRest + " .": "/.git",
		"grep -r x --exclude-dir=.git/x" + skipRest + " .":   "/.git",
		// The root is not skipped, though grep would skip it.
		"grep -r x --exclude-dir=conf conf":                 "conf/.env",
		"grep -r x --include='*.rst' .":                     "dist/secrets/k.rst",
		"grep -r x --include=HEAD .":                        ".git/HEAD",
		"grep -r x --include='*.txt' .":                     "picks secret files",
		"grep -r x --include=config .":                      ".git/config",
		"grep -r x --include='*' .":                         "picks secret files",
		"grep -r x --include='*.js' --exclude='*.min.js' .": "may hold secrets",
		"grep -r x --include='[.]env' .":                    "picks secret files",
		"grep -r x --include='*.js' .git":                   "inside a repository's .git",
		"grep -r x .git":                                    "inside a repository's .git",
		"grep -r x src/../.git":                             "inside a repository's .git",
		"grep -r x ./.git/":                                 "inside a repository's .git",
		"grep -r x .git/config":                             "credential store",
		"rg --hidden x -g '!.git'":                          ".env",
		// A whitelist searches what it keeps, in .git too.
		"rg --hidden x -g '!.git' -g '!node_modules' -g '!conf' -g '!dist' -g config": ".git/config",
	} {
		if why := judge(cmd); !strings.Contains(why, want) {
			t.Errorf("%s: %q, want a refusal naming %q", cmd, why, want)
		}
	}
	for _, cmd := range []string{
		"grep -r x --exclude-dir=.git" + skipRest + " .",
		"grep -r x --exclude-dir=.git/" + skipRest + " .",
		"grep -r x --exclude-dir .git --exclude-dir node_modules --exclude-dir=conf --exclude-dir=dist .",
		"grep -r x --exclude-dir='.g?t'" + skipRest + " .",
		"grep -r x --exclude-dir='.g*'" + skipRest + " .",
		"grep -rn x --include='*.js' --include='*.go' .",
		"grep -rn x --include='*.yaml' --exclude-dir=.git .",
		"rg --hidden x -g '!.git' -g '!node_modules' -g '!conf' -g '!dist/'",
		"rg x src",
		"rg --hidden x -g '!.git' -g '!node_modules' -g '!conf' -g '!dist' -g '*.go'",
		// A file in .git is a read like any other: .git/config is a
		// credential store, .git/HEAD is not.
		"grep -r main .git/HEAD",
	} {
		if why := judge(cmd); why != "" {
			t.Errorf("%s: %q, want allowed", cmd, why)
		}
	}
}

// TestGitReadsOfFiles: git commands that print a file, or its lines in
// error messages, read it.
func TestGitReadsOfFiles(t *testing.T) {
	e := newHomeEngine(t, nil, nil)
	project := t.TempDir()
	check := func(cmd string) Result {
		return mustCheck(t, e, &Request{Tool: bashCmd(cmd), WorkingDirectory: project})
	}
	for _, cmd := range []string{
		"git blame .env", "git blame HEAD -- config/.env", "git blame -S .env main.go", "git blame --ignore-revs-file=.env main.go",
		"git blame --ignore-revs-file .env main.go", "git log -L1,5:.env", "git log -L '/API_KEY/,+2:config/.env'",
		"git log -L :main:.env", "git show -L1,2:.env HEAD",
		"grep -o -f .env x.txt", "rg -f config/.env x.txt", "git grep -f .env", "grep -r --file .env x src",
		// A .git the server does not see may be the agent's.
		"grep -r x .git", "rg --hidden x .git/", "grep -r x sub/.git/refs",
	} {
		if res := check(cmd); res.Decision == Allow {
			t.Errorf("%s: allowed, want not", cmd)
		}
	}
	for _, cmd := range []string{"git blame main.go", "git blame -L 10,20 main.go", "git log -L1,5:main.go", "git log -L :main:main.go"} {
		if res := check(cmd); res.Decision != Allow {
			t.Errorf("%s: %s %q, want allowed", cmd, res.Decision, res.Reason)
		}
	}
}

// TestFindTrees judges the trees of what find hands to -exec and to xargs
// readers: the files below its start points, with the names its -name
// globs keep.
func TestFindTrees(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	project := filepath.Join(base, "project")
	for f, body := range map[string]string{
		".git/config": "[remote \"o\"]\n\turl = https://x:TOKEN@host/r", "docs/a.md": "a", "docs/b.md": "b", "conf/.env": "K=v",
		"conf/app.yaml": "a: 1", "src/main.go": "package main", "links/x.md": "x",
	} {
		p := filepath.Join(project, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range []string{"host", "z.md"} {
		if err := os.Symlink("/etc/hostname", filepath.Join(project, "links", l)); err != nil {
			t.Fatal(err)
		}
	}
	rs := &readScope{ctx: t.Context(), dirs: []string{project}}
	judge := func(cmd string) string {
		a := shell.Analyze(cmd)
		if !a.ReadOnly {
			return "not read-only: " + a.Reason
		}
		for _, r := range a.Reads {
			if why := rs.judge(project, r); why != "" {
				return why
			}
		}
		for _, tr := range a.Trees {
			if why := rs.judgeShellTree(project, tr); why != "" {
				return why
			}
		}
		return ""
	}
	for cmd, want := range map[string]string{
		"find conf -exec cat {} \\;":                                    "conf/.env",
		"find . -name '*.md' -exec cat {} \\;":                          "links/z.md", // without -type f, the links it keeps count
		"find . -type f -name config -exec cat {} \\;":                  ".git/config",
		"find . -type f -name config -print0 | xargs -0 cat":            ".git/config",
		"find . -type f -name '*.yaml' -print0 | xargs -0 cat":          "",
		"find links -name '*' -exec cat {} +":                           "following links",
		"find links -exec cat {} +":                                     "following links",
		"find -L links -type f -name '*.md' -exec cat {} +":             "following links",
		"find -L . -name '*.yaml' -exec cat {} +":                       "following links",
		"find . -type f -name '*.md' -exec grep -r x {} +":              "/.git",
		"find .git -name HEAD -exec cat {} \\;":                         "inside a repository's .git",
		"find . -type f -name '.env' -exec cat {} \\;":                  ".env",
		"find conf -type f -name '*' -exec cat {} \\;":                  ".env",
		"find . -type f -name '*.md' -print0 -o -print0 | xargs -0 cat": "xargs",
	} {
		why := judge(cmd)
		if want == "" {
			// The row is about what is left: app.yaml is no secret.
			if why != "" {
				t.Errorf("%s: %q, want allowed", cmd, why)
			}
			continue
		}
		if !strings.Contains(why, want) {
			t.Errorf("%s: %q, want a refusal naming %q", cmd, why, want)
		}
	}
	for _, cmd := range []string{
		"find docs -name '*.md' -exec cat {} \\;", "find . -type f -name '*.md' -exec cat {} \\;", "find . -name '*.md' -type f -exec grep -l a {} +",
		"find . -exec basename {} \\;", "find src docs -type f -exec wc -l {} +", "find links -type f -name '*.md' -exec cat {} +",
		"find . -name '*.yaml' -exec cat {} \\;", "find links -name 'x*' -exec cat {} +",
		"find . -type f -name '*.go' -print0 | xargs -0 grep -n main", "find docs -name x -exec echo \"=== {} ===\" \\; -exec ls -la {} \\;",
	} {
		if why := judge(cmd); why != "" {
			t.Errorf("%s: %q, want allowed", cmd, why)
		}
	}
	// Through the engine: what find lists from a tree with a repository,
	// a .env or a link is not printed unasked.
	e := newEngine(t, nil, nil)
	for _, cmd := range []string{
		"find . -type f -name config -print0 | xargs -0 cat", "find . -type f -print0 -name '*.go' | xargs -0 cat",
		"find conf -exec cat {} \\;", "find links -exec cat {} +", "find . -name '*.md' -exec cat {} \\;", "find . -name '*.env' -exec cat {} +",
	} {
		if res := mustCheck(t, e, &Request{Tool: bashCmd(cmd), WorkingDirectory: project}); res.Decision == Allow {
			t.Errorf("%s: allowed, want not", cmd)
		}
	}
	for _, cmd := range []string{"find docs -name '*.md' -exec cat {} \\;", "find src -exec grep -l main {} +", "find . -name '*.png' -exec basename {} \\;"} {
		if res := mustCheck(t, e, &Request{Tool: bashCmd(cmd), WorkingDirectory: project}); res.Decision != Allow {
			t.Errorf("%s: %s %q, want allowed", cmd, res.Decision, res.Reason)
		}
	}
}

// TestRipgrepWhitelists: ripgrep (rg, the Grep tool) skips hidden files
// and directories unless a whitelist keeps them: a glob that is not an
// exclusion, a type, or an ignore file rule starting with "!" (in the
// tree, above it, in .git/info/exclude). Then the hidden entries it may
// read count: only the files a glob keeps, when it says which.
func TestRipgrepWhitelists(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	project := filepath.Join(base, "project")
	for f, body := range map[string]string{
		".env": "K=v", ".git/config": "[remote \"o\"]\n\turl = https://x:TOKEN@host/r", "src/a.go": "a", "src/.b.go": "b",
		".gitignore": "node_modules\n", "docs/x.md": "x", "docs/.ignore": "# none\n",
	} {
		writeFile(t, filepath.Join(project, f), body)
	}
	e := newEngine(t, nil, nil)
	check := func(name string, in map[string]any) Result {
		return mustCheck(t, e, &Request{Tool: tool(name, in), WorkingDirectory: project, Mode: ModeAuto})
	}
	bash := func(cmd string) Result { return check("Bash", map[string]any{"command": cmd}) }
	refused := func(what string, res Result) {
		t.Helper()
		if res.Decision == Allow {
			t.Errorf("%s: allowed by %s (%s)", what, res.Source, res.Reason)
		}
	}
	allowed := func(what string, res Result) {
		t.Helper()
		if res.Decision != Allow {
			t.Errorf("%s: %s by %s (%s), want allow", what, res.Decision, res.Source, res.Reason)
		}
	}
	for _, cmd := range []string{"rg x", "rg -g '*.go' x", "rg -g 'src/**/*.{go,md}' x", "rg -g '!vendor' x", "rg -T go x", "rg x docs",
		"rg -t go x", "rg --type=md x docs", "rg -tgo -g '*.md' x"} {
		allowed(cmd, bash(cmd))
	}
	for _, cmd := range []string{"rg -t mytype x", "rg -t go -g config x", "rg --type-clear go -t go x", "rg --type-add 'g:*.go' -t g x", "rg --iglob '*.go' x", "rg -g 'docs/' x",
		"rg -g config x", "rg --ignore-file docs/.ignore x"} {
		refused(cmd, bash(cmd))
	}
	for _, in := range []map[string]any{{"pattern": "x"}, {"pattern": "x", "glob": "*.go"}, {"pattern": "x", "glob": "*.{ts,tsx}"},
		{"pattern": "x", "glob": "src/**/*.go"}, {"pattern": "x", "glob": "!*.md"}, {"pattern": "x", "path": "docs", "type": "md"},
		{"pattern": "x", "type": "go"}, {"pattern": "x", "type": "js", "glob": "*.go"}} {
		allowed(fmt.Sprint(in), check("Grep", in))
	}
	for _, in := range []map[string]any{{"pattern": "x", "type": "mytype"}, {"pattern": "x", "type": "go", "glob": "config"}, {"pattern": "x", "glob": "config"},
		{"pattern": "x", "glob": "*.go config"}, {"pattern": "x", "glob": "*.go,config"}, {"pattern": "x", "glob": "docs/"}} {
		refused(fmt.Sprint(in), check("Grep", in))
	}
	// An ignore file's "!" rule whitelists, wherever it applies from.
	for _, f := range []string{"docs/.ignore", ".gitignore", ".git/info/exclude", "../.rgignore"} {
		p := filepath.Join(project, f)
		old, _ := os.ReadFile(p)
		writeFile(t, p, "!.env\n")
		refused("rg x with a whitelist in "+f, bash("rg x"))
		refused("Grep with a whitelist in "+f, check("Grep", map[string]any{"pattern": "x"}))
		if old != nil {
			writeFile(t, p, string(old))
		} else if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	allowed("rg x after the whitelists are gone", bash("rg x"))
	if err := os.Symlink("/dev/zero", filepath.Join(project, "src", ".rgignore")); err != nil {
		t.Fatal(err)
	}
	refused("rg x with an ignore file that is no regular file", bash("rg x"))
}

// TestDiffDirectories: diff of two directories reads the files directly
// in them (hidden ones too), diff FILE DIR reads DIR/FILE's base name,
// and a directory operand inside .git is refused; diff -r reads trees.
func TestDiffDirectories(t *testing.T) {
	l := newLayout(t)
	for f, body := range map[string]string{"top/.env": "K=v", "top/a.go": "a", "keys/id_rsa": "k", "src/a.go": "a", "src/b.go": "b",
		"docs/a.go": "d", "docs/deep/.env": "K=v", "cc/config": "c", ".git/config": "[remote]"} {
		p := filepath.Join(l.app, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e := newEngine(t, nil, nil)
	check := func(cmd string) Result {
		return mustCheck(t, e, &Request{Tool: tool("Bash", map[string]any{"command": cmd}), WorkingDirectory: l.app, Mode: ModeAuto})
	}
	for _, cmd := range []string{"diff top src", "diff -q src top", "diff keys docs", "diff .git src", "diff ./.git/ src",
		"diff cc/config .git", "diff -N top src", "diff -r src docs", "diff src link"} {
		if res := check(cmd); res.Decision == Allow {
			t.Errorf("%s: allowed by %s (%s)", cmd, res.Source, res.Reason)
		}
	}
	// docs/deep is a subdirectory: diff without -r does not read it.
	for _, cmd := range []string{"diff src docs", "diff -u src/a.go src/b.go", "diff src/a.go docs", "diff -q --no-dereference src docs"} {
		if res := check(cmd); res.Decision != Allow {
			t.Errorf("%s: %s by %s (%s), want allow", cmd, res.Decision, res.Source, res.Reason)
		}
	}
}

// TestRipgrepWhitelistAboveHidden: an ignore file above the searched tree
// is read only when the tree has hidden entries, and then its whitelist
// counts as before.
func TestRipgrepWhitelistAboveHidden(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	project := filepath.Join(base, "project")
	for f, body := range map[string]string{".gitignore": "!.env\n", "lib/a.go": "a", "conf/.env": "K=v", "conf/app.yaml": "a: 1"} {
		p := filepath.Join(project, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e := newEngine(t, nil, nil)
	decide := func(name string, in map[string]any) Decision {
		return mustCheck(t, e, &Request{Tool: tool(name, in), WorkingDirectory: project, Mode: ModeAuto}).Decision
	}
	grep := func(dir string) Decision { return decide("Grep", map[string]any{"pattern": "x", "path": dir}) }
	rg := func(dir string) Decision { return decide("Bash", map[string]any{"command": "rg x " + dir}) }
	if d := grep("lib"); d != Allow {
		t.Errorf("Grep of lib, which has no hidden entry: %s, want allow", d)
	}
	if d, r := grep("conf"), rg("conf"); d == Allow || r == Allow {
		t.Errorf("searches of conf, whose .env the whitelist above keeps: Grep %s, rg %s; want no allow", d, r)
	}
	if err := os.WriteFile(filepath.Join(project, ".gitignore"), []byte("node_modules\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if d, r := grep("conf"), rg("conf"); d != Allow || r != Allow {
		t.Errorf("searches of conf without the whitelist: Grep %s, rg %s; want allow (its .env is hidden)", d, r)
	}
}

// TestReadsInToolchainRoots: in the default roots, published source,
// headers and documentation are read locally; a toolchain prefix's own
// configuration, files of no such kind and a cache's VCS clones are not,
// by Read, by shell reads and by a recursive search over a tree that
// holds one.
func TestReadsInToolchainRoots(t *testing.T) {
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	project := filepath.Join(home, "project")
	node := filepath.Join(home, ".nvm/versions/node/v20.11.0")
	mod := filepath.Join(home, "go/pkg/mod/github.com/acme/lib@v1.2.0")
	for f, body := range map[string]string{
		"project/main.go":                                               "package main",
		".nvm/versions/node/v20.11.0/etc/npmrc":                         "//registry.npmjs.org/:_authToken=x",
		".nvm/versions/node/v20.11.0/lib/node_modules/npm/package.json": "{}",
		".nvm/versions/node/v20.11.0/lib/node_modules/npm/npmrc":        "globalconfig=x",
		"go/pkg/mod/github.com/acme/lib@v1.2.0/lib.go":                  "package lib",
		"go/pkg/mod/github.com/acme/lib@v1.2.0/README.md":               "# lib",
		"go/pkg/mod/github.com/acme/clean@v1.0.0/a.go":                  "package clean",
		"go/pkg/mod/github.com/acme/lib@v1.2.0/testdata/settings.conf":  "x",
		"go/pkg/mod/cache/vcs/0a1b2c/config":                            "[remote] url = https://u:t@x",
		".pyenv/versions/venv-prod/pip.conf":                            "index-url = https://u:t@x",
	} {
		p := filepath.Join(home, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e, err := New(Config{Home: home})
	if err != nil {
		t.Fatal(err)
	}
	read := func(p string) ToolCall { return tool("Read", map[string]any{"file_path": p}) }
	sh := func(c string) ToolCall { return tool("Bash", map[string]any{"command": c}) }
	for _, tc := range []struct {
		name string
		call ToolCall
		want want
	}{
		{"module source", read(mod + "/lib.go"), allowSafe},
		{"module readme", sh("cat ~/go/pkg/mod/github.com/acme/lib@v1.2.0/README.md"), want{d: Allow, s: SourceCommandAnalysis}},
		{"global package manifest", read(node + "/lib/node_modules/npm/package.json"), allowSafe},
		{"listing a module", sh("ls " + mod), want{d: Allow, s: SourceCommandAnalysis}},
		{"search a clean module", sh("grep -rn Foo ~/go/pkg/mod/github.com/acme/clean@v1.0.0"), want{d: Allow, s: SourceCommandAnalysis}},
		{"a node version's global npmrc", read(node + "/etc/npmrc"), askNoClfWhy("outside the read roots")},
		{"the same through cat", sh("cat ~/.nvm/versions/node/v20.11.0/etc/npmrc"), askNoClfWhy("outside the read roots")},
		{"npm's builtin npmrc", read(node + "/lib/node_modules/npm/npmrc"), askNoClfWhy("not a source, header or documentation file")},
		{"a virtualenv's pip.conf", sh("head ~/.pyenv/versions/venv-prod/pip.conf"), askNoClfWhy("outside the read roots")},
		{"a private module's clone", read(home + "/go/pkg/mod/cache/vcs/0a1b2c/config"), askNoClfWhy("outside the read roots")},
		{"a config file in a module", read(mod + "/testdata/settings.conf"), askNoClfWhy("not a source, header or documentation file")},
		{"a search over a module holding one", sh("grep -rn Foo " + mod), askNoClfWhy("testdata/set")},
		{"a glob reaching one", sh("cat " + mod + "/testdata/*.conf"), askNoClfWhy("not a source, header or documentation file")},
		{"a search of the whole toolchain", sh("grep -r token ~/.nvm"), askNoClfWhy("outside the read roots")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.want.check(t, mustCheck(t, e, &Request{Tool: tc.call, WorkingDirectory: project}))
		})
	}
}

// TestGlobalExcludesFileWhitelists: ripgrep honours the user's global git
// ignore file wherever core.excludesFile puts it, so a "!" rule there
// whitelists hidden files as one in the tree does.
func TestGlobalExcludesFileWhitelists(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home, project := filepath.Join(base, "home"), filepath.Join(base, "project")
	writeFile(t, filepath.Join(project, ".env"), "K=v")
	writeFile(t, filepath.Join(project, "src/a.go"), "a")
	writeFile(t, filepath.Join(home, ".gitconfig"), "[core]\n\texcludesFile = ~/dotfiles/ignore\n")
	e, err := New(Config{Home: home})
	if err != nil {
		t.Fatal(err)
	}
	rg := func() Result {
		return mustCheck(t, e, &Request{Tool: tool("Bash", map[string]any{"command": "rg x"}), WorkingDirectory: project, Mode: ModeAuto})
	}
	writeFile(t, filepath.Join(home, "dotfiles/ignore"), "node_modules\n")
	if res := rg(); res.Decision != Allow {
		t.Fatalf("rg x with a global ignore file that whitelists nothing: %s (%s), want allow", res.Decision, res.Reason)
	}
	writeFile(t, filepath.Join(home, "dotfiles/ignore"), "!.env\n")
	if res := rg(); res.Decision == Allow {
		t.Error("rg x with !.env in the ignore file core.excludesFile names: allowed")
	}
	writeFile(t, filepath.Join(home, ".gitconfig"), "[core]\n\texcludesFile = relative/ignore\n")
	if res := rg(); res.Decision == Allow {
		t.Error("rg x with a relative core.excludesFile, which toolgate cannot place: allowed")
	}
}

// TestSearchWithoutPlace: a search with no path searches where the agent
// runs; a request that names no working directory leaves that unknown (a
// home directory, for all the server knows), so no search tool is local.
func TestSearchWithoutPlace(t *testing.T) {
	e := newHomeEngine(t, nil, nil)
	project := t.TempDir()
	for _, name := range []string{"Grep", "Glob", "LS", "grep_search", "search_file_content", "glob"} {
		in := map[string]any{"pattern": "API_KEY"}
		if res := mustCheck(t, e, &Request{Tool: tool(name, in), Mode: ModeAuto}); res.Decision == Allow {
			t.Errorf("%s with no path and no working directory: allowed by %s (%s)", name, res.Source, res.Reason)
		}
		if res := mustCheck(t, e, &Request{Tool: tool(name, in), WorkingDirectory: project, Mode: ModeAuto}); res.Decision != Allow {
			t.Errorf("%s with no path in a project: %s (%s), want allow", name, res.Decision, res.Reason)
		}
	}
}

// TestXargsWithoutNull: find's names reach xargs without -0, which splits
// them at blanks and reads quotes: every name below the tree must be free
// of them, links among the names are read through, and a program that
// reads recursively may not take what find lists without -type f.
func TestXargsWithoutNull(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	project := filepath.Join(base, "project")
	writeFile(t, filepath.Join(project, "src/a.ts"), "x")
	writeFile(t, filepath.Join(project, "src/b/c.tsx"), "x")
	e := newHomeEngine(t, nil, nil)
	bash := func(cmd string) Result {
		return mustCheck(t, e, &Request{Tool: tool("Bash", map[string]any{"command": cmd}), WorkingDirectory: project, Mode: ModeAuto})
	}
	for _, cmd := range []string{
		`find src -name "*.tsx" -o -name "*.ts" | xargs grep -l utils`,
		`find src -name "*.ts" | xargs grep -n x`,
		`find src -type f -name "*.ts" -print | xargs wc -l`,
	} {
		if res := bash(cmd); res.Decision != Allow {
			t.Errorf("%s in a tree of plain names: %s (%s), want allow", cmd, res.Decision, res.Reason)
		}
	}
	for _, cmd := range []string{
		`find src -name "*.ts" | xargs grep -rn x`, // a directory named x.ts is searched whole
		`find src -name "*.ts" -o -name ".env" | xargs cat`,
		`find src -name "*.ts" -print0 | xargs cat`,
		`find src -name "*.ts" | xargs -I{} cat {}`,
		`find src -name "*.ts" -exec echo {} \; | xargs cat`,
	} {
		if res := bash(cmd); res.Decision == Allow {
			t.Errorf("%s: allowed (%s)", cmd, res.Reason)
		}
	}
	// A name with a blank splits into others; one with a quote unquotes.
	for _, name := range []string{"src/x .env y.ts", "src/it's.ts", `src/a\b.ts`, "src/d e/f.ts"} {
		p := filepath.Join(project, name)
		writeFile(t, p, "x")
		if res := bash(`find src -name "*.ts" | xargs grep -n x`); res.Decision == Allow {
			t.Errorf("with %q in the tree: allowed (%s)", name, res.Reason)
		}
		if err := os.RemoveAll(p); err != nil {
			t.Fatal(err)
		}
	}
	// A link among the names is read through.
	if err := os.Symlink("/etc/hostname", filepath.Join(project, "src/h.ts")); err != nil {
		t.Fatal(err)
	}
	if res := bash(`find src -name "*.ts" | xargs grep -n x`); res.Decision == Allow {
		t.Errorf("a link named h.ts out of the project: allowed (%s)", res.Reason)
	}
}
