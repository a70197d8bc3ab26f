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
		{"git config --get-regexp 'credential|http.*extraheader'", "credentials"},
		{"git config --list", "credentials"},
		{"git config --get remote.origin.url", "credentials"},
		{"git config --get user.email", ""},
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
		{"cd sub && git log", ""}, // where git runs is judged by gitProof
		{"git log -C", ""},
		{"git --namespace x config --list", "credentials"},
		{"git config list", "credentials"},
		{"git config get --regexp .*", "credentials"},
		{"git config --get-urlmatch http https://x", "credentials"},
		{"git config -zl", "credentials"},
		{"git config --get http.https://github.com/.extraheader", "credentials"},
		{"cd src && ls", ""},
	}
	for _, tt := range tests {
		t.Run(tt.cmd, func(t *testing.T) {
			a := shell.Analyze(tt.cmd)
			got := exposure(a.Commands)
			if (got == "") != (tt.want == "") || !strings.Contains(got, tt.want) {
				t.Fatalf("exposure(%q) = %q, want %q", tt.cmd, got, tt.want)
			}
		})
	}
	// Through the engine: variables and environments are judged by the
	// shell analysis's allowlist of harmless names.
	e := newEngine(t, nil, nil)
	for cmd, want := range map[string]string{
		"env": "env", "printenv": "printenv", "printenv OPENAI_API_KEY": "OPENAI_API_KEY",
		"echo $AWS_SECRET_ACCESS_KEY": "AWS_SECRET_ACCESS_KEY", "echo ${GITHUB_TOKEN}": "GITHUB_TOKEN",
		"echo $DB_PASS": "DB_PASS", "echo $SLACK_WEBHOOK": "SLACK_WEBHOOK", `cat <<< "$MY_JWT"`: "MY_JWT",
		"printenv $(echo X)": "printenv", "ps eww": "environments", "ps -axE": "environments",
	} {
		res := mustCheck(t, e, &Request{Tool: bashCmd(cmd), WorkingDirectory: cwd})
		if res.Decision == Allow || !strings.Contains(res.Reason, want) {
			t.Errorf("%s: %+v, want not allowed naming %s", cmd, res, want)
		}
	}
	// find's start points are read targets: outside the read roots, the
	// classifier decides.
	if res := mustCheck(t, e, &Request{Tool: bashCmd("find / -name '*.pem'"), WorkingDirectory: cwd}); res.Decision == Allow {
		t.Errorf("find /: %+v, want not allowed", res)
	}
	for _, cmd := range []string{"find . -name '*.go'", "printenv PATH", "echo $PATH", "echo \"$HOME\"", "ps aux"} {
		if res := mustCheck(t, e, &Request{Tool: bashCmd(cmd), WorkingDirectory: cwd}); res.Decision != Allow {
			t.Errorf("%s: %+v, want allowed", cmd, res)
		}
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
