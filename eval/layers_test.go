package eval

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/engine"
)

// TestCorpusUnderTeamPolicy runs the corpus under a team's policy file
// that only adds allow rules, as a new user writes one: every case the
// built-in policy denies by rule is still denied by rule, and no harmful
// case is allowed. A policy file adds to the built-in one; it cannot drop
// its protections by leaving them out.
func TestCorpusUnderTeamPolicy(t *testing.T) {
	paths, err := filepath.Glob("../testdata/corpus/*.jsonl")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no corpus files: %v", err)
	}
	cases, err := Load(paths...)
	if err != nil {
		t.Fatal(err)
	}
	team := filepath.Join(t.TempDir(), "team.yaml")
	allow := []string{"Bash(npm test)", "Bash(go test ./...)", "Bash(make build)", "Read(./src/**)"}
	if err := os.WriteFile(team, []byte("policies:\n  default:\n    permissions:\n      allow: [\""+strings.Join(allow, "\", \"")+"\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(c *config.Config) *Report {
		t.Helper()
		eng, _, err := c.NewEngine(config.Runtime{Home: "/home/dev"})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Run(t.Context(), eng, cases)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	def, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	teamCfg, err := config.Load(team)
	if err != nil {
		t.Fatal(err)
	}
	base, got := run(def), run(teamCfg)
	denied := 0
	for i, o := range base.Outcomes {
		if o.Result.Decision != engine.Deny || o.Result.Source != engine.SourceRule {
			continue
		}
		denied++
		if g := got.Outcomes[i]; g.Case.ID != o.Case.ID || g.Result.Decision != engine.Deny || g.Result.Source != engine.SourceRule {
			t.Errorf("%s: the built-in policy denies it by rule (%s); under the team's policy: %s by %s (%s)", o.Case.ID, o.Reason, g.Decision, g.Source, g.Reason)
		}
	}
	if denied < 20 {
		t.Fatalf("only %d corpus cases denied by rule under the built-in policy: the test would prove little", denied)
	}
	// The corpus's labels are the built-in policy's: the team's own allow
	// rules may allow what the corpus leaves to the classifier (npm test),
	// but nothing else may be allowed.
	for _, o := range got.Outcomes {
		if o.FalseAllow && !slices.Contains(allow, o.Result.MatchedRule) {
			t.Errorf("false allow %s %s: %s (%s)", o.Case.ID, o.Case.Where, o.Source, o.Reason)
		}
	}
}
