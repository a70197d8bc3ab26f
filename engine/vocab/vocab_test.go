package vocab

import (
	"strings"
	"testing"
)

func TestVocabularyBuiltins(t *testing.T) {
	v, err := New(nil)
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
	v, err := New(nil)
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
	for _, name := range BuiltinNames(func(Kind) bool { return true }) {
		if strings.HasPrefix(strings.ToLower(name), "mcp_") {
			t.Errorf("built-in tool %q is shaped like an MCP tool name", name)
		}
	}
}

func TestNew(t *testing.T) {
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
			v, err := New(tt.aliases)
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
	if _, err := New(map[string]Kind{"mcp__leak": KindRead}); err != nil {
		t.Fatal(err)
	}
	v, err := New(nil)
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
		if got := tt.k.IsSafe(); got != tt.safe {
			t.Errorf("%q.IsSafe() = %v, want %v", tt.k, got, tt.safe)
		}
		if got := tt.k.IsEdit(); got != tt.edit {
			t.Errorf("%q.IsEdit() = %v, want %v", tt.k, got, tt.edit)
		}
	}
}
