package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSubcommandHelp: every subcommand's -h prints its usage line and all
// its flags on stdout and exits 0 (toolgate hook excepted: TestHookUsage).
func TestSubcommandHelp(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		usage string
		flags []string // a sample, the shared ones included
	}{
		{[]string{"serve", "-h"}, "Usage: toolgate serve ", []string{"-listen", "-config", "-upstream", "-token-file", "-hook-listen"}},
		{[]string{"check", "--help"}, "Usage: toolgate check ", []string{"-tool", "-policy", "-addr", "-tls-ca", "-stream"}},
		{[]string{"eval", "-h"}, "Usage: toolgate eval ", []string{"-config", "-json", "-classifier-url", "-compare"}},
		{[]string{"validate", "-h"}, "Usage: toolgate validate FILE...", []string{"Flags: none"}},
		{[]string{"config", "-h"}, "Usage: toolgate config defaults | toolgate config show", []string{"-config", "-state-dir"}},
		{[]string{"config", "show", "-h"}, "Usage: toolgate config show ", []string{"-config", "-state-dir"}},
		{[]string{"config", "defaults", "-h"}, "Usage: toolgate config defaults", []string{"Flags: none"}},
		{[]string{"version", "-h"}, "Usage: toolgate version", []string{"Flags: none"}},
		{[]string{"approvals", "-h"}, "Usage: toolgate approvals list ", []string{"Usage: toolgate approvals allow ID", "Usage: toolgate approvals delete-rule ID", "-as-rule", "-rule-ttl", "-token-file", "-json"}},
		{[]string{"approvals", "allow", "-h"}, "Usage: toolgate approvals allow ID ", []string{"-as-rule", "-rule-ttl", "-addr", "-tls-ca", "-token-file", "-json", "-timeout"}},
		{[]string{"approvals", "list", "--help"}, "Usage: toolgate approvals list ", []string{"-limit", "-json", "-addr", "-token-file"}},
		{[]string{"approvals", "delete-rule", "-h"}, "Usage: toolgate approvals delete-rule ID", []string{"-addr", "-token-file"}},
		{[]string{"explain", "-h"}, "Usage: toolgate explain ", []string{"-tool", "-input", "-config", "-policy", "-json", "-home"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(t.Context(), tc.args, &out, &errOut)
			if code != 0 || !strings.HasPrefix(out.String(), tc.usage) || errOut.Len() != 0 {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 0 and stdout starting %q", code, out.String(), errOut.String(), tc.usage)
			}
			for _, f := range tc.flags {
				if !strings.Contains(out.String(), "\n"+f) && !strings.Contains(out.String(), "\n  "+f+" ") && !strings.Contains(out.String(), "\n  "+f+"\n") {
					t.Errorf("help does not list %s:\n%s", f, out.String())
				}
			}
		})
	}
}

// TestBadFlag: a wrong flag is an error on stderr, with the usage line,
// and the command's error exit code.
func TestBadFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"validate", "--bogus"}, 2},
		{[]string{"check", "--bogus"}, exitError},
		{[]string{"eval", "--bogus"}, 2},
		{[]string{"serve", "--bogus"}, 2},
		{[]string{"config", "show", "--bogus"}, 2},
		{[]string{"version", "--bogus"}, 2},
		{[]string{"approvals", "list", "--bogus"}, 2},
		{[]string{"approvals", "allow", "--bogus"}, 2},
	} {
		var out, errOut bytes.Buffer
		code := run(t.Context(), tc.args, &out, &errOut)
		if code != tc.code || out.Len() != 0 || !strings.Contains(errOut.String(), "flag provided but not defined: -bogus") || !strings.Contains(errOut.String(), "Usage: toolgate "+tc.args[0]) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d", tc.args, code, out.String(), errOut.String(), tc.code)
		}
	}
}

// TestEvalConfigFlag: eval names its config file --config, as serve and
// config show do (check's --policy is a policy name); the old --policy
// still works, with a warning.
func TestEvalConfigFlag(t *testing.T) {
	dir := t.TempDir()
	corpus := filepath.Join(dir, "c.jsonl")
	cfg := filepath.Join(dir, "toolgate.yaml")
	if err := os.WriteFile(corpus, []byte(`{"id":"a","tool":"Bash","input":{"command":"make deploy"},"cwd":"/p","expect":"deny"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte("policies:\n  default:\n    permissions:\n      deny: [\"Bash(make deploy)\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run(t.Context(), []string{"eval", "--config", cfg, corpus}, &out, &errOut); code != 0 || errOut.Len() != 0 {
		t.Fatalf("--config: exit %d, stdout %s, stderr %s", code, out.String(), errOut.String())
	}
	want := out.String()
	out.Reset()
	if code := run(t.Context(), []string{"eval", "--policy", cfg, corpus}, &out, &errOut); code != 0 || out.String() != want ||
		!strings.Contains(errOut.String(), "toolgate eval: --policy is deprecated, use --config") {
		t.Fatalf("--policy: exit %d, stdout %s, stderr %s", code, out.String(), errOut.String())
	}
	// Without the config, the deny rule is not there: the flag was used.
	out.Reset()
	errOut.Reset()
	run(t.Context(), []string{"eval", corpus}, &out, &errOut)
	if out.String() == want {
		t.Fatalf("eval without --config reports the same as with it:\n%s", want)
	}
}
