package rules

import (
	"strings"
	"testing"
)

func TestDangerousAllowRules(t *testing.T) {
	tests := []struct {
		rule  string
		probe Call // a call the rule allows when auto is off
	}{
		{"Bash", shellCall("curl x | sh")},
		{"Bash(*)", shellCall("rm -rf ~")},
		{"Bash(* --help)", shellCall("python -c 'import os' --help")},
		{"Bash(ls*)", shellCall("lsattr")},
		{"Bash(./scripts/*)", shellCall("./scripts/evil.sh")},
		{"Bash(FOO=1 *)", shellCall("FOO=1 sh -c id")},
		{"Bash(python:*)", shellCall("python -c 'import os'")},
		{"Bash(python3 *)", shellCall("python3 -c 'import os'")},
		{"Bash(python3 -c:*)", shellCall("python3 -c 'import os'")},
		{"Bash(python *.py)", shellCall("python evil.py")},
		{"Bash(python3.12:*)", shellCall("python3.12 x.py")},
		{"Bash(node:*)", shellCall("node -e 1")},
		{"Bash(bash -c *)", shellCall("bash -c id")},
		{"Bash(sh:*)", shellCall("sh x.sh")},
		{"Bash(zsh:*)", shellCall("zsh -c id")},
		{"Bash(npx *)", shellCall("npx cowsay")},
		{"Bash(bunx:*)", shellCall("bunx x")},
		{"Bash(uvx:*)", shellCall("uvx x")},
		{"Bash(pnpm dlx:*)", shellCall("pnpm dlx x")},
		{"Bash(pnpm:*)", shellCall("pnpm dlx x")},
		{"Bash(eval:*)", shellCall("eval id")},
		{"Bash(exec:*)", shellCall("exec id")},
		{"Bash(sudo:*)", shellCall("sudo id")},
		{"Bash(env:*)", shellCall("env id")},
		{"Bash(xargs:*)", shellCall("xargs id")},
		{"Bash(ruby:*)", shellCall("ruby -e 1")},
		{"Bash(perl:*)", shellCall("perl -e 1")},
		{"Bash(php:*)", shellCall("php -r 1")},
		{"Bash(deno:*)", shellCall("deno eval 1")},
		{"Bash(make:*)", shellCall("make x")},
		{"Bash(npm run:*)", shellCall("npm run x")},
		{"Bash(npm:*)", shellCall("npm exec x")},
		{"Bash(git:*)", shellCall("git -c core.pager=id log")},
		{"Bash(git *)", shellCall("git -c core.pager=id log")},
		{"Bash(git config:*)", shellCall("git config core.fsmonitor id")},
		{"Bash(git -C:*)", shellCall("git -C x -c core.pager=id log")},
		{"Bash(docker run:*)", shellCall("docker run img")},
		{"Bash(docker:*)", shellCall("docker exec c id")},
		{"Bash(kubectl exec:*)", shellCall("kubectl exec p -- id")},
		{"Bash(ssh:*)", shellCall("ssh host id")},
		{"Bash(find:*)", shellCall("find . -exec id ;")},
		{"Bash(find . -name *)", shellCall("find . -name x -exec id ;")},
		{"Bash(awk:*)", shellCall("awk 'BEGIN{system(\"id\")}'")},
		{"Bash(sed:*)", shellCall("sed 1e id")},
		{"Bash(go run:*)", shellCall("go run x.go")},
		{"Bash(go test:*)", shellCall("go test -exec id ./...")},
		{"Bash(timeout:*)", shellCall("timeout 10 id")},
		{"Bash(uv run:*)", shellCall("uv run id")},
		{"Bash(source:*)", shellCall("source x.sh")},
		{"Bash(tar:*)", shellCall("tar -xf x --to-command=id")},
		{"Bash(FOO=1 python:*)", shellCall("FOO=1 python -c 1")},
		{"run_shell_command", Call{Tool: "run_shell_command", Kind: "shell", Commands: []Command{{Text: "id"}}}},
		{"run_shell_command(python3:*)", Call{Tool: "run_shell_command", Kind: "shell", Commands: []Command{{Text: "python3 -c 1"}}}},
		{"Edit", Call{Tool: "Edit", Kind: "edit", Paths: []string{"/home/dev/.bashrc"}}},
		{"Edit(*)", Call{Tool: "Edit", Kind: "edit", Paths: []string{"/home/dev/.bashrc"}}},
		{"Edit(//**)", Call{Tool: "Edit", Kind: "edit", Paths: []string{"/home/dev/.bashrc"}}},
		{"Edit(//)", Call{Tool: "Edit", Kind: "edit", Paths: []string{"/etc/profile"}}},
		{"Edit(~/**)", Call{Tool: "Edit", Kind: "edit", Paths: []string{"/home/dev/.bashrc"}}},
		{"Edit(~/.zshrc)", Call{Tool: "Edit", Kind: "edit", Paths: []string{"/home/dev/.zshrc"}}},
		{"Write(~/.ssh/**)", Call{Tool: "Write", Kind: "write", Paths: []string{"/home/dev/.ssh/authorized_keys"}}},
		{"Edit(~/.claude/**)", Call{Tool: "Edit", Kind: "edit", Paths: []string{"/home/dev/.claude/settings.json"}}},
		{"Edit(../../**)", Call{Tool: "Edit", Kind: "edit", Paths: []string{"/home/.profile"}}},
		{"write_file", Call{Tool: "write_file", Kind: "write", Paths: []string{"/home/dev/.bashrc"}}},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			s, warns, err := Compile(nil, nil, []string{"Read", tt.rule})
			if err != nil {
				t.Fatal(err)
			}
			if len(warns) == 0 || warns[0].Rule != tt.rule || !strings.Contains(warns[0].Problem, "allow[1]: hands out arbitrary code execution") {
				t.Fatalf("warnings %v; want one about %s at allow[1]", warns, tt.rule)
			}
			if got := s.Warnings(); len(got) != len(warns) || got[0] != warns[0] {
				t.Fatalf("Set.Warnings() = %v; want %v", got, warns)
			}
			if !s.Allow(tt.probe, testEnv, false).OK {
				t.Fatal("not applied with auto off")
			}
			if s.Allow(tt.probe, testEnv, true).OK {
				t.Fatal("applied with auto on")
			}
			// Deny and ask rules are never skipped.
			d := mustCompile(t, []string{tt.rule}, []string{tt.rule}, nil)
			if !d.Deny(tt.probe, testEnv).OK || !d.Ask(tt.probe, testEnv).OK {
				t.Fatal("as deny or ask rule: no match")
			}
		})
	}
}

func TestHarmlessAllowRules(t *testing.T) {
	tests := []struct {
		rule  string
		probe Call
	}{
		{"Bash(npm test)", shellCall("npm test")},
		{"Bash(npm run test:*)", shellCall("npm run test -- --watch")},
		{"Bash(npm run build)", shellCall("npm run build")},
		{"Bash(git diff:*)", shellCall("git diff --stat")},
		{"Bash(git status)", shellCall("git status")},
		{"Bash(git log *)", shellCall("git log --oneline")},
		{"Bash(go test ./...)", shellCall("go test ./...")},
		{"Bash(go build ./...)", shellCall("go build ./...")},
		{"Bash(python3 -m pytest:*)", shellCall("python3 -m pytest -x")},
		{"Bash(ls *)", shellCall("ls -la")},
		{"Bash(cat *)", shellCall("cat README.md")},
		{"Bash(grep:*)", shellCall("grep -r foo .")},
		{"Bash(make test)", shellCall("make test")},
		{"Bash(cargo test:*)", shellCall("cargo test --all")},
		{"Bash(bash)", shellCall("bash")},
		{"Bash(FOO=1 npm test)", shellCall("FOO=1 npm test")},
		{"Read", readCall("/etc/passwd")},
		{"Read(//**)", readCall("/etc/passwd")},
		{"Edit(./src/**)", Call{Tool: "Edit", Kind: "edit", Paths: []string{"/home/dev/proj/src/a.go"}}},
		{"Edit(/**)", Call{Tool: "Edit", Kind: "edit", Paths: []string{"/etc/toolgate/x"}}},
		{"Edit(*.md)", Call{Tool: "Edit", Kind: "edit", Paths: []string{"/home/dev/proj/a.md"}}},
		{"Write(~/notes/**)", Call{Tool: "Write", Kind: "write", Paths: []string{"/home/dev/notes/a"}}},
		{"WebFetch", fetch("https://example.com")},
		{"mcp__github", Call{Tool: "mcp__github__create_issue", Kind: "unknown"}},
		{"Grep", Call{Tool: "Grep", Kind: "search"}},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			s, warns, err := Compile(nil, nil, []string{tt.rule})
			if err != nil {
				t.Fatal(err)
			}
			if len(warns) != 0 {
				t.Fatalf("warnings %v; want none", warns)
			}
			if !s.Allow(tt.probe, testEnv, true).OK {
				t.Fatal("not applied with auto on")
			}
		})
	}
}

func TestNeverMatchingAllowWarned(t *testing.T) {
	for _, rule := range []string{"Bash(cd x && npm test)", "Bash(npm test; ls)", "Bash(cat x | head)", "run_shell_command(echo $(id))"} {
		_, warns, err := Compile(nil, nil, []string{rule})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, w := range warns {
			found = found || strings.Contains(w.Problem, "never matches")
		}
		if !found {
			t.Errorf("%s: warnings %v; want a never-matches warning", rule, warns)
		}
	}
	// Deny and ask rules are not warned about: they still match the raw line.
	if _, warns, _ := Compile([]string{"Bash(curl * | sh)"}, []string{"Bash(a && b)"}, nil); len(warns) != 0 {
		t.Errorf("deny/ask warnings %v; want none", warns)
	}
}

// TestLaunchersSelfCheck keeps the data honest: every launcher's own
// "name:*" rule is flagged, and every probe is a well-formed command.
func TestLaunchersSelfCheck(t *testing.T) {
	for _, l := range launchers {
		if l.reason == "" || len(l.names) == 0 || len(l.args) == 0 {
			t.Errorf("incomplete launcher %+v", l)
		}
		for _, name := range l.names {
			r, err := Parse("Bash(" + name + ":*)")
			if err != nil {
				t.Fatal(err)
			}
			if r.m.shellDanger == "" {
				t.Errorf("Bash(%s:*) not flagged", name)
			}
		}
	}
	for _, p := range probePaths {
		if !strings.HasPrefix(p, "~/") && !strings.HasPrefix(p, "/") {
			t.Errorf("probe path %q is neither ~/ nor absolute", p)
		}
	}
}
