package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestCheckUnattended: toolgate check --unattended, or
// $TOOLGATE_UNATTENDED, marks the check; the flag given wins over the
// environment; the policy's unattended.on_ask decides what the ask
// becomes; a --stream session's checks are marked too.
func TestCheckUnattended(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "toolgate.yaml")
	if err := os.WriteFile(cfg, []byte("policies:\n  default: {}\n  sdk:\n    unattended: {on_ask: ask}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := startServe(t, "--config", cfg)
	call := []string{"--tool", "Bash", "--input", `{"command":"make"}`, "--cwd", dir}
	for _, tc := range []struct {
		name, env string
		args      []string
		code      int
		decision  string
		reason    string
	}{
		{"attended", "", nil, exitAsk, "DECISION_ASK", "no classifier is configured"},
		{"flag", "", []string{"--unattended"}, exitDeny, "DECISION_DENY", "denied because nobody can answer: the check is unattended and policy default denies what would be asked (unattended.on_ask: deny); asked by source no_classifier: no local stage decided"},
		{"environment", "1", nil, exitDeny, "DECISION_DENY", "denied because nobody can answer"},
		{"flag over environment", "1", []string{"--unattended=false"}, exitAsk, "DECISION_ASK", "no classifier is configured"},
		{"environment false", "0", nil, exitAsk, "DECISION_ASK", "no classifier is configured"},
		{"policy leaves it to the client", "", []string{"--unattended", "--policy", "sdk"}, exitAsk, "DECISION_ASK", "(the check is unattended; policy sdk leaves the question to the client, see unattended.on_ask)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("TOOLGATE_UNATTENDED", tc.env)
			var out, errOut bytes.Buffer
			code := run(t.Context(), append(append([]string{"check", "--addr", addr}, call...), tc.args...), &out, &errOut)
			var resp map[string]any
			if err := json.Unmarshal(out.Bytes(), &resp); err != nil || code != tc.code {
				t.Fatalf("exit %d (%v), want %d; stdout %s stderr %s", code, err, tc.code, out.String(), errOut.String())
			}
			if resp["decision"] != tc.decision || resp["source"] != "DECISION_SOURCE_NO_CLASSIFIER" || !strings.Contains(resp["reason"].(string), tc.reason) {
				t.Errorf("got %v, want %s with %q", resp, tc.decision, tc.reason)
			}
		})
	}
	t.Run("bad environment", func(t *testing.T) {
		t.Setenv("TOOLGATE_UNATTENDED", "yes please")
		var out, errOut bytes.Buffer
		if code := run(t.Context(), append([]string{"check", "--addr", addr}, call...), &out, &errOut); code != exitError ||
			!strings.Contains(errOut.String(), `toolgate check: $TOOLGATE_UNATTENDED "yes please": want 1 or 0 (true or false)`) {
			t.Errorf("exit %d, stderr %q", code, errOut.String())
		}
	})
	t.Run("stream", func(t *testing.T) {
		t.Setenv("TOOLGATE_UNATTENDED", "")
		lines := filepath.Join(dir, "session.jsonl")
		body := `{"session":{"workingDirectory":"` + dir + `"}}` + "\n" + `{"check":{"requestId":"a","tool":{"name":"Bash","input":{"command":"make"}}}}` + "\n"
		if err := os.WriteFile(lines, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		if code := run(t.Context(), []string{"check", "--addr", addr, "--stream", lines, "--unattended"}, &out, &errOut); code != exitAllow ||
			!strings.Contains(out.String(), `"decision":"DECISION_DENY"`) || !strings.Contains(out.String(), "nobody can answer") {
			t.Errorf("exit %d, stdout %s, stderr %s", code, out.String(), errOut.String())
		}
	})
}

// TestExplainUnattended: explain --unattended shows the unattended step
// after the stages, and decides as the server would.
func TestExplainUnattended(t *testing.T) {
	t.Setenv("TOOLGATE_UNATTENDED", "")
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"explain", "--tool", "Bash", "--input", `{"command":"make"}`, "--cwd", dir, "--unattended"}, &out, &errOut)
	if code != exitDeny {
		t.Fatalf("exit %d; stdout %s stderr %s", code, out.String(), errOut.String())
	}
	for _, want := range []string{
		"decision: DENY (no_classifier)\nreason:   denied because nobody can answer",
		"  10 classifier                      ASK         no local stage decided",
		"  11 unattended                      DENY        denied because nobody can answer",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("explain lacks %q:\n%s", want, out.String())
		}
	}
}

// TestUnattendedDocs: what docs/hooks.md shows under "Unattended agents"
// is what toolgate does: the policy snippet validates and decides as it
// says, and the printed deny is the recorded case's golden output (which
// TestHookGolden produces through both hook commands).
func TestUnattendedDocs(t *testing.T) {
	t.Setenv("TOOLGATE_UNATTENDED", "")
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "hooks.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := markdownSection(t, string(doc), "## Unattended agents")
	blocks := jsonBlocks(section)
	if len(blocks) != 1 {
		t.Fatalf("%d json blocks, want the printed deny", len(blocks))
	}
	golden, err := os.ReadFile(filepath.Join("testdata", "hook", "claude-code", "unattended-ask.golden"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(blocks[0]) != strings.TrimSpace(string(golden)) {
		t.Errorf("docs show\n%s\nthe hook prints\n%s", blocks[0], golden)
	}
	yaml := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindStringSubmatch(section)
	if yaml == nil {
		t.Fatal("no yaml block")
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "toolgate.yaml")
	if err := os.WriteFile(cfg, []byte(yaml[1]), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run(t.Context(), []string{"validate", cfg}, &out, &errOut); code != 0 {
		t.Fatalf("validate: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	for policy, code := range map[string]int{"default": exitDeny, "sdk-host": exitAsk} {
		out.Reset()
		errOut.Reset()
		args := []string{"explain", "--config", cfg, "--policy", policy, "--tool", "Bash", "--input", `{"command":"make deploy"}`, "--cwd", dir, "--mode", "default", "--unattended"}
		if got := run(t.Context(), args, &out, &errOut); got != code {
			t.Errorf("policy %s: exit %d, want %d\n%s%s", policy, got, code, out.String(), errOut.String())
		}
	}
}
