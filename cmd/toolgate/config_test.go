package main

import (
	"bytes"
	"fmt"
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

// TestConfigShowInForce: config show prints the value in force of every
// setting, never null (a setting left unset shows its default), and a
// setting the file writes as it is written.
func TestConfigShowInForce(t *testing.T) {
	off := filepath.Join(t.TempDir(), "toolgate.yaml")
	if err := os.WriteFile(off, []byte("classifier:\n  coalesce: false\n  cache: {enabled: false}\npolicies:\n  default: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(t.TempDir(), "toolgate.yaml")
	if err := os.WriteFile(plain, []byte("policies:\n  default: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want bool // coalesce and the cache
	}{
		{[]string{"config", "show"}, true},
		{[]string{"config", "show", "--config", plain}, true},
		{[]string{"config", "show", "--config", off}, false},
	} {
		var out, errOut bytes.Buffer
		if code := run(t.Context(), tc.args, &out, &errOut); code != 0 {
			t.Fatalf("%q: exit %d: %s", tc.args, code, errOut.String())
		}
		var shown yaml.Node
		if err := yaml.Unmarshal(out.Bytes(), &shown); err != nil {
			t.Fatal(err)
		}
		var nulls []string
		walkYAML(&shown, "", func(path string, n *yaml.Node) {
			if n.Tag == "!!null" {
				nulls = append(nulls, path)
			}
		})
		if len(nulls) > 0 {
			t.Errorf("%q shows null for %q: not what is in force", tc.args, nulls)
		}
		var got struct {
			Classifier struct {
				Coalesce *bool `yaml:"coalesce"`
				Cache    struct {
					Enabled *bool `yaml:"enabled"`
				} `yaml:"cache"`
			} `yaml:"classifier"`
		}
		if err := yaml.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		if c, e := got.Classifier.Coalesce, got.Classifier.Cache.Enabled; c == nil || e == nil || *c != tc.want || *e != tc.want {
			t.Errorf("%q: classifier.coalesce %v, classifier.cache.enabled %v; want both %v", tc.args, c, e, tc.want)
		}
	}
}

// walkYAML calls f on every scalar under n with its path.
func walkYAML(n *yaml.Node, path string, f func(string, *yaml.Node)) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			walkYAML(c, path, f)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			walkYAML(n.Content[i+1], path+"."+n.Content[i].Value, f)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			walkYAML(c, fmt.Sprintf("%s[%d]", path, i), f)
		}
	case yaml.ScalarNode:
		f(path, n)
	}
}
