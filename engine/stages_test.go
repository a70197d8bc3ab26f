package engine

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeStage is one numbered row of the table of stages in
// docs/decisions.md.
type readmeStage struct {
	name      string // the stage cell
	decisions string // the decides cell, upper case
	sources   string // the source cell
}

// readmeStages parses the table under "How a call is decided".
func readmeStages(t *testing.T) []readmeStage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "docs", "decisions.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, text, ok := strings.Cut(string(b), "\n## How a call is decided\n")
	if !ok {
		t.Fatal(`docs/decisions.md has no "How a call is decided" section`)
	}
	row := regexp.MustCompile(`^\| *(\d+) *\| *([^|]+?) *\| *([^|]+?) *\| *([^|]+?) *\|$`)
	var out []readmeStage
	for line := range strings.Lines(text) {
		m := row.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			if len(out) > 0 && !strings.HasPrefix(line, "|") {
				break // the table ended
			}
			continue
		}
		out = append(out, readmeStage{name: m[2], decisions: m[3], sources: m[4]})
	}
	return out
}

// TestStagesMatchDocs checks that the stages run in the order the
// table in docs/decisions.md gives, under the names it gives.
func TestStagesMatchDocs(t *testing.T) {
	rows := readmeStages(t)
	if len(rows) != len(stages) {
		t.Fatalf("docs/decisions.md lists %d stages, the engine runs %d", len(rows), len(stages))
	}
	for i, s := range stages {
		if !strings.HasPrefix(rows[i].name, s.name) {
			t.Errorf("stage %d is %q, docs/decisions.md says %q", i+1, s.name, rows[i].name)
		}
	}
}

// TestStagesDecideAsDocumented drives one call to each stage and checks
// that the stage docs/decisions.md names decides it, with a decision and a
// source from that row.
func TestStagesDecideAsDocumented(t *testing.T) {
	rows := readmeStages(t)
	l := newLayout(t)
	spec := PolicySpec{Permissions: RuleSet{
		Deny:  []string{"Bash(rm -rf /)"},
		Ask:   []string{"Bash(make deploy)"},
		Allow: []string{"Bash(make test)"},
	}}
	clf := &fakeClassifier{verdict: Verdict{Decision: Deny, Reason: "looks risky"}}
	e := newEngine(t, policyOf(spec), clf)
	req := func(mode Mode, name string, in map[string]any) *Request {
		return &Request{Tool: tool(name, in), WorkingDirectory: l.app, Mode: mode}
	}
	cases := []struct {
		stage string
		req   *Request
	}{
		{"deny rules", req(ModeAuto, "Bash", map[string]any{"command": "rm -rf /"})},
		{"plan mode", req(ModePlan, "Edit", map[string]any{"file_path": "main.go"})},
		{"ask rules", req(ModeAuto, "Bash", map[string]any{"command": "make deploy"})},
		{"bypass mode", req(ModeBypass, "Bash", map[string]any{"command": "make"})},
		{"safe tools", req(ModeAuto, "Read", map[string]any{"file_path": "main.go"})},
		{"accept-edits", req(ModeAuto, "Edit", map[string]any{"file_path": "main.go"})},
		{"shell analysis", req(ModeAuto, "Bash", map[string]any{"command": "ls sub"})},
		{"allow rules", req(ModeAuto, "Bash", map[string]any{"command": "make test"})},
		{"default and accept-edits modes", req(ModeDefault, "Bash", map[string]any{"command": "make"})},
		{"classifier", req(ModeAuto, "Bash", map[string]any{"command": "make"})},
	}
	if len(cases) != len(stages) {
		t.Fatalf("%d cases for %d stages", len(cases), len(stages))
	}
	for i, tc := range cases {
		t.Run(tc.stage, func(t *testing.T) {
			if stages[i].name != tc.stage {
				t.Fatalf("case %d is for %q, stage %d is %q", i, tc.stage, i, stages[i].name)
			}
			got := mustCheck(t, e, tc.req)
			row := rows[i]
			src := "DECISION_SOURCE_" + strings.ToUpper(got.Source.String())
			if !strings.Contains(row.sources, src) {
				t.Errorf("decided by %s (%s), docs/decisions.md row %d says %s", src, got.Reason, i+1, row.sources)
			}
			if !strings.Contains(row.decisions, strings.ToUpper(got.Decision.String())) {
				t.Errorf("decision %v, docs/decisions.md row %d says %s", got.Decision, i+1, row.decisions)
			}
			// The stage itself must decide the call, and no earlier one.
			k := &check{e: e, req: tc.req, p: e.policies[DefaultPolicy], set: e.policies[DefaultPolicy].rules, c: e.analyse(t.Context(), tc.req, e.policies[DefaultPolicy])}
			k.env.Cwd = k.c.cwd
			for j, s := range stages[:i+1] {
				_, ok := s.decide(t.Context(), k)
				if j < i && ok {
					t.Errorf("stage %q decided first", s.name)
				}
				if j == i && !ok {
					t.Errorf("stage %q did not decide", s.name)
				}
			}
		})
	}
}

// TestCheckLocal: CheckLocal decides what a local stage decides, exactly
// as Check does, and leaves the rest, which Check sends to the classifier.
func TestCheckLocal(t *testing.T) {
	e := newHomeEngine(t, policyOf(PolicySpec{Permissions: RuleSet{Deny: []string{"Bash(rm -rf /)"}, Ask: []string{"Bash(git push *)"}}}), answerAllow{})
	cwd := t.TempDir()
	for _, tc := range []struct {
		tool  ToolCall
		mode  Mode
		local bool
	}{
		{tool("Read", map[string]any{"file_path": cwd + "/a.go"}), ModeAuto, true},
		{tool("Edit", map[string]any{"file_path": "a.go", "old_string": "a", "new_string": "b"}), ModeAuto, true},
		{tool("Bash", map[string]any{"command": "git status"}), ModeAuto, true},
		{tool("Bash", map[string]any{"command": "rm -rf /"}), ModeAuto, true},
		{tool("Bash", map[string]any{"command": "git push origin main"}), ModeAuto, true},
		{tool("Bash", map[string]any{"command": "npm install left-pad"}), ModePlan, true},
		{tool("Bash", map[string]any{"command": "npm install left-pad"}), ModeDefault, true},
		{tool("Bash", map[string]any{"command": "npm install left-pad"}), ModeAuto, false},
		{tool("WebFetch", map[string]any{"url": "https://example.com"}), ModeAuto, false},
	} {
		req := &Request{Tool: tc.tool, WorkingDirectory: cwd, Mode: tc.mode}
		local, decided, err := e.CheckLocal(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		full := mustCheck(t, e, req)
		switch {
		case decided != tc.local:
			t.Errorf("%s %v: decided locally %v, want %v (%s by %s)", tc.tool.Name, tc.tool.Input, decided, tc.local, full.Decision, full.Source)
		case decided && (local.Decision != full.Decision || local.Source != full.Source || local.Reason != full.Reason || local.Kind != full.Kind):
			t.Errorf("%s %v: CheckLocal %+v, Check %+v", tc.tool.Name, tc.tool.Input, local, full)
		case !decided && full.Source != SourceClassifier:
			t.Errorf("%s %v: left undecided, but Check decided it by %s", tc.tool.Name, tc.tool.Input, full.Source)
		}
	}
	if _, decided, err := e.CheckLocal(t.Context(), &Request{}); err == nil || decided {
		t.Errorf("a request without a tool: decided %v, err %v", decided, err)
	}
	if stages[len(stages)-1].name != "classifier" {
		t.Error("CheckLocal leaves out the last stage, which must be the classifier's")
	}
}
