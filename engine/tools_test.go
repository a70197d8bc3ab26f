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
		{"Grep", KindSearch}, {"Glob", KindSearch}, {"LS", KindSearch}, {"LSP", KindSearch}, {"list_directory", KindSearch}, {"search_file_content", KindSearch}, {"grep", KindSearch}, {"glob", KindSearch},
		{"TodoWrite", KindMetadata}, {"ExitPlanMode", KindMetadata}, {"update_plan", KindMetadata}, {"write_todos", KindMetadata}, {"sleep", KindMetadata},
		{"Edit", KindEdit}, {"MultiEdit", KindEdit}, {"replace", KindEdit}, {"edit_file", KindEdit}, {"multi_edit", KindEdit},
		{"Write", KindWrite}, {"write_file", KindWrite},
		{"NotebookEdit", KindNotebookEdit}, {"notebook_edit", KindNotebookEdit},
		{"apply_patch", KindPatch},
		{"Bash", KindShell}, {"bash", KindShell}, {"run_shell_command", KindShell}, {"shell", KindShell}, {"local_shell", KindShell}, {"exec_command", KindShell},
		{"WebFetch", KindWebFetch}, {"web_fetch", KindWebFetch},
		{"WebSearch", KindWebSearch}, {"google_web_search", KindWebSearch}, {"web_search", KindWebSearch},
		// Near misses stay unknown.
		{"read_File", KindUnknown}, {"READ", KindUnknown}, {"bash2", KindUnknown}, {"Bash ", KindUnknown}, {"", KindUnknown},
		{"mcp__github__create_issue", KindUnknown}, {"write", KindUnknown}, {"edit", KindUnknown},
	}
	for _, tt := range tests {
		if got := v.Kind(tt.name); got != tt.want {
			t.Errorf("Kind(%q) = %q, want %q", tt.name, got, tt.want)
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
	for _, k := range []Kind{KindRead, KindSearch, KindMetadata, KindEdit, KindWrite, KindNotebookEdit, KindPatch, KindShell, KindWebFetch, KindWebSearch} {
		if got, err := ParseKind(string(k)); err != nil || got != k {
			t.Errorf("ParseKind(%q) = %q, %v", k, got, err)
		}
	}
	for _, s := range []string{"unknown", "", "Read", "READ", "shell "} {
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
		{"already safe built-in", PolicySpec{SafeTools: []string{"Read", "TodoWrite"}}, ""},
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
