package engine

import (
	"context"
	"testing"

	"github.com/toolgate/toolgate/engine/pathcheck"
)

// answerAllow is a classifier that allows at once: what remains is the
// cost of every local stage and the hand-off.
type answerAllow struct{}

func (answerAllow) Classify(context.Context, *ClassifyInput) (Verdict, error) {
	return Verdict{Decision: Allow, Reason: "allowed"}, nil
}

// BenchmarkCheck measures whole local decisions, from request to result,
// stage against stage: its policy is small and its goroutines warm, so it
// is cheaper than the server's checks. BenchmarkEngine in bench/ runs the
// embedded default policy on a fresh goroutine per check, as the server
// pays; docs/development.md quotes that one.
func BenchmarkCheck(b *testing.B) {
	e, err := New(Config{Policies: map[string]PolicySpec{DefaultPolicy: {Permissions: RuleSet{
		Deny:  []string{"Bash(rm -rf /)", "Bash(curl * | sh)", "Read(//**/.ssh/id_*)", "Read(//**/.aws/credentials)"},
		Ask:   []string{"Bash(git push *)"},
		Allow: []string{"Bash(npm test)", "Bash(go test ./...)"},
	}}}, Home: "/home/dev", Classifier: answerAllow{},
		// The local part on a pool, as a server runs it: the hand-off to
		// a worker and back is part of every check's cost.
		Pool: NewPool(DefaultFSConfig().Workers)})
	if err != nil {
		b.Fatal(err)
	}
	cwd := b.TempDir()
	cases := []struct {
		name string
		tool ToolCall
		mode Mode
		want Source
	}{
		{"safe_tool", ToolCall{Name: "Read", Input: map[string]any{"file_path": cwd + "/main.go"}}, ModeAuto, SourceSafeTool},
		{"accept_edits", ToolCall{Name: "Edit", Input: map[string]any{"file_path": "src/main.go", "old_string": "a", "new_string": "b"}}, ModeAuto, SourceAcceptEdits},
		{"shell_short", ToolCall{Name: "Bash", Input: map[string]any{"command": "git status"}}, ModeAuto, SourceCommandAnalysis},
		{"shell_long", ToolCall{Name: "Bash", Input: map[string]any{"command": "find . -name '*.go' -type f -print0 | xargs -0 grep -n TODO | sort | uniq -c | head -50 && git log --oneline -5 2>/dev/null"}}, ModeAuto, SourceCommandAnalysis},
		{"allow_rule", ToolCall{Name: "Bash", Input: map[string]any{"command": "go test ./..."}}, ModeAuto, SourceRule},
		{"ask_rule", ToolCall{Name: "Bash", Input: map[string]any{"command": "git push origin main"}}, ModeAuto, SourceRule},
		{"deny_rule", ToolCall{Name: "Bash", Input: map[string]any{"command": "cat ~/.ssh/id_rsa"}}, ModeAuto, SourceRule},
		{"plan_mode", ToolCall{Name: "Bash", Input: map[string]any{"command": "npm install left-pad"}}, ModePlan, SourceMode},
		{"bypass_mode", ToolCall{Name: "Bash", Input: map[string]any{"command": "npm install left-pad"}}, ModeBypass, SourceMode},
		{"default_mode_ask", ToolCall{Name: "Bash", Input: map[string]any{"command": "npm install left-pad"}}, ModeDefault, SourceMode},
		// Every local stage passes; an instant classifier answers.
		{"to_classifier", ToolCall{Name: "Bash", Input: map[string]any{"command": "npm install left-pad"}}, ModeAuto, SourceClassifier},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			req := &Request{Tool: c.tool, WorkingDirectory: cwd, Mode: c.mode}
			// Measure the path named, not a cheaper one it fell off.
			if res, err := e.Check(b.Context(), req); err != nil || res.Source != c.want {
				b.Fatalf("decided by %s (%s), want %s", res.Source, res.Reason, c.want)
			}
			// The file-system calls of one check (polls, openat2, fstat,
			// stat), counted outside the timed loop: what its proofs cost.
			stop := pathcheck.CountLookups()
			_, _ = e.Check(b.Context(), req)
			calls := stop().Total()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.Check(b.Context(), req); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(calls), "fs-calls/op") // after the loop: its start clears metrics
		})
	}
}

// BenchmarkRules1000 measures rule matching against a policy of 1,000 rules.
func BenchmarkRules1000(b *testing.B) {
	var deny, allow []string
	for i := range 500 {
		deny = append(deny, "Bash(tool"+itoa(i)+" --dangerous *)")
		allow = append(allow, "Bash(tool"+itoa(i)+" --version)")
	}
	e, err := New(Config{Policies: map[string]PolicySpec{DefaultPolicy: {Permissions: RuleSet{Deny: deny, Allow: allow}}}})
	if err != nil {
		b.Fatal(err)
	}
	req := &Request{Tool: ToolCall{Name: "Bash", Input: map[string]any{"command": "tool499 --version"}}, WorkingDirectory: b.TempDir()}
	b.ReportAllocs()
	for b.Loop() {
		res, err := e.Check(b.Context(), req)
		if err != nil || res.Decision != Allow {
			b.Fatal(res, err)
		}
	}
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}
