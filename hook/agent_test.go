package hook

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/hook/hookout"
)

func TestAgentByName(t *testing.T) {
	if got, want := AgentNames(), []string{"claude-code", "gemini-cli", "codex"}; !slices.Equal(got, want) {
		t.Fatalf("AgentNames() = %q, want %q", got, want)
	}
	for _, a := range Agents() {
		if got, ok := AgentByName(a.Name()); !ok || got != a {
			t.Errorf("AgentByName(%q) = %v, %v", a.Name(), got, ok)
		}
	}
	if a, ok := AgentByName("cursor"); ok || a != nil {
		t.Errorf("AgentByName(cursor) = %v, %v; want none", a, ok)
	}
}

// Each agent builds the same request as its Parse and Request functions,
// and writes what its Output function writes.
func TestAgentsMatchTheirFunctions(t *testing.T) {
	input := `{"session_id":"s","cwd":"/p","hook_event_name":"%s","tool_name":"%s","tool_input":{"command":"ls"}}`
	tests := []struct {
		agent, event, tool string
		output             func(b *bytes.Buffer, decision, reason string) error
	}{
		{"claude-code", "PreToolUse", "Bash", func(b *bytes.Buffer, d, r string) error { return ClaudeOutput(b, d, r) }},
		{"gemini-cli", "BeforeTool", "run_shell_command", func(b *bytes.Buffer, d, r string) error { return GeminiOutput(b, d, r) }},
		{"codex", "PreToolUse", "Bash", func(b *bytes.Buffer, d, r string) error { return CodexOutput(b, d, r) }},
		{"codex", "PermissionRequest", "Bash", func(b *bytes.Buffer, d, r string) error { return CodexPermissionOutput(b, d, r) }},
	}
	for _, tc := range tests {
		t.Run(tc.agent+"/"+tc.event, func(t *testing.T) {
			a, ok := AgentByName(tc.agent)
			if !ok {
				t.Fatal("not registered")
			}
			req, err := a.Request(strings.NewReader(fmt.Sprintf(input, tc.event, tc.tool)), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if req.GetTool().GetName() == "" || req.GetSessionId() != "s" {
				t.Errorf("request %v", req)
			}
			if _, err := a.Request(strings.NewReader(`{`), Options{}); err == nil {
				t.Error("truncated input: no error")
			}
			for _, d := range []string{Allow, Deny, Ask, "maybe"} {
				var got, want bytes.Buffer
				call := hookout.Call{Tool: req.GetTool().GetName(), Event: tc.event}
				if err := a.Output(&got, call, d, "why"); err != nil {
					t.Fatal(err)
				}
				if err := tc.output(&want, d, "why"); err != nil {
					t.Fatal(err)
				}
				if got.String() != want.String() {
					t.Errorf("%s: Output wrote %q, want %q", d, got.String(), want.String())
				}
			}
		})
	}
}

// Claude Code's question tools get only a deny; before the input is read
// (tool "") every decision is written.
func TestClaudeAgentQuestionTools(t *testing.T) {
	a, _ := AgentByName("claude-code")
	for _, tool := range []string{"ExitPlanMode", "AskUserQuestion"} {
		for _, d := range []string{Allow, Ask} {
			var b bytes.Buffer
			if err := a.Output(&b, hookout.Call{Tool: tool}, d, "r"); err != nil || b.Len() != 0 {
				t.Errorf("%s %s: wrote %q, %v; want nothing", tool, d, b.String(), err)
			}
		}
		var b bytes.Buffer
		if err := a.Output(&b, hookout.Call{Tool: tool}, Deny, "r"); err != nil || !strings.Contains(b.String(), `"permissionDecision":"deny"`) {
			t.Errorf("%s deny: wrote %q, %v", tool, b.String(), err)
		}
	}
	var b bytes.Buffer
	if err := a.Output(&b, hookout.Call{}, Ask, "r"); err != nil || !strings.Contains(b.String(), `"permissionDecision":"ask"`) {
		t.Errorf("unknown tool ask: wrote %q, %v", b.String(), err)
	}
}
