package eval

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/engine"
)

// TestExplainAgreesWithCheck: for every case of the corpus, the classifier
// part included, Explain's decision is Check's, so that an explanation
// can never describe another decision than the real one; and its trace
// names the stage that decided.
func TestExplainAgreesWithCheck(t *testing.T) {
	top, _ := filepath.Glob("../testdata/corpus/*.jsonl")
	cls, _ := filepath.Glob("../testdata/corpus/classifier/*.jsonl")
	paths := slices.Concat(top, cls)
	if len(top) == 0 || len(cls) == 0 {
		t.Fatal("no corpus files")
	}
	cases, err := Load(paths...)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	eng, _, err := cfg.NewEngine(config.Runtime{Home: "/home/dev"})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	err = Explain(t.Context(), eng, cases, func(c Case, req *engine.Request, res engine.Result, tr *engine.Trace) error {
		n++
		want, err := eng.Check(t.Context(), req)
		if err != nil {
			return err
		}
		if res.Decision != want.Decision || res.Source != want.Source || res.Reason != want.Reason || res.MatchedRule != want.MatchedRule {
			t.Errorf("%s (%s): Explain %v/%v %q, Check %v/%v %q", c.Where, c.ID, res.Decision, res.Source, res.Reason, want.Decision, want.Source, want.Reason)
		}
		decided := 0
		for _, s := range tr.Stages {
			if s.Verdict == engine.StageDecided {
				decided++
				if s.Decision != res.Decision.String() {
					t.Errorf("%s (%s): stage %s decided %s, the result is %v", c.Where, c.ID, s.Name, s.Decision, res.Decision)
				}
			}
		}
		if decided != 1 || tr.Facts == nil {
			t.Errorf("%s (%s): %d stages decided; facts %v", c.Where, c.ID, decided, tr.Facts != nil)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != len(cases) {
		t.Fatalf("explained %d of %d cases", n, len(cases))
	}
	t.Logf("%d cases explained", n)
}
