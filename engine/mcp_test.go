package engine

import (
	"testing"

	"github.com/toolgate/toolgate/engine/vocab"
)

// TestMCPToolsNeverBuiltins: a tool an MCP server provides, under any
// built-in or metadata tool's bare name (mcp__srv__Read,
// mcp__srv__TodoWrite, Gemini CLI's mcp_srv_send_message), is an unknown
// tool: no fast path allows it, and an allow rule naming the built-in
// (Read, TodoWrite, Bash(ls)...) does not cover it. Only a rule naming
// the MCP tool or its server does.
func TestMCPToolsNeverBuiltins(t *testing.T) {
	l := newLayout(t)
	names := vocab.BuiltinNames(func(vocab.Kind) bool { return true })
	allow := append([]string{"Bash(ls)", "Read(//**)", "Edit(//**)", "WebFetch(domain:example.com)"}, names...)
	e := newEngine(t, policyOf(PolicySpec{Permissions: RuleSet{Allow: allow}}), nil)
	input := map[string]any{"file_path": "main.go", "command": "ls", "todos": []any{}, "url": "https://example.com"}
	for _, n := range names {
		for _, name := range []string{"mcp__srv__" + n, "mcp_srv_" + n, "mcp__" + n + "__" + n} {
			for _, mode := range []Mode{ModeAuto, ModeDefault, ModeAcceptEdits, ModePlan} {
				res := mustCheck(t, e, &Request{Tool: tool(name, input), WorkingDirectory: l.app, Mode: mode})
				if res.Decision == Allow || res.Kind != KindUnknown {
					t.Errorf("%s in %s mode: %s by %s (kind %s, %s)", name, mode, res.Decision, res.Source, res.Kind, res.Reason)
				}
			}
		}
	}
	// A rule naming the tool or its server allows it.
	for _, rule := range []string{"mcp__srv__Read", "mcp__srv", "mcp__srv__*"} {
		e := newEngine(t, policyOf(PolicySpec{Permissions: RuleSet{Allow: []string{rule}}}), nil)
		allowRule(rule).check(t, mustCheck(t, e, &Request{Tool: tool("mcp__srv__Read", input), WorkingDirectory: l.app}))
	}
}
