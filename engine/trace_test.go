package engine

import (
	"path/filepath"
	"strings"
	"testing"
)

// explain runs Explain and checks what every traced check must hold: its
// result is Check's, every stage of the table is listed once in order,
// exactly one decided (the last one reached), with the result's decision.
func explain(t *testing.T, e *Engine, req *Request) (Result, *Trace) {
	t.Helper()
	want := mustCheck(t, e, req)
	res, tr, err := e.Explain(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Decision != want.Decision || res.Source != want.Source || res.Reason != want.Reason || res.MatchedRule != want.MatchedRule {
		t.Fatalf("Explain decided %v/%v %q, Check %v/%v %q", res.Decision, res.Source, res.Reason, want.Decision, want.Source, want.Reason)
	}
	if len(tr.Stages) != len(stages) {
		t.Fatalf("%d stages traced, the table has %d", len(tr.Stages), len(stages))
	}
	decided := -1
	for i, s := range tr.Stages {
		if s.Name != stages[i].name {
			t.Errorf("stage %d is %q, the table says %q", i, s.Name, stages[i].name)
		}
		switch s.Verdict {
		case StageDecided:
			if decided >= 0 {
				t.Errorf("stages %d and %d both decided", decided, i)
			}
			decided = i
			if s.Decision != res.Decision.String() || s.Why != res.Reason && !strings.HasPrefix(res.Reason, s.Why) {
				t.Errorf("stage %s decided %s %q; the result is %v %q", s.Name, s.Decision, s.Why, res.Decision, res.Reason)
			}
		case StagePassed:
			if decided >= 0 {
				t.Errorf("stage %s passed after stage %d decided", s.Name, decided)
			}
			if s.Why == "" {
				t.Errorf("stage %s passed without saying why", s.Name)
			}
		case StageNotReached:
			if decided < 0 {
				t.Errorf("stage %s not reached, but no stage before it decided", s.Name)
			}
		default:
			t.Errorf("stage %s: verdict %q", s.Name, s.Verdict)
		}
	}
	if decided < 0 {
		t.Fatalf("no stage decided: %+v", tr.Stages)
	}
	return res, tr
}

func stageOf(t *testing.T, tr *Trace, name string) StageTrace {
	t.Helper()
	for _, s := range tr.Stages {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no stage %q", name)
	return StageTrace{}
}

func TestExplain(t *testing.T) {
	l := newLayout(t)
	guardedFile := filepath.Join(l.app, "toolgate.yaml")
	writeFile(t, guardedFile, "policies: {}\n")
	e, err := New(Config{Policies: policyOf(PolicySpec{Permissions: RuleSet{
		Deny:  []string{"Bash(rm -rf *)"},
		Ask:   []string{"Bash(git push *)"},
		Allow: []string{"Bash(npm run test:*)", "Edit(sub/*.go)"},
	}}), Guarded: []string{guardedFile}})
	if err != nil {
		t.Fatal(err)
	}
	req := func(tc ToolCall, m Mode) *Request {
		return &Request{Tool: tc, WorkingDirectory: l.app, Mode: m}
	}

	t.Run("allow: Read in the project", func(t *testing.T) {
		res, tr := explain(t, e, req(readFile(filepath.Join(l.app, "main.go")), ModeAuto))
		if res.Decision != Allow || stageOf(t, tr, "safe tools").Verdict != StageDecided {
			t.Fatalf("%v %+v", res, tr.Stages)
		}
		if r := tr.Facts.Reads; r == nil || !r.Checked || !r.Proven {
			t.Errorf("reads %+v, want proven", r)
		}
		if got := stageOf(t, tr, "bypass mode").Why; got != "the mode is auto, not bypass" {
			t.Errorf("bypass mode passed because %q", got)
		}
	})
	t.Run("deny: deny rule", func(t *testing.T) {
		res, tr := explain(t, e, req(bashCmd("rm -rf build"), ModeAuto))
		if res.Decision != Deny || stageOf(t, tr, "deny rules").Verdict != StageDecided {
			t.Fatalf("%v", res)
		}
		if len(tr.Rules.Rules) == 0 || !tr.Rules.Rules[0].Matched || tr.Rules.Rules[0].Rule != "Bash(rm -rf *)" || tr.Rules.Rules[0].Subject != "rm -rf build" {
			t.Errorf("rules %+v", tr.Rules.Rules)
		}
		if stageOf(t, tr, "classifier").Verdict != StageNotReached {
			t.Error("the classifier is listed as reached")
		}
	})
	t.Run("deny: guarded file", func(t *testing.T) {
		res, tr := explain(t, e, req(editFile(guardedFile), ModeBypass))
		if res.Decision != Deny || tr.Facts.Guarded == "" || stageOf(t, tr, "deny rules").Why != tr.Facts.Guarded {
			t.Fatalf("%v; guarded %q", res, tr.Facts.Guarded)
		}
	})
	t.Run("ask: ask rule", func(t *testing.T) {
		res, tr := explain(t, e, req(bashCmd("git push origin main"), ModeAuto))
		if res.Decision != Ask || stageOf(t, tr, "ask rules").Verdict != StageDecided {
			t.Fatalf("%v", res)
		}
		if got := stageOf(t, tr, "deny rules").Why; !strings.Contains(got, "no deny rule matches") {
			t.Errorf("deny rules passed because %q", got)
		}
	})
	t.Run("ask: default mode", func(t *testing.T) {
		res, tr := explain(t, e, req(bashCmd("make build"), ModeDefault))
		if res.Decision != Ask || res.Source != SourceMode || stageOf(t, tr, "default and accept-edits modes").Verdict != StageDecided {
			t.Fatalf("%v", res)
		}
		if got := stageOf(t, tr, "shell analysis").Why; !strings.Contains(got, "not known to be read-only") {
			t.Errorf("shell analysis passed because %q", got)
		}
		if tr.Facts.Shell == nil || tr.Facts.Shell.ReadOnly || tr.Facts.Shell.Commands[0] != "make build" {
			t.Errorf("shell facts %+v", tr.Facts.Shell)
		}
	})
	t.Run("no classifier", func(t *testing.T) {
		res, tr := explain(t, e, req(bashCmd("npm run test:unit"), ModeAuto))
		if res.Source != SourceNoClassifier || stageOf(t, tr, "classifier").Verdict != StageDecided {
			t.Fatalf("%v", res)
		}
		if got := stageOf(t, tr, "classifier").Why; !strings.Contains(got, "no classifier is configured") {
			t.Errorf("classifier: %q", got)
		}
		if got := stageOf(t, tr, "allow rules").Why; !strings.Contains(got, `no allow rule vouches for "npm run test:unit"`) {
			t.Errorf("allow rules passed because %q", got)
		}
		var near bool
		for _, r := range tr.Rules.Rules {
			near = near || r.NearMiss && r.Rule == "Bash(npm run test:*)" && strings.Contains(r.Why, "prefix form")
		}
		if !near {
			t.Errorf("no near miss of Bash(npm run test:*): %+v", tr.Rules.Rules)
		}
	})
	t.Run("path near miss", func(t *testing.T) {
		_, tr := explain(t, e, req(editFile(filepath.Join(l.app, "sub", "deep", "x.go")), ModeDefault))
		var near bool
		for _, r := range tr.Rules.Rules {
			near = near || r.NearMiss && r.Rule == "Edit(sub/*.go)" && strings.Contains(r.Why, "stay within one path segment")
		}
		if !near {
			t.Errorf("no near miss of Edit(sub/*.go): %+v", tr.Rules.Rules)
		}
	})
}

// TestExplainOnPool: a traced check through the pool is decided and traced
// as one run inline.
func TestExplainOnPool(t *testing.T) {
	l := newLayout(t)
	pool := NewPool(2)
	defer pool.Close()
	e, err := New(Config{Pool: pool})
	if err != nil {
		t.Fatal(err)
	}
	_, tr := explain(t, e, &Request{Tool: readFile(filepath.Join(l.app, "main.go")), WorkingDirectory: l.app})
	if tr.Facts == nil || stageOf(t, tr, "safe tools").Verdict != StageDecided {
		t.Fatalf("%+v", tr)
	}
}

// TestPassWhyCoversStages: every local stage can say why it passed.
func TestPassWhyCoversStages(t *testing.T) {
	for _, s := range stages[:len(stages)-1] {
		if passWhy[s.name] == nil {
			t.Errorf("stage %q has no passWhy", s.name)
		}
	}
}
