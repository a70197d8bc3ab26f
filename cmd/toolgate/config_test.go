package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/toolgate/toolgate/app"
)

// TestConfigLayersGolden runs validate and config show on a team's policy
// file that adds rules, imports Claude Code settings, removes built-in
// rules in one policy and starts another from nothing: validate must
// report each removal, and show must print every layer, each rule marked
// with where it came from. Paths are printed relative to the package
// directory so that the golden files hold on any machine.
func TestConfigLayersGolden(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	input := filepath.Join("testdata", "config", "team.yaml")
	for _, tt := range []struct {
		golden string
		args   []string
	}{
		{"validate.golden", []string{"validate", input}},
		{"show.golden", []string{"config", "show", "--config", input}},
	} {
		t.Run(tt.golden, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := run(t.Context(), tt.args, &out, &errOut); code != 0 || errOut.Len() > 0 {
				t.Fatalf("exit %d: %s", code, errOut.String())
			}
			got := strings.ReplaceAll(out.String(), wd+string(filepath.Separator), "")
			path := filepath.Join("testdata", "config", tt.golden)
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("output differs from %s (run with -update after checking it):\n%s", path, got)
			}
			if tt.args[0] != "config" {
				return
			}
			// What show prints loads back to the same policies, removals
			// and extends: none included, with no warning lost.
			shown := filepath.Join(t.TempDir(), "shown.yaml")
			if err := os.WriteFile(shown, out.Bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
			again, err := app.LoadConfig(shown)
			if err != nil {
				t.Fatalf("show output does not load: %v", err)
			}
			orig, err := app.LoadConfig(input)
			if err != nil {
				t.Fatal(err)
			}
			for name, p := range orig.File.Policies {
				q := again.File.Policies[name]
				p.ClaudeSettings, q.ClaudeSettings = "", ""
				a, _ := yaml.Marshal(p)
				b, _ := yaml.Marshal(q)
				if string(a) != string(b) {
					t.Errorf("policy %s changed in the round trip:\n%s\n%s", name, a, b)
				}
			}
			_, w1, err1 := orig.NewEngine("", nil)
			_, w2, err2 := again.NewEngine("", nil)
			if err1 != nil || err2 != nil || len(w1) != len(w2) {
				t.Errorf("warnings %q, after the round trip %q (%v %v)", w1, w2, err1, err2)
			}
		})
	}
}
