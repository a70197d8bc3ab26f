package server

import (
	"context"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/toolgate/toolgate/engine"
	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// categoryClassifier answers every call with one verdict naming a
// category.
type categoryClassifier struct{ v engine.Verdict }

func (c categoryClassifier) Classify(context.Context, *engine.ClassifyInput) (engine.Verdict, error) {
	return c.v, nil
}

// TestCategoryReachesResponseAndLog: the category a verdict names, its
// kind and the cached part of the input reach the response and the
// decision log (and so the audit log, which writes the same fields), and
// the category the decision record a centre keeps.
func TestCategoryReachesResponseAndLog(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	cls := categoryClassifier{engine.Verdict{Decision: engine.Deny, Reason: "deploys to production", Details: &engine.ClassifierDetails{
		Backend: "b", Model: "m", Stage: "single", InputTokens: 7000, CachedInputTokens: 6800, OutputTokens: 40,
		Category: "production_deploy", CategoryKind: "soft_deny"}}}
	rec := &recorded{}
	eng, err := engine.New(engine.Config{Classifier: cls})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(DefaultConfig(), eng, zap.New(core), WithRecorder(rec))
	if err != nil {
		t.Fatal(err)
	}
	env := serveEnv(t, srv)
	resp, err := env.client.Check(t.Context(), checkReq(t, "cat-1", "mcp__test__deploy", nil))
	if err != nil {
		t.Fatal(err)
	}
	ci := resp.GetClassifier()
	if resp.GetDecision() != pb.Decision_DECISION_DENY || ci.GetCategory() != "production_deploy" || ci.GetCategoryKind() != "soft_deny" ||
		ci.GetCachedInputTokens() != 6800 || ci.GetInputTokens() != 7000 {
		t.Fatalf("response %v", resp)
	}
	rec.mu.Lock()
	if len(rec.recs) != 1 || rec.recs[0].GetClassifierCategory() != "production_deploy" {
		t.Errorf("decision records %v", rec.recs)
	}
	rec.mu.Unlock()
	decisions := logs.FilterMessage("decision").AllUntimed()
	if len(decisions) != 1 {
		t.Fatalf("%d decision lines", len(decisions))
	}
	f := decisions[0].ContextMap()
	for k, want := range map[string]any{"classifier_category": "production_deploy", "classifier_category_kind": "soft_deny", "classifier_cached_input_tokens": int64(6800)} {
		if f[k] != want {
			t.Errorf("decision log %s = %v (%T), want %v", k, f[k], f[k], want)
		}
	}
}
