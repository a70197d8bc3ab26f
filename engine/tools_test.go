package engine

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestVocabularyBuiltins(t *testing.T) {
	v, err := NewVocabulary(nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		want Kind
	}{
		{"Read", KindRead}, {"NotebookRead", KindRead}, {"read_file", KindRead}, {"read_many_files", KindRead}, {"view_image", KindRead},
		// Metadata tools that read a resource are reads.
		{"ReadMcpResourceTool", KindRead}, {"read_mcp_resource", KindRead},
		{"Grep", KindSearch}, {"Glob", KindSearch}, {"LS", KindSearch}, {"LSP", KindSearch}, {"list_directory", KindSearch}, {"search_file_content", KindSearch}, {"grep", KindSearch}, {"glob", KindSearch},
		{"grep_search", KindSearch},
		{"TodoWrite", KindMetadata}, {"ExitPlanMode", KindMetadata}, {"update_plan", KindMetadata}, {"write_todos", KindMetadata}, {"sleep", KindMetadata},
		{"ListMcpResourcesTool", KindMetadata}, {"list_mcp_resources", KindMetadata},
		{"Agent", KindMetadata}, {"Task", KindMetadata},
		{"update_topic", KindMetadata}, {"ask_user", KindMetadata}, {"complete_task", KindMetadata}, {"list_background_processes", KindMetadata},
		{"enter_plan_mode", KindMetadata}, {"exit_plan_mode", KindMetadata},
		{"tracker_create_task", KindMetadata}, {"tracker_update_task", KindMetadata}, {"tracker_get_task", KindMetadata},
		{"tracker_list_tasks", KindMetadata}, {"tracker_add_dependency", KindMetadata}, {"tracker_visualize", KindMetadata},
		{"BashOutput", KindBackgroundOutput}, {"TaskOutput", KindBackgroundOutput}, {"AgentOutputTool", KindBackgroundOutput},
		{"read_background_output", KindBackgroundOutput},
		{"Edit", KindEdit}, {"MultiEdit", KindEdit}, {"replace", KindEdit}, {"edit_file", KindEdit}, {"multi_edit", KindEdit}, {"file_edit", KindEdit},
		{"Write", KindWrite}, {"write_file", KindWrite}, {"file_write", KindWrite},
		{"NotebookEdit", KindNotebookEdit}, {"notebook_edit", KindNotebookEdit},
		{"apply_patch", KindPatch},
		{"Bash", KindShell}, {"bash", KindShell}, {"run_shell_command", KindShell}, {"shell", KindShell}, {"local_shell", KindShell}, {"exec_command", KindShell},
		{"WebFetch", KindWebFetch}, {"web_fetch", KindWebFetch},
		{"WebSearch", KindWebSearch}, {"google_web_search", KindWebSearch}, {"web_search", KindWebSearch},
		// Near misses stay unknown.
		{"read_File", KindUnknown}, {"READ", KindUnknown}, {"bash2", KindUnknown}, {"Bash ", KindUnknown}, {"", KindUnknown},
		{"mcp__github__create_issue", KindUnknown}, {"write", KindUnknown}, {"edit", KindUnknown},
		{"bashoutput", KindUnknown}, {"BashOutputs", KindUnknown}, {"Bash_Output", KindUnknown}, {"BashOutputTool", KindUnknown},
		{"taskoutput", KindUnknown}, {"Task Output", KindUnknown}, {"task", KindUnknown}, {"agent", KindUnknown}, {"Agents", KindUnknown},
		{"grep-search", KindUnknown}, {"grep_Search", KindUnknown}, {"grep_search ", KindUnknown},
		{"read_background_outputs", KindUnknown}, {"read_background", KindUnknown}, {"background_output", KindUnknown},
		{"ReadMcpResource", KindUnknown}, {"readMcpResourceTool", KindUnknown}, {"mcp_gh_read_file", KindUnknown},
		{"update-topic", KindUnknown}, {"tracker_delete_task", KindUnknown}, {"fileedit", KindUnknown}, {"file_Write", KindUnknown},
	}
	for _, tt := range tests {
		if got := v.Kind(tt.name); got != tt.want {
			t.Errorf("Kind(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// Tools left out on purpose stay unknown: they run user- or
// project-defined instructions, steer later sessions, or act where no hook
// sees them.
func TestVocabularyUnknownOnPurpose(t *testing.T) {
	v, err := NewVocabulary(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{
		// Claude Code.
		"Skill", "SlashCommand",
		// Gemini CLI.
		"save_memory", "activate_skill", "invoke_agent", "get_internal_docs",
	} {
		if k := v.Kind(name); k != KindUnknown {
			t.Errorf("Kind(%q) = %q, want unknown", name, k)
		}
	}
}

// No built-in name looks like an agent's MCP tool name (mcp__server__tool,
// Gemini CLI's mcp_server_tool), so an MCP tool named that way is never
// taken for a built-in one.
func TestVocabularyNoMCPShapedBuiltins(t *testing.T) {
	for name := range builtinTools {
		if strings.HasPrefix(strings.ToLower(name), "mcp_") {
			t.Errorf("built-in tool %q is shaped like an MCP tool name", name)
		}
	}
}

func TestNewVocabulary(t *testing.T) {
	tests := []struct {
		name    string
		aliases map[string]Kind
		check   map[string]Kind // expected kinds after success
		wantErr string
	}{
		{name: "new read alias", aliases: map[string]Kind{"mcp__fs__read": KindRead}, check: map[string]Kind{"mcp__fs__read": KindRead, "Read": KindRead, "Bash": KindShell}},
		{name: "new edit alias", aliases: map[string]Kind{"mcp__fs__write": KindWrite}, check: map[string]Kind{"mcp__fs__write": KindWrite}},
		{name: "built-in restated with its own kind", aliases: map[string]Kind{"Bash": KindShell, "Read": KindRead}, check: map[string]Kind{"Bash": KindShell, "Read": KindRead}},
		{name: "Bash redefined as read", aliases: map[string]Kind{"Bash": KindRead}, wantErr: "cannot be redefined"},
		{name: "Read redefined as edit", aliases: map[string]Kind{"Read": KindEdit}, wantErr: "cannot be redefined"},
		{name: "apply_patch redefined as metadata", aliases: map[string]Kind{"apply_patch": KindMetadata}, wantErr: "cannot be redefined"},
		{name: "unknown kind", aliases: map[string]Kind{"mcp__x": "superuser"}, wantErr: "unknown tool kind"},
		{name: "kind unknown cannot be assigned", aliases: map[string]Kind{"mcp__x": KindUnknown}, wantErr: "unknown tool kind"},
		{name: "empty kind", aliases: map[string]Kind{"mcp__x": ""}, wantErr: "unknown tool kind"},
		{name: "empty name", aliases: map[string]Kind{"": KindRead}, wantErr: "empty name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := NewVocabulary(tt.aliases)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for name, k := range tt.check {
				if got := v.Kind(name); got != k {
					t.Errorf("Kind(%q) = %q, want %q", name, got, k)
				}
			}
		})
	}
}

// An alias lives in its own vocabulary, never in the shared built-in table.
func TestNewVocabularyDoesNotLeak(t *testing.T) {
	if _, err := NewVocabulary(map[string]Kind{"mcp__leak": KindRead}); err != nil {
		t.Fatal(err)
	}
	v, err := NewVocabulary(nil)
	if err != nil {
		t.Fatal(err)
	}
	if k := v.Kind("mcp__leak"); k != KindUnknown {
		t.Fatalf("alias leaked into another vocabulary as %q", k)
	}
}

func TestParseKind(t *testing.T) {
	for _, k := range []Kind{KindRead, KindSearch, KindMetadata, KindEdit, KindWrite, KindNotebookEdit, KindPatch, KindShell, KindWebFetch, KindWebSearch, KindBackgroundOutput} {
		if got, err := ParseKind(string(k)); err != nil || got != k {
			t.Errorf("ParseKind(%q) = %q, %v", k, got, err)
		}
	}
	for _, s := range []string{"unknown", "", "Read", "READ", "shell ", "shell_output", "Background_output"} {
		if got, err := ParseKind(s); err == nil {
			t.Errorf("ParseKind(%q) = %q, want an error", s, got)
		}
	}
}

func TestKindClasses(t *testing.T) {
	tests := []struct {
		k          Kind
		safe, edit bool
	}{
		{KindRead, true, false},
		{KindSearch, true, false},
		{KindMetadata, true, false},
		{KindBackgroundOutput, true, false},
		{KindEdit, false, true},
		{KindWrite, false, true},
		{KindNotebookEdit, false, true},
		{KindPatch, false, true},
		{KindShell, false, false},
		{KindWebFetch, false, false},
		{KindWebSearch, false, false},
		{KindUnknown, false, false},
		{"", false, false},
	}
	for _, tt := range tests {
		if got := tt.k.isSafe(); got != tt.safe {
			t.Errorf("%q.isSafe() = %v, want %v", tt.k, got, tt.safe)
		}
		if got := tt.k.IsEdit(); got != tt.edit {
			t.Errorf("%q.IsEdit() = %v, want %v", tt.k, got, tt.edit)
		}
	}
}

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
