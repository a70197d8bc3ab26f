package engine

import (
	"strings"
	"testing"

	"github.com/toolgate/toolgate/engine/shell"
)

func TestExposure(t *testing.T) {
	const cwd = "/home/dev/project"
	tests := []struct {
		cmd  string
		want string // "" means nothing exposed
	}{
		{"env", "environment"},
		{"printenv", "environment"},
		{"printenv OPENAI_API_KEY", "environment"},
		{"printenv PATH", ""},
		{"echo $AWS_SECRET_ACCESS_KEY", "AWS_SECRET_ACCESS_KEY"},
		{"echo ${GITHUB_TOKEN}", "GITHUB_TOKEN"},
		{"echo $PATH", ""},
		{"jq -n env", "environment"},
		{"jq -n '$ENV.GITHUB_TOKEN'", "environment"},
		{"jq .name package.json", ""},
		{"git config --get-regexp 'credential|http.*extraheader'", "credentials"},
		{"git config --list", "credentials"},
		{"git config --get remote.origin.url", ""},
		// git runs only in the project's root, on its own repository: a
		// directory of the project may be a repository the project carries
		// as files, with a config that runs programs.
		{"git -C /tmp/untrusted-repo status", "another repository"},
		{"git --git-dir=/tmp/x/.git log", "another repository"},
		{"git -C ../other log", "another repository"},
		{"git -C . status", "another repository"},
		{"git -C sub/module log", "another repository"},
		{"git -Csub log", "another repository"},
		{"GIT_DIR=x git log", "another repository"},
		{"cd sub && git log", "another repository"},
		{"git log -C", ""},
		{"git --namespace x config --list", "credentials"},
		{"ps -axE", "process environments"},
		{"cat <<< \"$GITHUB_TOKEN\"", "GITHUB_TOKEN"},
		{"echo $GH_PAT", "GH_PAT"},
		{"echo $DATABASE_URL", "DATABASE_URL"},
		{"ps eww", "process environments"},
		{"ps aux", ""},
		{"git config list", "credentials"},
		{"git config get --regexp .*", "credentials"},
		{"git config --get-urlmatch http https://x", "credentials"},
		{"git config -zl", "credentials"},
		{"git config --get http.https://github.com/.extraheader", "credentials"},
		{"cd /tmp/evil && git status", "outside the project"},
		{"cd src && ls", ""},
	}
	for _, tt := range tests {
		t.Run(tt.cmd, func(t *testing.T) {
			a := shell.Analyze(tt.cmd)
			got := exposure(a.Commands, tt.cmd, cwd)
			if (got == "") != (tt.want == "") || !strings.Contains(got, tt.want) {
				t.Fatalf("exposure(%q) = %q, want %q", tt.cmd, got, tt.want)
			}
		})
	}
	// Through the engine: read-only, yet not allowed locally.
	e := newEngine(t, nil, nil)
	res := mustCheck(t, e, &Request{Tool: bashCmd("printenv"), WorkingDirectory: cwd})
	if res.Decision == Allow || !strings.Contains(res.Reason, "environment") {
		t.Fatalf("printenv: %+v", res)
	}
}

func TestShellWritesAndRules(t *testing.T) {
	l := newLayout(t)
	e := newEngine(t, policyOf(PolicySpec{Permissions: RuleSet{Allow: []string{"Bash(echo:*)"}}}), nil)
	tests := []struct {
		name string
		cmd  string
		mode Mode
		want Decision
		src  Source
	}{
		{"write inside the project: the rule applies", "echo x > out.txt", ModeAuto, Allow, SourceRule},
		{"protected write: no rule opens it", "echo x > .git/hooks/pre-commit", ModeAuto, Ask, SourceNoClassifier},
		{"write outside the project: not the rule's to allow", "echo x >> " + l.outside + "/profile", ModeAuto, Ask, SourceNoClassifier},
		{"protected write in bypass mode still asks", "echo '{}' > .claude/settings.json", ModeBypass, Ask, SourceMode},
		{"other writes in bypass mode are allowed", "echo x > out.txt", ModeBypass, Allow, SourceMode},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := mustCheck(t, e, &Request{Tool: bashCmd(tt.cmd), WorkingDirectory: l.app, Mode: tt.mode})
			if res.Decision != tt.want || res.Source != tt.src {
				t.Fatalf("%q: %s/%s (%s), want %s/%s", tt.cmd, res.Decision, res.Source, res.Reason, tt.want, tt.src)
			}
		})
	}
}
