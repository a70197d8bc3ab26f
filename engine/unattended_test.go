package engine

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
)

// unattendedCase is one way a check can end in a decision, with the
// engine and request that reach it.
type unattendedCase struct {
	name string
	// engine builds the engine from the default policy's spec (the
	// unattended setting under test); req is the call.
	engine func(t *testing.T, spec PolicySpec) *Engine
	req    func(l layout) *Request
	want   want
}

func unattendedCases() []unattendedCase {
	plain := func(cl Classifier) func(*testing.T, PolicySpec) *Engine {
		return func(t *testing.T, spec PolicySpec) *Engine { return newEngine(t, policyOf(spec), cl) }
	}
	onUnavailableAsk := func(cl Classifier) func(*testing.T, PolicySpec) *Engine {
		return func(t *testing.T, spec PolicySpec) *Engine {
			e, err := New(Config{Policies: policyOf(spec), Classifier: cl, OnClassifierUnavailable: Ask})
			if err != nil {
				t.Fatal(err)
			}
			return e
		}
	}
	withRules := func(r RuleSet) func(*testing.T, PolicySpec) *Engine {
		return func(t *testing.T, spec PolicySpec) *Engine {
			spec.Permissions = r
			return newEngine(t, policyOf(spec), nil)
		}
	}
	deploy := func(l layout) *Request { return &Request{Tool: bashCmd("make deploy"), WorkingDirectory: l.app} }
	return []unattendedCase{
		{"ask rule", withRules(RuleSet{Ask: []string{"Bash(git push *)"}}),
			func(l layout) *Request {
				return &Request{Tool: bashCmd("git push origin main"), WorkingDirectory: l.app}
			},
			want{d: Ask, s: SourceRule, rule: "Bash(git push *)"}},
		{"default mode", plain(nil),
			func(l layout) *Request {
				return &Request{Tool: bashCmd("make build"), WorkingDirectory: l.app, Mode: ModeDefault}
			}, want{d: Ask, s: SourceMode}},
		{"bypass mode on a protected path", plain(nil),
			func(l layout) *Request {
				return &Request{Tool: tool("Edit", map[string]any{"file_path": filepath.Join(l.app, ".git", "config"), "old_string": "a", "new_string": "b"}),
					WorkingDirectory: l.app, Mode: ModeBypass}
			}, want{d: Ask, s: SourceMode}},
		{"no classifier", plain(nil), deploy, want{d: Ask, s: SourceNoClassifier}},
		{"classifier asks", plain(&fakeClassifier{verdict: Verdict{Decision: Ask, Reason: "too many blocks"}}), deploy,
			want{d: Ask, s: SourceClassifier, reason: "too many blocks"}},
		{"cached ask", plain(&fakeClassifier{verdict: Verdict{Decision: Ask, Reason: "too many blocks", Cached: true}}), deploy,
			want{d: Ask, s: SourceCache, reason: "too many blocks"}},
		{"classifier fails, on_unavailable ask", onUnavailableAsk(&fakeClassifier{err: errors.New("HTTP 503")}), deploy,
			want{d: Ask, s: SourceClassifierUnavailable, reason: "HTTP 503"}},
		{"upstream fails, on_unavailable ask",
			onUnavailableAsk(&fakeClassifier{err: &ClassifierError{Err: errors.New("refused"), Reason: "upstream 10.0.0.1:50051: Unavailable", Source: SourceUpstreamUnavailable}}),
			deploy, want{d: Ask, s: SourceUpstreamUnavailable, reason: "Unavailable"}},
		{"upstream has no classifier", plain(&fakeClassifier{verdict: Verdict{Decision: Ask, Source: SourceNoClassifier, Reason: "the upstream has none"}}), deploy,
			want{d: Ask, s: SourceNoClassifier, reason: "the upstream has none"}},
		// Never changed.
		{"safe tool allows", plain(nil),
			func(l layout) *Request {
				return &Request{Tool: tool("Read", map[string]any{"file_path": filepath.Join(l.app, "main.go")}), WorkingDirectory: l.app}
			}, allowSafe},
		{"classifier allows", plain(&fakeClassifier{verdict: Verdict{Decision: Allow, Reason: "fine"}}), deploy,
			want{d: Allow, s: SourceClassifier, reason: "fine"}},
		{"deny rule", withRules(RuleSet{Deny: []string{"Bash(make deploy)"}}), deploy, want{d: Deny, s: SourceRule, rule: "Bash(make deploy)"}},
		{"classifier fails", plain(&fakeClassifier{err: errors.New("HTTP 503")}), deploy, want{d: Deny, s: SourceClassifierUnavailable}},
	}
}

// TestUnattendedAsk: for an unattended check, every ASK, whichever stage
// asked, becomes the policy's unattended.on_ask (deny by default), the
// source and matched rule kept and the reason saying nobody could answer
// and who asked; ALLOW and DENY are never changed; an attended check is
// decided as before; with on_ask: ask the ASK stays, with a note.
func TestUnattendedAsk(t *testing.T) {
	l := newLayout(t)
	for _, tc := range unattendedCases() {
		t.Run(tc.name, func(t *testing.T) {
			for _, spec := range []PolicySpec{{}, {Unattended: UnattendedSpec{OnAsk: Deny}}, {Unattended: UnattendedSpec{OnAsk: Ask}}} {
				e := tc.engine(t, spec)
				attended := mustCheck(t, e, tc.req(l))
				tc.want.check(t, attended)
				req := tc.req(l)
				req.Unattended = true
				got := mustCheck(t, e, req)
				switch {
				case tc.want.d != Ask:
					if got != attended {
						t.Fatalf("on_ask %s: unattended %+v, attended %+v: an allow or a deny must not change", spec.Unattended.OnAsk, got, attended)
					}
				case spec.Unattended.OnAsk == Ask:
					want{d: Ask, s: tc.want.s, rule: tc.want.rule, reason: attended.Reason}.check(t, got)
					if !strings.HasSuffix(got.Reason, "(the check is unattended; policy default leaves the question to the client, see unattended.on_ask)") {
						t.Errorf("reason %q: no note of the unattended setting", got.Reason)
					}
				default:
					want{d: Deny, s: tc.want.s, rule: tc.want.rule, reason: attended.Reason}.check(t, got)
					asker := "asked by source " + tc.want.s.String() + ": "
					if tc.want.rule != "" {
						asker = "asked by rule " + tc.want.rule + ": "
					}
					wantReason := "denied because nobody can answer: the check is unattended and policy default denies what would be asked (unattended.on_ask: deny); " + asker + attended.Reason
					if got.Reason != wantReason {
						t.Errorf("reason\n %q\nwant\n %q", got.Reason, wantReason)
					}
				}
				if got.Kind != attended.Kind || got.Policy != attended.Policy || got.Classifier != attended.Classifier {
					t.Errorf("kind, policy or classifier details changed: %+v vs %+v", got, attended)
				}
			}
		})
	}
}

// TestUnattendedCheckLocal: a stream answers what the local stages decide
// through CheckLocal; an unattended ASK is turned there too, as Check
// turns it.
func TestUnattendedCheckLocal(t *testing.T) {
	l := newLayout(t)
	e := newEngine(t, policyOf(PolicySpec{Permissions: RuleSet{Ask: []string{"Bash(git push *)"}}}), nil)
	req := &Request{Tool: bashCmd("git push origin"), WorkingDirectory: l.app, Unattended: true}
	res, decided, err := e.CheckLocal(t.Context(), req)
	if err != nil || !decided {
		t.Fatalf("decided %v, err %v", decided, err)
	}
	want{d: Deny, s: SourceRule, rule: "Bash(git push *)", reason: "nobody can answer"}.check(t, res)
}

// TestUnattendedPolicyByName: the setting is the named policy's.
func TestUnattendedPolicyByName(t *testing.T) {
	l := newLayout(t)
	e := newEngine(t, map[string]PolicySpec{"ci": {Unattended: UnattendedSpec{OnAsk: Ask}}}, nil)
	req := func(policy string) *Request {
		return &Request{Tool: bashCmd("make deploy"), WorkingDirectory: l.app, Unattended: true, Policy: policy}
	}
	want{d: Deny, s: SourceNoClassifier, reason: "policy default denies"}.check(t, mustCheck(t, e, req("")))
	want{d: Ask, s: SourceNoClassifier, reason: "policy ci leaves the question"}.check(t, mustCheck(t, e, req("ci")))
}

// TestUnattendedOnAskValues: only deny and ask are outcomes; allow would
// let an unanswered question run the call.
func TestUnattendedOnAskValues(t *testing.T) {
	for _, d := range []Decision{Allow, Decision(7)} {
		_, err := New(Config{Policies: map[string]PolicySpec{"ci": {Unattended: UnattendedSpec{OnAsk: d}}}})
		if err == nil || !strings.Contains(err.Error(), "policies.ci.unattended.on_ask: must be deny or ask") {
			t.Errorf("on_ask %s: error %v", d, err)
		}
	}
}

// TestUnattendedFileSystem: a check whose local part did not finish asks
// (file_system); unattended, that ask is denied too.
func TestUnattendedFileSystem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stallChecks(t)
		e, pool, dir := poolEngine(t, 2, answerAllow{})
		defer pool.Close()
		req := readReq(dir, "stall/x", ModeAuto)
		req.Unattended = true
		a := <-checkAsync(t.Context(), e, req)
		if a.err != nil {
			t.Fatal(a.err)
		}
		want{d: Deny, s: SourceFileSystem, reason: "asked by source file_system: the file system did not answer within 1s"}.check(t, a.res)
	})
}

// TestUnattendedTrace: explain shows the unattended step after the stages
// of an unattended check (decided when it turned an ask, passed
// otherwise), and none for an attended one.
func TestUnattendedTrace(t *testing.T) {
	l := newLayout(t)
	e := newEngine(t, nil, nil)
	for _, tc := range []struct {
		req      *Request
		verdict  string
		decision string
		why      string
	}{
		{&Request{Tool: bashCmd("make deploy"), WorkingDirectory: l.app, Unattended: true}, StageDecided, "deny", "nobody can answer"},
		{&Request{Tool: tool("Read", map[string]any{"file_path": filepath.Join(l.app, "main.go")}), WorkingDirectory: l.app, Unattended: true},
			StagePassed, "", "the call was not asked about (allow): only an ask changes"},
	} {
		res, tr, err := e.Explain(t.Context(), tc.req)
		if err != nil {
			t.Fatal(err)
		}
		if len(tr.Stages) != len(stages)+1 {
			t.Fatalf("%d steps, want the %d stages and the unattended step", len(tr.Stages), len(stages))
		}
		last := tr.Stages[len(tr.Stages)-1]
		if last.Name != UnattendedStep || last.Verdict != tc.verdict || last.Decision != tc.decision || !strings.Contains(last.Why, tc.why) {
			t.Errorf("last step %+v, want %s %s %q", last, tc.verdict, tc.decision, tc.why)
		}
		if tc.decision != "" {
			if cl := tr.Stages[len(stages)-1]; cl.Verdict != StageDecided || cl.Decision != "ask" || strings.Contains(cl.Why, "nobody") {
				t.Errorf("classifier stage %+v, want the ask it gave", cl)
			}
			if res.Decision != Deny {
				t.Errorf("decision %s", res.Decision)
			}
		}
		tc.req.Unattended = false
		if _, tr, _ := e.Explain(t.Context(), tc.req); len(tr.Stages) != len(stages) {
			t.Errorf("attended: %d steps, want the %d stages", len(tr.Stages), len(stages))
		}
	}
}
