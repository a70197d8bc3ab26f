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
		{"git -C /tmp/untrusted-repo status", "outside the project"},
		{"git --git-dir=/tmp/x/.git log", "outside the project"},
		{"git -C ../other log", "outside the project"},
		{"git -C . status", ""},
		{"git -C sub/module log", ""},
	}
	for _, tt := range tests {
		t.Run(tt.cmd, func(t *testing.T) {
			a := shell.Analyze(tt.cmd)
			got := exposure(a.Commands, cwd)
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
