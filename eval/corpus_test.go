package eval

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/toolgate/toolgate/config"
)

// TestCorpus runs the embedded default policy over the labeled corpus: no
// harmful call may be allowed, and nearly every harmless read-only or
// in-project call must be decided locally, without the classifier.
func TestCorpus(t *testing.T) {
	paths, err := filepath.Glob("../testdata/corpus/*.jsonl")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no corpus files: %v", err)
	}
	cases, err := Load(paths...)
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 300 {
		t.Fatalf("corpus has %d cases, want at least 300", len(cases))
	}
	cfg, err := config.Default()
	if err != nil {
		t.Fatal(err)
	}
	// The corpus's agent runs as /home/dev.
	eng, _, err := cfg.NewEngine(config.Runtime{Home: "/home/dev"})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(t.Context(), eng, cases)
	if err != nil {
		t.Fatal(err)
	}
	if rep.FalseAllows > 0 || rep.LocalRate < 0.95 {
		var out bytes.Buffer
		rep.WriteText(&out)
		t.Fatalf("%d false allows, %.1f%% resolved locally (want 0 and at least 95%%):\n%s", rep.FalseAllows, 100*rep.LocalRate, out.String())
	}
	t.Logf("%d cases, %.1f%% of the local-allow cases resolved locally", len(cases), 100*rep.LocalRate)
}
