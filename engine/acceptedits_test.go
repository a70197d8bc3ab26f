package engine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func patch(lines ...string) string {
	return "*** Begin Patch\n" + strings.Join(lines, "\n") + "\n*** End Patch\n"
}

func applyPatch(p string) ToolCall { return tool("apply_patch", map[string]any{"input": p}) }

func TestAcceptEdits(t *testing.T) {
	l := newLayout(t)
	inApp := filepath.Join(l.app, "main.go")
	outside := filepath.Join(l.outside, "x.txt")
	fullPatch := patch(
		"*** Add File: a.txt",
		"+hello",
		"*** Update File: b.txt",
		"*** Move to: c.txt",
		"@@ func main",
		"-old",
		"+new",
		"*** End of File",
		"*** Delete File: d.txt",
	)
	tests := []struct {
		name  string
		tool  ToolCall
		cwd   string
		extra []string
		want  want
	}{
		// Allowed: every edit tool, every target inside.
		{"Edit", editFile(inApp), l.app, nil, allowEdits},
		{"MultiEdit", tool("MultiEdit", map[string]any{"file_path": inApp, "edits": []any{}}), l.app, nil, allowEdits},
		{"Write new file in new directory", tool("Write", map[string]any{"file_path": filepath.Join(l.app, "new", "dir", "f.txt"), "content": "x"}), l.app, nil, allowEdits},
		{"NotebookEdit", tool("NotebookEdit", map[string]any{"notebook_path": filepath.Join(l.app, "nb.ipynb"), "new_source": "x"}), l.app, nil, allowEdits},
		{"Gemini write_file", tool("write_file", map[string]any{"file_path": inApp, "content": "x"}), l.app, nil, allowEdits},
		{"Gemini replace", tool("replace", map[string]any{"file_path": inApp, "old_string": "a", "new_string": "b"}), l.app, nil, allowEdits},
		{"edit_file with path", tool("edit_file", map[string]any{"path": "sub/x.go"}), l.app, nil, allowEdits},
		{"relative path resolved against cwd", editFile("main.go"), l.app, nil, want{d: Allow, s: SourceAcceptEdits, reason: inApp}},
		{"relative path with inner ..", editFile("./sub/../main.go"), l.app, nil, want{d: Allow, s: SourceAcceptEdits, reason: inApp}},
		{"additional directory", editFile(filepath.Join(l.extra, "x.go")), l.app, []string{l.extra}, allowEdits},
		{"additional directory, relative target", editFile("../extra/x.go"), l.app, []string{l.extra}, allowEdits},
		{"two path fields both inside", tool("Edit", map[string]any{"file_path": inApp, "path": "sub/y.go"}), l.app, nil, allowEdits},
		{"apply_patch all inside", applyPatch(fullPatch), l.app, nil, want{d: Allow, s: SourceAcceptEdits, reason: filepath.Join(l.app, "c.txt")}},
		{"apply_patch in patch field", tool("apply_patch", map[string]any{"patch": patch("*** Add File: a.txt", "+x")}), l.app, nil, allowEdits},
		{"apply_patch CRLF", applyPatch(strings.ReplaceAll(fullPatch, "\n", "\r\n")), l.app, nil, allowEdits},

		// Outside the project.
		{".. escape", editFile("../outside/x.txt"), l.app, nil, askNoClfWhy("outside the project")},
		{"absolute outside", editFile(outside), l.app, nil, askNoClfWhy("outside the project")},
		{"shared-prefix sibling", editFile(filepath.Join(l.evil, "x.go")), l.app, nil, askNoClfWhy("outside the project")},
		{"shared-prefix sibling, relative", editFile("../app-evil/x.go"), l.app, nil, askNoClfWhy("outside the project")},
		{"symlink inside pointing outside", editFile("link/x.txt"), l.app, nil, askNoClfWhy("outside the project")},
		{"symlink inside pointing outside, absolute", editFile(filepath.Join(l.app, "link", "x.txt")), l.app, nil, askNoClfWhy("outside the project")},
		{"working directory itself", editFile(l.app), l.app, nil, askNoClf},
		{"additional directory not given", editFile(filepath.Join(l.extra, "x.go")), l.app, nil, askNoClfWhy("outside the project")},
		{"two path fields one outside", tool("Edit", map[string]any{"file_path": inApp, "path": outside}), l.app, nil, askNoClfWhy("outside the project")},
		{"two path fields first outside", tool("Write", map[string]any{"file_path": outside, "path": inApp}), l.app, nil, askNoClfWhy("outside the project")},
		{"apply_patch add outside", applyPatch(patch("*** Add File: a.txt", "+x", "*** Add File: ../outside/a.txt", "+x")), l.app, nil, askNoClfWhy("outside the project")},
		{"apply_patch update outside", applyPatch(patch("*** Update File: ../app-evil/b.txt", "@@", "-a", "+b")), l.app, nil, askNoClfWhy("outside the project")},
		{"apply_patch move to outside", applyPatch(patch("*** Update File: b.txt", "*** Move to: ../outside/c.txt", "@@", "-a", "+b")), l.app, nil, askNoClfWhy("outside the project")},
		{"apply_patch delete outside", applyPatch(patch("*** Delete File: " + outside)), l.app, nil, askNoClfWhy("outside the project")},

		// Targets that cannot be known.
		{"missing path", tool("Write", map[string]any{"content": "x"}), l.app, nil, askNoClfWhy("edit targets unclear")},
		{"nil input", tool("Edit", nil), l.app, nil, askNoClfWhy("edit targets unclear")},
		{"non-string path", tool("Edit", map[string]any{"file_path": 42.0}), l.app, nil, askNoClfWhy("edit targets unclear")},
		{"array path", tool("Edit", map[string]any{"file_path": []any{inApp}}), l.app, nil, askNoClfWhy("edit targets unclear")},
		{"empty path", editFile(""), l.app, nil, askNoClfWhy("edit targets unclear")},
		{"good path plus non-string path", tool("Edit", map[string]any{"file_path": inApp, "path": nil}), l.app, nil, askNoClfWhy("edit targets unclear")},
		{"tilde path", editFile("~/x"), l.app, nil, askNoClfWhy("not resolvable")},
		{"bare tilde", editFile("~"), l.app, nil, askNoClfWhy("not resolvable")},
		{"no working directory", editFile(inApp), "", nil, askNoClfWhy("no working directory")},
		{"no working directory, additional directory given", editFile(filepath.Join(l.extra, "x")), "", []string{l.extra}, askNoClfWhy("no working directory")},
		{"patch without envelope", applyPatch("*** Add File: a.txt\n+x\n"), l.app, nil, askNoClfWhy("edit targets unclear")},
		{"patch without end", applyPatch("*** Begin Patch\n*** Add File: a.txt\n+x\n"), l.app, nil, askNoClfWhy("edit targets unclear")},
		{"patch with unknown header", applyPatch(patch("*** Add File: a.txt", "+x", "*** Foo: b.txt")), l.app, nil, askNoClfWhy("unrecognised header")},
		{"patch with empty path", applyPatch(patch("*** Add File: ", "+x")), l.app, nil, askNoClfWhy("empty path")},
		{"patch with blank path", applyPatch(patch("*** Delete File:    ")), l.app, nil, askNoClfWhy("empty path")},
		{"patch naming no file", applyPatch(patch("@@", "+x")), l.app, nil, askNoClfWhy("edit targets unclear")},
		{"patch not a string", tool("apply_patch", map[string]any{"input": []any{"*** Begin Patch"}}), l.app, nil, askNoClfWhy("edit targets unclear")},
		{"no patch", tool("apply_patch", map[string]any{"file_path": inApp}), l.app, nil, askNoClfWhy("edit targets unclear")},
	}
	e := newEngine(t, nil, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := mustCheck(t, e, &Request{Tool: tt.tool, WorkingDirectory: tt.cwd, AdditionalDirectories: tt.extra})
			tt.want.check(t, res)
			if !res.Kind.IsEdit() {
				t.Errorf("Kind = %q, want an edit kind", res.Kind)
			}
		})
	}
}

// protectedPaths are the default protected paths, relative to the project.
var protectedPaths = []string{
	".git/config", ".claude/settings.json", ".gemini/x", ".codex/x", ".mcp.json",
	"CLAUDE.md", "AGENTS.md", "GEMINI.md", ".github/workflows/ci.yml", ".env", ".env.local",
	"sub/.git/hooks/pre-commit", "gitdir/config", // gitdir is a symlink to .git
}

func TestAcceptEditsProtectedPaths(t *testing.T) {
	l := newLayout(t)
	plain := newEngine(t, nil, nil)
	// An allow rule covering every edit must not open protected paths
	// either, in any mode that does not bypass.
	allowAll := newEngine(t, policyOf(PolicySpec{Permissions: RuleSet{Allow: []string{"Edit", "Write"}}}), nil)
	for _, rel := range protectedPaths {
		for _, form := range []struct{ name, path string }{{"relative", rel}, {"absolute", filepath.Join(l.app, rel)}} {
			t.Run(rel+"/"+form.name, func(t *testing.T) {
				req := func(tc ToolCall, m Mode) *Request {
					return &Request{Tool: tc, WorkingDirectory: l.app, Mode: m}
				}
				askNoClfWhy("protected path").check(t, mustCheck(t, plain, req(editFile(form.path), ModeAuto)))
				askNoClfWhy("protected path").check(t, mustCheck(t, plain, req(tool("Write", map[string]any{"file_path": form.path, "content": "x"}), ModeAuto)))
				askNoClfWhy("protected path").check(t, mustCheck(t, plain, req(applyPatch(patch("*** Update File: "+form.path, "@@", "-a", "+b")), ModeAuto)))
				askModeWhy("protected path").check(t, mustCheck(t, plain, req(editFile(form.path), ModeAcceptEdits)))

				askNoClfWhy("protected path").check(t, mustCheck(t, allowAll, req(editFile(form.path), ModeAuto)))
				askNoClfWhy("protected path").check(t, mustCheck(t, allowAll, req(tool("Write", map[string]any{"file_path": form.path}), ModeAuto)))
				askMode.check(t, mustCheck(t, allowAll, req(editFile(form.path), ModeDefault)))
				askMode.check(t, mustCheck(t, allowAll, req(editFile(form.path), ModeAcceptEdits)))
			})
		}
	}
}

func TestAllowRuleAndProtectedPaths(t *testing.T) {
	l := newLayout(t)
	inApp := filepath.Join(l.app, "main.go")
	outside := filepath.Join(l.outside, "x.txt")
	git := filepath.Join(l.app, ".git", "config")
	// Everything under the test's root: broad, yet not every path (a bare
	// Edit rule is dangerous and is not applied in auto mode).
	editAll := "Edit(/" + l.root + "/**)"
	tests := []struct {
		name string
		spec PolicySpec
		mode Mode
		tool ToolCall
		want want
	}{
		// The allow rule works where nothing is protected...
		{"outside edit", PolicySpec{Permissions: RuleSet{Allow: []string{editAll}}}, ModeAuto, editFile(outside), allowRule(editAll)},
		{"in-project edit, default mode", PolicySpec{Permissions: RuleSet{Allow: []string{editAll}}}, ModeDefault, editFile(inApp), allowRule(editAll)},
		{"in-project edit, accept-edits off", PolicySpec{DisableAcceptEdits: true, Permissions: RuleSet{Allow: []string{editAll}}}, ModeAuto, editFile(inApp), allowRule(editAll)},
		{"protected name outside the project", PolicySpec{Permissions: RuleSet{Allow: []string{editAll}}}, ModeAuto, editFile(filepath.Join(l.outside, ".git", "config")), allowRule(editAll)},
		// ...and never opens a protected path, whatever else declines first.
		{"protected, auto", PolicySpec{Permissions: RuleSet{Allow: []string{editAll}}}, ModeAuto, editFile(git), askNoClfWhy("protected path")},
		{"protected, specific rule", PolicySpec{Permissions: RuleSet{Allow: []string{"Edit(" + l.app + "/*)"}}}, ModeAuto, editFile(git), askNoClfWhy("protected path")},
		{"protected, default mode", PolicySpec{Permissions: RuleSet{Allow: []string{editAll}}}, ModeDefault, editFile(git), askModeWhy("protected path")},
		{"protected, accept-edits off", PolicySpec{DisableAcceptEdits: true, Permissions: RuleSet{Allow: []string{editAll}}}, ModeAuto, editFile(git), askNoClfWhy("protected path")},
		{"protected second field after an outside one", PolicySpec{Permissions: RuleSet{Allow: []string{editAll}}}, ModeAuto, tool("Edit", map[string]any{"file_path": outside, "path": git}), askNoClfWhy("protected path")},
		{"protected patch target after an outside one", PolicySpec{Permissions: RuleSet{Allow: []string{editAll}}}, ModeAuto, applyPatch(patch("*** Add File: "+outside, "+x", "*** Update File: .git/config", "@@", "-a", "+b")), askNoClfWhy("protected path")},
		{"protected via policy addition", PolicySpec{ProtectedPaths: []string{"secrets/"}, Permissions: RuleSet{Allow: []string{editAll}}}, ModeDefault, editFile("secrets/key.pem"), askModeWhy("protected path (secrets/)")},
		// Targets that cannot be checked for protection are not opened either.
		{"unclear targets", PolicySpec{Permissions: RuleSet{Allow: []string{editAll}}}, ModeAuto, tool("Edit", map[string]any{"file_path": git, "path": 1.0}), askNoClfWhy("edit targets unclear")},
		{"unclear patch", PolicySpec{Permissions: RuleSet{Allow: []string{editAll}}}, ModeAuto, applyPatch(patch("*** Frobnicate: .git/config")), askNoClfWhy("unrecognised header")},
		{"unresolvable target", PolicySpec{Permissions: RuleSet{Allow: []string{editAll}}}, ModeAuto, editFile("~/.git/config"), askNoClfWhy("not resolvable")},
		{"no working directory", PolicySpec{Permissions: RuleSet{Allow: []string{editAll}}}, ModeAuto, editFile(".git/config"), askNoClfWhy("no working directory")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEngine(t, policyOf(tt.spec), nil)
			cwd := l.app
			if tt.name == "no working directory" {
				cwd = ""
			}
			tt.want.check(t, mustCheck(t, e, &Request{Tool: tt.tool, WorkingDirectory: cwd, Mode: tt.mode}))
		})
	}
}

func TestAcceptEditsPolicy(t *testing.T) {
	l := newLayout(t)
	e := newEngine(t, map[string]PolicySpec{
		DefaultPolicy: {},
		"secrets":     {ProtectedPaths: []string{"secrets/", "*.pem"}},
		"noedits":     {DisableAcceptEdits: true},
	}, nil)
	tests := []struct {
		policy string
		path   string
		want   want
	}{
		{DefaultPolicy, "secrets/key.txt", allowEdits},
		{"secrets", "secrets/key.txt", askNoClfWhy("protected path (secrets/)")},
		{DefaultPolicy, "sub/cert.pem", allowEdits},
		{"secrets", "sub/cert.pem", askNoClfWhy("protected path (*.pem)")},
		{"secrets", ".git/config", askNoClfWhy("protected path (.git/)")}, // additions never remove defaults
		{"secrets", "main.go", allowEdits},
		{"noedits", "main.go", askNoClfWhy("accept-edits is off")},
		{"noedits", ".git/config", askNoClfWhy("protected path")},
	}
	for _, tt := range tests {
		t.Run(tt.policy+"/"+tt.path, func(t *testing.T) {
			tt.want.check(t, mustCheck(t, e, &Request{Tool: editFile(tt.path), WorkingDirectory: l.app, Policy: tt.policy}))
		})
	}
}

// A project directory that is a system, bin or home configuration
// directory takes no local edits, as home and / do not.
func TestAcceptEditsBroadProjectDirectories(t *testing.T) {
	e := newEngine(t, nil, nil)
	for _, dir := range []string{"/etc/nginx", "/usr/local/bin", "/home/dev/.config/app", "/home/dev/.local/bin", "/boot"} {
		res := mustCheck(t, e, &Request{Tool: editFile(dir + "/x.conf"), WorkingDirectory: dir})
		if res.Decision == Allow {
			t.Errorf("edit in project %s: %+v, want not allowed", dir, res)
		}
	}
	if res := mustCheck(t, e, &Request{Tool: editFile("/srv/site/x.go"), WorkingDirectory: "/srv/site"}); res.Decision != Allow {
		t.Errorf("edit in /srv/site: %+v, want allowed", res)
	}
}

// TestAcceptEditsRepositoryFiles: writes that create or change what makes
// a directory a repository are protected anywhere in the project, from
// allow rules too: a HEAD or commondir by name (any case), and anything
// below a directory that holds a HEAD.
func TestAcceptEditsRepositoryFiles(t *testing.T) {
	l := newLayout(t)
	ruleAll := "Edit(/" + l.root + "/**)"
	plain := newEngine(t, nil, nil)
	allowAll := newEngine(t, policyOf(PolicySpec{Permissions: RuleSet{Allow: []string{ruleAll}}}), nil)
	for _, tc := range []struct {
		path string
		want want
	}{
		{"HEAD", askNoClfWhy("protected path (HEAD)")},
		{"sub/bare/head", askNoClfWhy("protected path (HEAD)")},
		{"wt/commondir", askNoClfWhy("protected path (commondir)")},
		{"src/head.go", allowEdits},
		{"objects/x.go", allowEdits},
	} {
		tc.want.check(t, mustCheck(t, plain, &Request{Tool: editFile(tc.path), WorkingDirectory: l.app}))
	}
	bare := filepath.Join(l.app, "fixtures", "repo")
	if err := os.MkdirAll(bare, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bare, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"config", "objects/info/alternates", "refs/heads/main", "hooks/post-checkout"} {
		p := filepath.Join(bare, rel)
		askNoClfWhy("may take for a repository").check(t, mustCheck(t, plain, &Request{Tool: editFile(p), WorkingDirectory: l.app}))
		askNoClfWhy("may take for a repository").check(t, mustCheck(t, allowAll, &Request{Tool: editFile(p), WorkingDirectory: l.app}))
	}
	allowEdits.check(t, mustCheck(t, plain, &Request{Tool: editFile(filepath.Join(l.app, "fixtures", "other", "config")), WorkingDirectory: l.app}))
}

// TestAcceptEditsHiddenPaths: an edit below a dot-named component is local
// only for inert dot-files; the rest go to the classifier with the reason,
// in accept-edits mode too, while bypass mode and an explicit allow rule
// still take them (they are not protected paths).
func TestAcceptEditsHiddenPaths(t *testing.T) {
	l := newLayout(t)
	ruleAll := "Edit(/" + l.root + "/**)"
	plain := newEngine(t, nil, nil)
	allowAll := newEngine(t, policyOf(PolicySpec{Permissions: RuleSet{Allow: []string{ruleAll}}}), nil)
	for _, tc := range []struct {
		path string
		want want
	}{
		{".gitignore", allowEdits},
		{"sub/.editorconfig", allowEdits},
		{".github/ISSUE_TEMPLATE/bug.yml", allowEdits},
		{".changeset/quick-fox.md", allowEdits},
		{".helix/languages.toml", askNoClfWhy("not a known inert dot-file")},
		{".zed-preview/settings.json", askNoClfWhy("under .zed-preview")},
		{"sub/.newagent/rules/x.md", askNoClfWhy("under .newagent")},
		{".prettierrc.json", askNoClfWhy("not a known inert dot-file")},
		{".gitattributes", askNoClfWhy("not a known inert dot-file")},
		{".github/CODEOWNERS", askNoClfWhy("under .github")},
	} {
		t.Run(tc.path, func(t *testing.T) {
			tc.want.check(t, mustCheck(t, plain, &Request{Tool: editFile(tc.path), WorkingDirectory: l.app}))
			if tc.want.s == SourceAcceptEdits {
				return
			}
			askModeWhy("inert dot-file").check(t, mustCheck(t, plain, &Request{Tool: editFile(tc.path), WorkingDirectory: l.app, Mode: ModeAcceptEdits}))
			want{d: Allow, s: SourceMode}.check(t, mustCheck(t, plain, &Request{Tool: editFile(tc.path), WorkingDirectory: l.app, Mode: ModeBypass}))
			allowRule(ruleAll).check(t, mustCheck(t, allowAll, &Request{Tool: editFile(tc.path), WorkingDirectory: l.app}))
		})
	}
}
