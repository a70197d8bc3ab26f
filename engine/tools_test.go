package engine

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestPolicySafeTools(t *testing.T) {
	tests := []struct {
		name    string
		spec    PolicySpec
		wantErr string
	}{
		{"Bash", PolicySpec{SafeTools: []string{"Bash"}}, `"Bash" is a shell tool`},
		{"run_shell_command", PolicySpec{SafeTools: []string{"run_shell_command"}}, "shell tool"},
		{"Edit", PolicySpec{SafeTools: []string{"Edit"}}, "edit tool"},
		{"apply_patch", PolicySpec{SafeTools: []string{"apply_patch"}}, "patch tool"},
		{"WebFetch", PolicySpec{SafeTools: []string{"WebFetch"}}, "web_fetch tool"},
		{"write alias", PolicySpec{ToolAliases: map[string]Kind{"mcp__fs__write": KindWrite}, SafeTools: []string{"mcp__fs__write"}}, "write tool"},
		{"empty", PolicySpec{SafeTools: []string{""}}, "empty name"},
		{"mcp tool", PolicySpec{SafeTools: []string{"mcp__docs__search"}}, ""},
		{"already safe built-in", PolicySpec{SafeTools: []string{"Read", "TodoWrite", "BashOutput"}}, ""},
		{"read alias", PolicySpec{ToolAliases: map[string]Kind{"mcp__fs__read": KindRead}, SafeTools: []string{"mcp__fs__read"}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := compilePolicy("p", tt.spec, "")
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("compilePolicy: %v", err)
				}
			} else if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("compilePolicy err = %v, want one containing %q", err, tt.wantErr)
			}
			_, err = New(Config{Policies: map[string]PolicySpec{"p": tt.spec}})
			if (err == nil) != (tt.wantErr == "") {
				t.Fatalf("New err = %v, want error: %v", err, tt.wantErr != "")
			}
		})
	}
}

func TestToolAliasesThroughCheck(t *testing.T) {
	l := newLayout(t)
	e := newEngine(t, policyOf(PolicySpec{ToolAliases: map[string]Kind{
		"mcp__fs__write_file": KindWrite,
		"mcp__docs__search":   KindSearch,
		"mcp__box__exec":      KindShell,
	}, Permissions: RuleSet{Deny: []string{"Bash(rm *)"}}}), nil)
	tests := []struct {
		name string
		tool ToolCall
		kind Kind
		want want
	}{
		{"write alias takes accept-edits", tool("mcp__fs__write_file", map[string]any{"file_path": "x.txt"}), KindWrite, allowEdits},
		{"write alias outside", tool("mcp__fs__write_file", map[string]any{"file_path": filepath.Join(l.outside, "x")}), KindWrite, askNoClfWhy("outside the project")},
		{"search alias is safe", tool("mcp__docs__search", map[string]any{"q": "x"}), KindSearch, allowSafe},
		{"shell alias is covered by Bash rules", tool("mcp__box__exec", map[string]any{"command": "rm -rf x"}), KindShell, denyRule("Bash(rm *)")},
		{"shell alias is not a safe tool", tool("mcp__box__exec", map[string]any{"command": "make"}), KindShell, askNoClf},
		{"shell alias gets command analysis", tool("mcp__box__exec", map[string]any{"command": "ls"}), KindShell, want{d: Allow, s: SourceCommandAnalysis}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := mustCheck(t, e, &Request{Tool: tt.tool, WorkingDirectory: l.app})
			tt.want.check(t, res)
			if res.Kind != tt.kind {
				t.Errorf("Kind = %q, want %q", res.Kind, tt.kind)
			}
		})
	}
	// Aliases belong to their policy.
	other := newEngine(t, nil, nil)
	res := mustCheck(t, other, &Request{Tool: tool("mcp__docs__search", nil), WorkingDirectory: l.app})
	askNoClfWhy(notKnownNote).check(t, res)
}

// The tools that issue 12 and the real-world workload name, through the
// whole engine: background output and subagent launches are safe, tools
// left out on purpose are not known, the seed's file_edit and file_write
// take the accept-edits path.
func TestToolNamesThroughCheck(t *testing.T) {
	l := newLayout(t)
	e := newEngine(t, nil, nil)
	tests := []struct {
		name string
		tool ToolCall
		kind Kind
		want want
	}{
		{"BashOutput", tool("BashOutput", map[string]any{"bash_id": "bash_1", "filter": "error|FAIL"}), KindBackgroundOutput, allowSafe},
		{"TaskOutput", tool("TaskOutput", map[string]any{"task_id": "b7x2", "block": true, "timeout": 30000}), KindBackgroundOutput, allowSafe},
		{"read_background_output", tool("read_background_output", map[string]any{"pid": 4242, "lines": 50}), KindBackgroundOutput, allowSafe},
		{"Agent", tool("Agent", map[string]any{"description": "Find callers", "prompt": "Find all callers of NewServer", "subagent_type": "Explore"}), KindMetadata, allowSafe},
		{"Task", tool("Task", map[string]any{"description": "Find callers", "prompt": "Find all callers of NewServer"}), KindMetadata, allowSafe},
		{"update_topic", tool("update_topic", map[string]any{"title": "Fix the parser", "summary": "x"}), KindMetadata, allowSafe},
		{"KillShell", tool("KillShell", map[string]any{"shell_id": "bash_1"}), KindMetadata, allowSafe},
		{"KillBash", tool("KillBash", map[string]any{"shell_id": "bash_1"}), KindMetadata, allowSafe},
		{"Skill", tool("Skill", map[string]any{"skill": "deploy"}), KindUnknown, askNoClfWhy(notKnownNote)},
		{"SlashCommand", tool("SlashCommand", map[string]any{"command": "/deploy prod"}), KindUnknown, askNoClfWhy(notKnownNote)},
		{"activate_skill", tool("activate_skill", map[string]any{"name": "deploy"}), KindUnknown, askNoClfWhy(notKnownNote)},
		{"invoke_agent", tool("invoke_agent", map[string]any{"agent_name": "remote-helper", "prompt": "x"}), KindUnknown, askNoClfWhy(notKnownNote)},
		{"save_memory", tool("save_memory", map[string]any{"fact": "always push to main"}), KindUnknown, askNoClfWhy(notKnownNote)},
		{"file_edit in project", tool("file_edit", map[string]any{"file_path": "main.go", "old_string": "a", "new_string": "b"}), KindEdit, allowEdits},
		{"file_write outside", tool("file_write", map[string]any{"file_path": filepath.Join(l.outside, "x"), "content": "x"}), KindWrite, askNoClfWhy("outside the project")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := mustCheck(t, e, &Request{Tool: tt.tool, WorkingDirectory: l.app})
			tt.want.check(t, res)
			if res.Kind != tt.kind {
				t.Errorf("Kind = %q, want %q", res.Kind, tt.kind)
			}
		})
	}
}

func TestStrings(t *testing.T) {
	tests := []struct{ got, want string }{
		{Allow.String(), "allow"},
		{Deny.String(), "deny"},
		{Ask.String(), "ask"},
		{DecisionUnspecified.String(), "unspecified"},
		{Decision(42).String(), "unspecified"},
		{SourceSafeTool.String(), "safe_tool"},
		{SourceAcceptEdits.String(), "accept_edits"},
		{SourceClassifierUnavailable.String(), "classifier_unavailable"},
		{SourceNoClassifier.String(), "no_classifier"},
		{Source(99).String(), "source(99)"},
		{Source(-1).String(), "source(-1)"},
		{ModeUnspecified.String(), "auto"},
		{ModeAuto.String(), "auto"},
		{ModeAcceptEdits.String(), "accept_edits"},
		{ModeBypass.String(), "bypass"},
		{Mode(7).String(), "mode(7)"},
		{Mode(-2).String(), "mode(-2)"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
