package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// explainProject is a project directory with a config file of its own
// inside it (which no agent may edit) and the README's example rules.
func explainProject(t *testing.T) (dir, cfg string) {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "src", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg = filepath.Join(dir, "toolgate.yaml")
	yaml := `policies:
  default:
    permissions:
      deny: ["Bash(rm -rf *)"]
      ask: ["Bash(git push *)"]
      allow: ["Bash(npm run test:*)", "Edit(src/*.go)"]
`
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, cfg
}

// explainJSON runs toolgate explain --json and decodes what it prints.
func explainJSON(t *testing.T, args ...string) (int, explanation) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(t.Context(), append([]string{"explain", "--json", "--home", "/nonexistent-home"}, args...), &out, &errOut)
	if code == exitError {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var ex explanation
	dec := json.NewDecoder(&out)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ex); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	return code, ex
}

func stageNamed(t *testing.T, ex explanation, name string) (verdict, decision, why string) {
	t.Helper()
	for _, s := range ex.Stages {
		if s.Name == name {
			return s.Verdict, s.Decision, s.Why
		}
	}
	t.Fatalf("no stage %q in %+v", name, ex.Stages)
	return
}

func nearMiss(ex explanation, rule string) (explainedRule, bool) {
	for _, r := range ex.Rules.NearMisses {
		if r.Rule == rule {
			return r, true
		}
	}
	return explainedRule{}, false
}

func TestExplainCmd(t *testing.T) {
	dir, cfg := explainProject(t)
	call := func(tool, input string, more ...string) []string {
		return append([]string{"--config", cfg, "--cwd", dir, "--tool", tool, "--input", input}, more...)
	}
	bash := func(cmd string, more ...string) []string {
		in, _ := json.Marshal(map[string]string{"command": cmd})
		return call("Bash", string(in), more...)
	}

	t.Run("allow: Read in the project", func(t *testing.T) {
		code, ex := explainJSON(t, call("Read", `{"file_path":"`+filepath.Join(dir, "main.go")+`"}`)...)
		if code != exitAllow || ex.Decision != "allow" || ex.Source != "safe_tool" {
			t.Fatalf("exit %d, %+v", code, ex)
		}
		if v, d, _ := stageNamed(t, ex, "safe tools"); v != "decided" || d != "allow" {
			t.Errorf("safe tools: %s %s", v, d)
		}
		if v, _, _ := stageNamed(t, ex, "classifier"); v != "not reached" {
			t.Errorf("classifier: %s", v)
		}
		if ex.Facts == nil || ex.Facts.Reads == nil || !ex.Facts.Reads.Proven || !slices.Contains(ex.Facts.Paths, filepath.Join(dir, "main.go")) {
			t.Errorf("facts %+v", ex.Facts)
		}
	})
	t.Run("deny: deny rule", func(t *testing.T) {
		code, ex := explainJSON(t, bash("rm -rf build")...)
		if code != exitDeny || ex.MatchedRule != "Bash(rm -rf *)" {
			t.Fatalf("exit %d, %+v", code, ex)
		}
		if len(ex.Rules.Matched) != 1 || ex.Rules.Matched[0].List != "deny" || ex.Rules.Matched[0].Subject != "rm -rf build" {
			t.Errorf("matched %+v", ex.Rules.Matched)
		}
	})
	t.Run("deny: the config file is guarded", func(t *testing.T) {
		code, ex := explainJSON(t, call("Edit", `{"file_path":"`+cfg+`","old_string":"a","new_string":"b"}`, "--mode", "bypass")...)
		if code != exitDeny || ex.Facts == nil || ex.Facts.Guarded == "" {
			t.Fatalf("exit %d, %+v", code, ex)
		}
		if v, _, why := stageNamed(t, ex, "deny rules"); v != "decided" || why != ex.Facts.Guarded {
			t.Errorf("deny rules: %s %q", v, why)
		}
	})
	t.Run("ask: ask rule", func(t *testing.T) {
		code, ex := explainJSON(t, bash("git push origin main")...)
		if code != exitAsk || ex.MatchedRule != "Bash(git push *)" {
			t.Fatalf("exit %d, %+v", code, ex)
		}
		if v, _, why := stageNamed(t, ex, "deny rules"); v != "passed" || !strings.Contains(why, "no deny rule matches") {
			t.Errorf("deny rules: %s %q", v, why)
		}
	})
	t.Run("ask: the mode asks", func(t *testing.T) {
		code, ex := explainJSON(t, bash("make build", "--mode", "default")...)
		if code != exitAsk || ex.Source != "mode" {
			t.Fatalf("exit %d, %+v", code, ex)
		}
		if v, d, _ := stageNamed(t, ex, "default and accept-edits modes"); v != "decided" || d != "ask" {
			t.Errorf("mode stage: %s %s", v, d)
		}
		if _, _, why := stageNamed(t, ex, "shell analysis"); !strings.Contains(why, "not known to be read-only") {
			t.Errorf("shell analysis passed because %q", why)
		}
	})
	t.Run("near miss: Bash(npm run test:*) and npm run test:unit", func(t *testing.T) {
		code, ex := explainJSON(t, bash("npm run test:unit")...)
		if code != exitAsk || ex.Source != "no_classifier" {
			t.Fatalf("exit %d, %+v", code, ex)
		}
		// No classifier: the classifier stage decides, and says so.
		if v, d, why := stageNamed(t, ex, "classifier"); v != "decided" || d != "ask" || !strings.Contains(why, "no classifier is configured") {
			t.Errorf("classifier: %s %s %q", v, d, why)
		}
		if ex.ClassifierNotCalled != "" {
			t.Errorf("classifier_not_called %q for a config without a classifier", ex.ClassifierNotCalled)
		}
		r, ok := nearMiss(ex, "Bash(npm run test:*)")
		if !ok || r.List != "allow" || r.Subject != "npm run test:unit" ||
			!strings.Contains(r.Why, `matches "npm run test" alone or followed by a space`) || !strings.Contains(r.Why, `runs on into "test:unit"`) {
			t.Errorf("near miss %+v (found %v)", r, ok)
		}
		if !slices.Equal(ex.Rules.AllowUncovered, []string{"npm run test:unit"}) {
			t.Errorf("allow_uncovered %q", ex.Rules.AllowUncovered)
		}
	})
	t.Run("near miss: a path rule's directory", func(t *testing.T) {
		target := filepath.Join(dir, "src", "sub", "x.go")
		_, ex := explainJSON(t, call("Edit", `{"file_path":"`+target+`","old_string":"a","new_string":"b"}`, "--mode", "default")...)
		r, ok := nearMiss(ex, "Edit(src/*.go)")
		if !ok || r.Subject != target || !strings.Contains(r.Why, "stay within one path segment") {
			t.Errorf("near miss %+v (found %v)", r, ok)
		}
	})
	t.Run("a config with a classifier", func(t *testing.T) {
		withCls := filepath.Join(t.TempDir(), "cls.yaml")
		yaml := "policies:\n  default: {}\nclassifier:\n  backends:\n    - {name: main, base_url: \"http://127.0.0.1:1/v1\", model: m}\n"
		if err := os.WriteFile(withCls, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		_, ex := explainJSON(t, "--config", withCls, "--cwd", dir, "--tool", "Bash", "--input", `{"command":"make build"}`)
		if ex.Source != "no_classifier" || !strings.Contains(ex.ClassifierNotCalled, "calls no model") {
			t.Errorf("%s: classifier_not_called %q", ex.Source, ex.ClassifierNotCalled)
		}
	})
}

// TestExplainJSONKeys: the JSON's keys are a stable contract.
func TestExplainJSONKeys(t *testing.T) {
	dir, cfg := explainProject(t)
	var out, errOut bytes.Buffer
	run(t.Context(), []string{"explain", "--json", "--config", cfg, "--cwd", dir, "--tool", "Bash", "--input", `{"command":"npm run test:unit"}`}, &out, &errOut)
	var m map[string]any
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		t.Fatalf("%v: %s %s", err, out.String(), errOut.String())
	}
	keys := func(v any) []string {
		mm, _ := v.(map[string]any)
		var ks []string
		for k := range mm {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		return ks
	}
	for _, tc := range []struct {
		what string
		v    any
		want []string
	}{
		{"top", m, []string{"decision", "facts", "policy", "policy_version", "reason", "rules", "source", "stages"}},
		{"stage", m["stages"].([]any)[9], []string{"decision", "name", "verdict", "why"}},
		{"rules", m["rules"], []string{"allow_uncovered", "matched", "near_misses"}},
		{"near miss", m["rules"].(map[string]any)["near_misses"].([]any)[0], []string{"index", "list", "rule", "subject", "why"}},
		{"facts", m["facts"], []string{"kind", "mode", "notes", "policy", "reads", "shell", "tool", "working_directory"}},
		{"shell", m["facts"].(map[string]any)["shell"], []string{"commands", "read_only", "runs_in", "why_not"}},
	} {
		if got := keys(tc.v); !slices.Equal(got, tc.want) {
			t.Errorf("%s keys %q, want %q", tc.what, got, tc.want)
		}
	}
}

// TestExplainText: the text for people has every stage, the facts and the
// near miss with its reason.
func TestExplainText(t *testing.T) {
	dir, cfg := explainProject(t)
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"explain", "--config", cfg, "--cwd", dir, "--tool", "Bash", "--input", `{"command":"npm run test:unit"}`}, &out, &errOut)
	if code != exitAsk {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{"decision: ASK (no_classifier)", "   1 deny rules", "  10 classifier                      ASK",
		"    command: npm run test:unit", "rules that nearly match:\n  allow Bash(npm run test:*)  (on \"npm run test:unit\")"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestExplainCmdErrors(t *testing.T) {
	for _, args := range [][]string{
		{"explain"},
		{"explain", "--tool", "Bash", "--mode", "yolo"},
		{"explain", "--tool", "Bash", "--input", "[1]"},
		{"explain", "--tool", "Bash", "--input", `{"command":"a","command":"b"}`},
		{"explain", "--tool", "Bash", "--policy", "nosuch"},
		{"explain", "--tool", "Bash", "--config", "/nonexistent.yaml"},
	} {
		var out, errOut bytes.Buffer
		if code := run(t.Context(), args, &out, &errOut); code != exitError || !strings.Contains(errOut.String(), "toolgate explain:") {
			t.Errorf("%q: exit %d, stderr %q", args, code, errOut.String())
		}
	}
}

// eval --explain ID explains one corpus case, in its fixture, and says
// whether the decision meets its label.
func TestEvalExplain(t *testing.T) {
	corpus := filepath.Join(t.TempDir(), "c.jsonl")
	line := `{"id":"near","tool":"Bash","input":{"command":"npm run test:unit"},"cwd":"/home/dev/project","rules":{"allow":["Bash(npm run test:*)"]},"expect":"allow","note":"the README's rule"}` + "\n"
	if err := os.WriteFile(corpus, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"eval", "--explain", "near", "--json", corpus}, &out, &errOut)
	if code != 1 { // labeled allow, and asked
		t.Fatalf("exit %d, want 1: %s", code, errOut.String())
	}
	var ex explanation
	if err := json.Unmarshal(out.Bytes(), &ex); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if ex.Case == nil || ex.Case.ID != "near" || ex.Case.Meets || ex.Decision != "ask" {
		t.Fatalf("%+v %+v", ex.Case, ex)
	}
	if _, ok := nearMiss(ex, "Bash(npm run test:*)"); !ok {
		t.Errorf("no near miss: %+v", ex.Rules)
	}
	out.Reset()
	if code := run(t.Context(), []string{"eval", "--explain", "nosuch", corpus}, &out, &errOut); code != 2 {
		t.Errorf("unknown id: exit %d", code)
	}
}
