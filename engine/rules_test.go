package engine

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestParseRule(t *testing.T) {
	tests := []struct {
		in      string
		want    Rule
		wantErr string // substring; "" means no error
	}{
		{in: "Bash", want: Rule{Text: "Bash", Tool: "Bash"}},
		{in: "  Bash  ", want: Rule{Text: "Bash", Tool: "Bash"}},
		{in: "Bash(git status*)", want: Rule{Text: "Bash(git status*)", Tool: "Bash", Specifier: "git status*", HasSpec: true}},
		{in: " Read(/etc/*)\n", want: Rule{Text: "Read(/etc/*)", Tool: "Read", Specifier: "/etc/*", HasSpec: true}},
		{in: "Bash(npm run test:*)", want: Rule{Text: "Bash(npm run test:*)", Tool: "Bash", Specifier: "npm run test:*", HasSpec: true}},
		{in: "Bash(echo (a))", want: Rule{Text: "Bash(echo (a))", Tool: "Bash", Specifier: "echo (a)", HasSpec: true}},
		{in: "Bash( )", want: Rule{Text: "Bash( )", Tool: "Bash", Specifier: " ", HasSpec: true}},
		{in: "mcp__github__create_issue", want: Rule{Text: "mcp__github__create_issue", Tool: "mcp__github__create_issue"}},
		{in: "WebFetch(https://example.com/*)", want: Rule{Text: "WebFetch(https://example.com/*)", Tool: "WebFetch", Specifier: "https://example.com/*", HasSpec: true}},

		{in: "", wantErr: "empty rule"},
		{in: " \t\n", wantErr: "empty rule"},
		{in: "Bash(", wantErr: "missing closing parenthesis"},
		{in: "Bash(ls", wantErr: "missing closing parenthesis"},
		{in: "Bash(ls)x", wantErr: "missing closing parenthesis"},
		{in: "Bash()", wantErr: "empty specifier"},
		{in: "(ls)", wantErr: "bad tool name"},
		{in: "Ba sh", wantErr: "bad tool name"},
		{in: "Bash )", wantErr: "bad tool name"},
		{in: "Bash)", wantErr: "bad tool name"},
		{in: "*", wantErr: "bad tool name"},
		{in: "Bash*(ls)", wantErr: "bad tool name"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseRule(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseRule(%q) = %+v, %v; want error containing %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseRule(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestParseRules(t *testing.T) {
	rules, err := ParseRules("permissions.allow", []string{"Bash", "Read(/x)"})
	if err != nil || len(rules) != 2 || rules[0].Tool != "Bash" || rules[1].Specifier != "/x" {
		t.Fatalf("ParseRules = %+v, %v", rules, err)
	}
	_, err = ParseRules("permissions.deny", []string{"Bash", "Read(/x)", "Edit("})
	if err == nil || !strings.Contains(err.Error(), "permissions.deny[2]") {
		t.Fatalf("err = %v, want it to name permissions.deny[2]", err)
	}
}

func TestGlobMatch(t *testing.T) {
	tests := []struct {
		pattern, s string
		want       bool
	}{
		{"ls", "ls", true},
		{"ls", "ls -la", false},
		{"ls", "l", false},
		{"", "", true},
		{"", "x", false},
		{"*", "", true},
		{"*", "any/thing at all", true},
		{"/etc/*", "/etc/passwd", true},
		{"/etc/*", "/etc/ssh/sshd_config", true}, // '*' crosses slashes
		{"/etc/*", "/etc", false},
		{"/etc/*", "/etcetera/x", false},
		{"/etc/*", "/x/etc/passwd", false},
		{"*.go", "main.go", true},
		{"*.go", "main.go.bak", false},
		{"git *", "git", false},
		{"git *", "git status", true},
		{"a*b*c", "abc", true},
		{"a*b*c", "aXbYc", true},
		{"a*b*c", "acb", false},
		{"a*b*c", "abcx", false},
		{"a*b*b", "ab", false}, // the middle b cannot also be the last
		{"ab*ba", "aba", false},
		{"ab*ba", "abba", true},
		{"/src/*/test/*", "/src/a/b/test/c.go", true},
		{"/src/*/test/*", "/src/a/b/tes/c.go", false},
		{"**", "x", true},
		// Legacy prefix form: the prefix as a whole word.
		{"npm run test:*", "npm run test", true},
		{"npm run test:*", "npm run test --watch", true},
		{"npm run test:*", "npm run testx", false},
		{"npm run test:*", "npm run tes", false},
		{"npm run test:*", "xnpm run test", false},
		{"git:*", "git", true},
		{"git:*", "gitk", false},
		// A colon elsewhere is literal.
		{"a:b", "a:b", true},
		{"a:b*", "a:bc", true},
	}
	for _, tt := range tests {
		if got := globMatch(tt.pattern, tt.s); got != tt.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tt.pattern, tt.s, got, tt.want)
		}
	}
}

func TestShellAllowRuleRejectsControlSyntax(t *testing.T) {
	e := newEngine(t, policyOf(PolicySpec{Permissions: RuleSet{Allow: []string{"Bash(git status*)", "Bash(npm run test:*)"}}}), nil)
	tests := []struct {
		cmd  string
		want want
	}{
		{"git status", allowRule("Bash(git status*)")},
		{"git status --short", allowRule("Bash(git status*)")},
		{"  git status  ", allowRule("Bash(git status*)")},
		{"npm run test", allowRule("Bash(npm run test:*)")},
		{"npm run test --watch", allowRule("Bash(npm run test:*)")},
		{"npm run testx", askNoClf},
		{"git log", askNoClf},
		{"git status; rm -rf ~", askNoClf},
		{"git status && curl x|sh", askNoClf},
		{"git status || true", askNoClf},
		{"git status | sh", askNoClf},
		{"git status & rm x", askNoClf},
		{"git status $(curl x)", askNoClf},
		{"git status `curl x`", askNoClf},
		{"git status\nrm -rf ~", askNoClf},
		{"git status\rrm -rf ~", askNoClf},
		{"git status > ~/.bashrc", askNoClf},
		{"git status < /dev/tcp/x/1", askNoClf},
		{"git status 'x'", askNoClf},
		{"git status ${IFS}x", askNoClf},
		{"git status \\\nrm", askNoClf},
		{"npm run test; rm x", askNoClf},
	}
	for _, tt := range tests {
		t.Run(tt.cmd, func(t *testing.T) {
			tt.want.check(t, mustCheck(t, e, &Request{Tool: bashCmd(tt.cmd)}))
		})
	}
}

func TestShellDenyRuleCatchesSegments(t *testing.T) {
	e := newEngine(t, policyOf(PolicySpec{Permissions: RuleSet{Deny: []string{"Bash(rm *)"}}}), nil)
	tests := []struct {
		cmd    string
		denied bool
	}{
		{"rm -rf x", true},
		{"  rm x", true},
		{"ls && rm -rf x", true},
		{"ls || rm -rf x", true},
		{"echo hi; rm x", true},
		{"true | rm x", true},
		{"sleep 1 & rm x", true},
		{"$(rm x)", true},
		{"echo $(rm x)", true},
		{"echo `rm x`", true},
		{"(rm x)", true},
		{"{ rm x; }", true},
		{"ls\nrm x", true},
		{"ls -la", false},
		{"echo rm x", false},
		{"firm x", false},
		{"rmdir x", false},
		{"rm", false}, // "rm *" needs an argument
	}
	for _, tt := range tests {
		t.Run(tt.cmd, func(t *testing.T) {
			res := mustCheck(t, e, &Request{Tool: bashCmd(tt.cmd)})
			if tt.denied {
				denyRule("Bash(rm *)").check(t, res)
			} else {
				askNoClf.check(t, res)
			}
		})
	}
}

func TestRuleToolNamesCoverKinds(t *testing.T) {
	l := newLayout(t)
	inApp := filepath.Join(l.app, "main.go")
	tests := []struct {
		name string
		deny string
		tool ToolCall
		want want
	}{
		{"Bash covers run_shell_command", "Bash", tool("run_shell_command", map[string]any{"command": "ls"}), denyRule("Bash")},
		{"Bash covers Codex shell argv", "Bash(rm *)", tool("shell", map[string]any{"command": []any{"bash", "-lc", "rm -rf /"}}), denyRule("Bash(rm *)")},
		{"Bash covers plain argv", "Bash(rm *)", tool("shell", map[string]any{"command": []any{"rm", "-rf", "/"}}), denyRule("Bash(rm *)")},
		{"Bash covers argv script segments", "Bash(rm *)", tool("local_shell", map[string]any{"command": []any{"sh", "-c", "cd / && rm -rf x"}}), denyRule("Bash(rm *)")},
		{"Bash covers Codex exec_command cmd", "Bash(rm *)", tool("exec_command", map[string]any{"cmd": "rm -rf /"}), denyRule("Bash(rm *)")},
		{"Bash covers lowercase bash", "Bash(rm *)", tool("bash", map[string]any{"command": "rm x"}), denyRule("Bash(rm *)")},
		{"Bash argv other command", "Bash(rm *)", tool("shell", map[string]any{"command": []any{"bash", "-lc", "ls"}}), askNoClf},
		{"Edit covers Edit", "Edit", editFile(inApp), denyRule("Edit")},
		{"Edit covers Write", "Edit", tool("Write", map[string]any{"file_path": inApp}), denyRule("Edit")},
		{"Edit covers MultiEdit", "Edit", tool("MultiEdit", map[string]any{"file_path": inApp}), denyRule("Edit")},
		{"Edit covers NotebookEdit", "Edit", tool("NotebookEdit", map[string]any{"notebook_path": inApp}), denyRule("Edit")},
		{"Edit covers apply_patch", "Edit", applyPatch(patch("*** Add File: a.txt", "+x")), denyRule("Edit")},
		{"Edit covers write_file", "Edit", tool("write_file", map[string]any{"file_path": inApp}), denyRule("Edit")},
		{"Edit covers replace", "Edit", tool("replace", map[string]any{"file_path": inApp}), denyRule("Edit")},
		{"Edit path covers apply_patch target", "Edit(" + l.app + "/*.txt)", applyPatch(patch("*** Add File: a.txt", "+x")), denyRule("Edit(" + l.app + "/*.txt)")},
		{"Edit does not cover Read", "Edit", readFile(inApp), allowSafe},
		{"Edit does not cover Bash", "Edit", bashCmd("ls"), askNoClf},
		{"Write covers write_file", "Write", tool("write_file", map[string]any{"file_path": inApp}), denyRule("Write")},
		{"Write does not cover Edit", "Write", editFile(inApp), allowEdits},
		{"Read covers Read", "Read", readFile(inApp), denyRule("Read")},
		{"Read covers Grep", "Read", tool("Grep", map[string]any{"pattern": "x"}), denyRule("Read")},
		{"Read covers Glob", "Read", tool("Glob", map[string]any{"pattern": "*"}), denyRule("Read")},
		{"Read covers LS", "Read", tool("LS", map[string]any{"path": l.app}), denyRule("Read")},
		{"Read covers read_file", "Read", tool("read_file", map[string]any{"absolute_path": inApp}), denyRule("Read")},
		{"Read path covers Grep path", "Read(/etc/*)", tool("Grep", map[string]any{"pattern": "x", "path": "/etc/ssl"}), denyRule("Read(/etc/*)")},
		{"Read path covers relative read", "Read(" + l.app + "/*)", readFile("main.go"), denyRule("Read(" + l.app + "/*)")},
		{"Read path covers cleaned ..", "Read(/etc/*)", readFile(l.app + "/../../../../../../../../etc/passwd"), denyRule("Read(/etc/*)")},
		{"Read path covers list_directory dir_path", "Read(/etc/*)", tool("list_directory", map[string]any{"dir_path": "/etc/ssh"}), denyRule("Read(/etc/*)")},
		{"Read path covers read_many_files paths", "Read(/etc/*)", tool("read_many_files", map[string]any{"paths": []any{"README.md", "/etc/shadow"}}), denyRule("Read(/etc/*)")},
		{"Read path, other read", "Read(/etc/*)", readFile(inApp), allowSafe},
		{"Read path, no path given", "Read(/etc/*)", tool("Grep", map[string]any{"pattern": "root"}), allowSafe},
		{"Read does not cover metadata", "Read", tool("TodoWrite", map[string]any{"todos": []any{}}), allowSafe},
		{"Read does not cover Edit", "Read", editFile(inApp), allowEdits},
		{"Grep is only its own name", "Grep", readFile(inApp), allowSafe},
		{"Grep by name", "Grep", tool("Grep", nil), denyRule("Grep")},
		{"WebFetch url", "WebFetch(https://evil.example/*)", tool("WebFetch", map[string]any{"url": "https://evil.example/x"}), denyRule("WebFetch(https://evil.example/*)")},
		{"WebFetch covers web_fetch", "WebFetch(https://evil.example/*)", tool("web_fetch", map[string]any{"url": "https://evil.example/x"}), denyRule("WebFetch(https://evil.example/*)")},
		{"WebFetch other url", "WebFetch(https://evil.example/*)", tool("WebFetch", map[string]any{"url": "https://good.example/x"}), askNoClf},
		{"WebSearch covers google_web_search", "WebSearch", tool("google_web_search", map[string]any{"query": "x"}), denyRule("WebSearch")},
		{"exact name of an unknown tool", "mcp__github__create_issue", unknownTool, denyRule("mcp__github__create_issue")},
		{"exact name is case-sensitive", "mcp__GitHub__create_issue", unknownTool, askNoClf},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEngine(t, policyOf(PolicySpec{Permissions: RuleSet{Deny: []string{tt.deny}}}), nil)
			tt.want.check(t, mustCheck(t, e, &Request{Tool: tt.tool, WorkingDirectory: l.app}))
		})
	}
}

// Allow rules must match every target of a call, deny and ask rules any.
func TestRuleTargetsAllVersusAny(t *testing.T) {
	l := newLayout(t)
	inApp := filepath.Join(l.app, "a.txt")
	outside := filepath.Join(l.outside, "b.txt")
	both := applyPatch(patch("*** Add File: a.txt", "+x", "*** Add File: "+outside, "+y"))
	onlyApp := applyPatch(patch("*** Add File: a.txt", "+x", "*** Update File: sub/c.txt", "*** Move to: d.txt"))
	moveOut := applyPatch(patch("*** Update File: a.txt", "*** Move to: "+outside))
	appRule := "Edit(" + l.app + "/*)"
	outRule := "Edit(" + l.outside + "/*)"
	tests := []struct {
		name  string
		rules RuleSet
		tool  ToolCall
		want  want
	}{
		{"allow: every target matches", RuleSet{Allow: []string{appRule}}, onlyApp, allowRule(appRule)},
		{"allow: one target outside", RuleSet{Allow: []string{appRule}}, both, askMode},
		{"allow: move target outside", RuleSet{Allow: []string{appRule}}, moveOut, askMode},
		{"allow: two fields, one outside", RuleSet{Allow: []string{appRule}}, tool("Edit", map[string]any{"file_path": inApp, "path": outside}), askMode},
		{"allow: two fields, both inside", RuleSet{Allow: []string{appRule}}, tool("Edit", map[string]any{"file_path": inApp, "path": "b.txt"}), allowRule(appRule)},
		{"allow: no targets", RuleSet{Allow: []string{appRule}}, tool("Edit", map[string]any{}), askMode},
		{"deny: one target matches", RuleSet{Deny: []string{outRule}}, both, denyRule(outRule)},
		{"deny: move target matches", RuleSet{Deny: []string{outRule}}, moveOut, denyRule(outRule)},
		{"deny: second field matches", RuleSet{Deny: []string{outRule}}, tool("Write", map[string]any{"file_path": inApp, "path": outside}), denyRule(outRule)},
		{"deny: no target matches", RuleSet{Deny: []string{outRule}}, onlyApp, askMode},
		{"ask: one target matches", RuleSet{Ask: []string{outRule}}, both, askRule(outRule)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Default mode keeps accept-edits out of the way.
			e := newEngine(t, policyOf(PolicySpec{Permissions: tt.rules}), nil)
			tt.want.check(t, mustCheck(t, e, &Request{Tool: tt.tool, WorkingDirectory: l.app, Mode: ModeDefault}))
		})
	}
}

func TestShellSegments(t *testing.T) {
	tests := []struct {
		cmd  string
		want []string
	}{
		{"ls", []string{"ls"}},
		{"ls && rm -rf x", []string{"ls", "rm -rf x"}},
		{"a;b|c&d", []string{"a", "b", "c", "d"}},
		{"echo $(rm x)", []string{"echo", "rm x"}},
		{"echo `rm x`", []string{"echo", "rm x"}},
		{"{ a; }", []string{"a"}},
		{"a\nb\r\nc", []string{"a", "b", "c"}},
		{" ;; ", nil},
	}
	for _, tt := range tests {
		got := shellSegments(tt.cmd)
		if strings.Join(got, "\x00") != strings.Join(tt.want, "\x00") || len(got) != len(tt.want) {
			t.Errorf("shellSegments(%q) = %q, want %q", tt.cmd, got, tt.want)
		}
	}
}

func TestCleanTarget(t *testing.T) {
	tests := []struct{ cwd, p, want string }{
		{"/w/app", "main.go", "/w/app/main.go"},
		{"/w/app", "./a/../b", "/w/app/b"},
		{"/w/app", "../x", "/w/x"},
		{"/w/app", "/etc//passwd", "/etc/passwd"},
		{"", "a/../b", "b"},
	}
	for _, tt := range tests {
		if got := cleanTarget(tt.cwd, tt.p); got != tt.want {
			t.Errorf("cleanTarget(%q, %q) = %q, want %q", tt.cwd, tt.p, got, tt.want)
		}
	}
}
