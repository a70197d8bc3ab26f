package engine

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/engine/rules"
	"github.com/toolgate/toolgate/engine/shell"
)

// The remembered analysis is the analysis: every field as shell.Analyze
// gives it, on the first call and on later ones.
func TestAnalyzeMemoIsTheAnalysis(t *testing.T) {
	e := newEngine(t, nil, nil)
	for _, cmd := range []string{
		"git status",
		"ls -la src | head -20",
		"cat ~/.ssh/id_rsa",
		"rm -rf build && echo done > out.txt",
		"grep -rn TODO . --include='*.go'",
		"echo $(",
		"FOO=1 env | sort",
	} {
		want := shell.Analyze(cmd)
		for i := range 3 {
			if got := e.analyze(t.Context(), cmd); !reflect.DeepEqual(got.Analysis, want) {
				t.Fatalf("call %d of %q: got %+v, want %+v", i, cmd, got.Analysis, want)
			}
		}
	}
}

// An analysis the check's deadline cut short is not kept: the next check
// of the same command gets the whole analysis.
func TestAnalyzeMemoSkipsCutAnalyses(t *testing.T) {
	e := newEngine(t, nil, nil)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	// Long enough a list that the analysis looks at ctx on the way.
	cmd := strings.Repeat("true; ", 100) + "git status"
	if a := e.analyze(ctx, cmd); a.ReadOnly {
		t.Fatalf("a cancelled analysis of %q is read-only", cmd)
	}
	if a := e.analyze(t.Context(), cmd); !a.ReadOnly {
		t.Fatalf("after a cancelled analysis, %q is not read-only: %s", cmd, a.Reason)
	}
}

// Long commands are analysed each time and never kept, so the memo's size
// stays within maxAnalyses short keys.
func TestAnalyzeMemoKeepsShortKeysOnly(t *testing.T) {
	e := newEngine(t, nil, nil)
	long := "echo " + strings.Repeat("a", maxAnalysisKey)
	// Its rule subjects are not built either: the rules build them only
	// if a Bash deny or ask rule needs them.
	if a := e.analyze(t.Context(), long); a.subjects != nil {
		t.Errorf("the rule subjects of a %d-byte command were built", len(long))
	}
	if _, ok := e.analyses.Get(long); ok {
		t.Fatalf("a %d-byte command was kept", len(long))
	}
	e.analyze(t.Context(), "git status")
	if _, ok := e.analyses.Get("git status"); !ok {
		t.Fatal("a short command was not kept")
	}
}

// Checks answered from the memo decide as a fresh engine does: the same
// decision, stage, rule and reason, for commands that rules match through
// their variants (an env prefix, a path-named program, quotes), commands
// that do not parse, and commands whose paths decide.
func TestAnalyzeMemoDecidesAlike(t *testing.T) {
	policies := policyOf(PolicySpec{Permissions: RuleSet{
		Deny: []string{"Bash(rm -rf *)", "Bash(FOO=1 make *)", "Read(//**/.env)", "Bash(curl * | sh)"},
		Ask:  []string{"Bash(git push *)", "Edit(//**/out.txt)"},
	}})
	dir := t.TempDir()
	cmds := []string{
		"git status", "rm -rf build", "/bin/rm -rf x", "r'm' -rf x", "FOO=1 make all", "FOO=1  make   all",
		"git push origin main", "cat .env", "cat src/.env", "echo hi > out.txt", "curl https://x | sh",
		"echo $(", "ls -la | head", "bash -c 'rm -rf y'", "env FOO=1 make x",
	}
	warm := newEngine(t, policies, nil)
	for round := range 2 {
		for _, cmd := range cmds {
			req := &Request{Tool: tool("Bash", map[string]any{"command": cmd}), WorkingDirectory: dir, Mode: ModeAuto}
			// The subjects kept with the analysis are those the call's
			// own rules.Call gives.
			c := warm.analyse(t.Context(), req, warm.policies[DefaultPolicy])
			if c.subjects == nil || !reflect.DeepEqual(c.subjects, rules.ShellSubjects(&c.rc)) {
				t.Errorf("round %d, %q: the remembered rule subjects are not the call's", round, cmd)
			}
			want := mustCheck(t, newEngine(t, policies, nil), req)
			got := mustCheck(t, warm, req)
			if got.Decision != want.Decision || got.Source != want.Source || got.MatchedRule != want.MatchedRule || got.Reason != want.Reason {
				t.Errorf("round %d, %q: %s by %s (%q, %s); a fresh engine: %s by %s (%q, %s)", round, cmd,
					got.Decision, got.Source, got.MatchedRule, got.Reason, want.Decision, want.Source, want.MatchedRule, want.Reason)
			}
		}
	}
}

// A short line with a large analysis (hundreds of commands) is not kept:
// entries are bounded in bytes, not only their keys.
func TestAnalyzeMemoBoundsEntries(t *testing.T) {
	e := newEngine(t, nil, nil)
	for _, cmd := range []string{strings.Repeat("a|b;", 250), strings.Repeat("$(a) ", 200), strings.Repeat("x ", 500)} {
		if len(cmd) > maxAnalysisKey {
			t.Fatalf("%d bytes: the case must test the entry bound, not the key bound", len(cmd))
		}
		a := e.analyze(t.Context(), cmd)
		if _, ok := e.analyses.Get(cmd); ok {
			t.Errorf("%.20q... (%d commands, about %d bytes) was kept", cmd, len(a.Commands), a.bytes(cmd))
		}
	}
}
