package engine

import (
	"fmt"
	"maps"
)

// Kind is the canonical kind of a tool, independent of how an agent names it.
type Kind string

// Tool kinds. Only KindRead, KindSearch and KindMetadata are safe without
// looking at the input; edit kinds may take the accept-edits path; every
// other kind, and above all KindUnknown, is never fast-pathed.
const (
	KindUnknown      Kind = "unknown"
	KindRead         Kind = "read"          // reads file content
	KindSearch       Kind = "search"        // lists or searches files, code intelligence
	KindMetadata     Kind = "metadata"      // todos, tasks, plan mode, questions, messages
	KindEdit         Kind = "edit"          // edits an existing file in place
	KindWrite        Kind = "write"         // creates or overwrites a file
	KindNotebookEdit Kind = "notebook_edit" // edits a Jupyter notebook cell
	KindPatch        Kind = "patch"         // applies a multi-file patch (Codex apply_patch)
	KindShell        Kind = "shell"         // runs a shell command
	KindWebFetch     Kind = "web_fetch"     // fetches a URL
	KindWebSearch    Kind = "web_search"    // searches the web
)

var knownKinds = map[Kind]bool{
	KindRead: true, KindSearch: true, KindMetadata: true, KindEdit: true, KindWrite: true,
	KindNotebookEdit: true, KindPatch: true, KindShell: true, KindWebFetch: true, KindWebSearch: true,
}

// ParseKind returns the kind named s, or an error for names that are not a
// known kind (KindUnknown cannot be assigned on purpose).
func ParseKind(s string) (Kind, error) {
	k := Kind(s)
	if !knownKinds[k] {
		return "", fmt.Errorf("unknown tool kind %q", s)
	}
	return k, nil
}

// IsEdit reports whether the kind writes files and so may take the
// accept-edits path.
func (k Kind) IsEdit() bool {
	return k == KindEdit || k == KindWrite || k == KindNotebookEdit || k == KindPatch
}

// isSafe reports whether calls of this kind are read-only or metadata.
func (k Kind) isSafe() bool {
	return k == KindRead || k == KindSearch || k == KindMetadata
}

// builtinTools maps the tool names of the agents we know onto kinds. Names
// are matched exactly: agents spell their own tools consistently, and a
// near-miss must stay unknown rather than be guessed into a safe kind.
var builtinTools = map[string]Kind{
	// Claude Code.
	"Read":                 KindRead,
	"NotebookRead":         KindRead,
	"Grep":                 KindSearch,
	"Glob":                 KindSearch,
	"LS":                   KindSearch,
	"LSP":                  KindSearch,
	"ToolSearch":           KindSearch,
	"ListMcpResourcesTool": KindMetadata,
	"ReadMcpResourceTool":  KindMetadata,
	"TodoWrite":            KindMetadata,
	"TaskCreate":           KindMetadata,
	"TaskGet":              KindMetadata,
	"TaskUpdate":           KindMetadata,
	"TaskList":             KindMetadata,
	"TaskStop":             KindMetadata,
	"AskUserQuestion":      KindMetadata,
	"EnterPlanMode":        KindMetadata,
	"ExitPlanMode":         KindMetadata,
	"TeamCreate":           KindMetadata,
	"TeamDelete":           KindMetadata,
	"SendMessage":          KindMetadata,
	"Sleep":                KindMetadata,
	"Edit":                 KindEdit,
	"MultiEdit":            KindEdit,
	"Write":                KindWrite,
	"NotebookEdit":         KindNotebookEdit,
	"Bash":                 KindShell,
	"WebFetch":             KindWebFetch,
	"WebSearch":            KindWebSearch,

	// Gemini CLI.
	"read_many_files":     KindRead,
	"list_directory":      KindSearch,
	"search_file_content": KindSearch,
	"write_todos":         KindMetadata,
	"write_file":          KindWrite,
	"replace":             KindEdit,
	"run_shell_command":   KindShell,
	"web_fetch":           KindWebFetch,
	"google_web_search":   KindWebSearch,

	// Codex.
	"shell":        KindShell,
	"local_shell":  KindShell,
	"exec_command": KindShell,
	"apply_patch":  KindPatch,
	"update_plan":  KindMetadata,
	"view_image":   KindRead,
	"web_search":   KindWebSearch,

	// toolgate's snake_case names (also Gemini CLI's read_file and glob).
	"read_file":          KindRead,
	"grep":               KindSearch,
	"glob":               KindSearch,
	"lsp":                KindSearch,
	"tool_search":        KindSearch,
	"list_mcp_resources": KindMetadata,
	"read_mcp_resource":  KindMetadata,
	"todo_write":         KindMetadata,
	"task_create":        KindMetadata,
	"task_get":           KindMetadata,
	"task_update":        KindMetadata,
	"task_list":          KindMetadata,
	"task_stop":          KindMetadata,
	"ask_user_question":  KindMetadata,
	"enter_plan_mode":    KindMetadata,
	"exit_plan_mode":     KindMetadata,
	"team_create":        KindMetadata,
	"team_delete":        KindMetadata,
	"send_message":       KindMetadata,
	"sleep":              KindMetadata,
	"edit_file":          KindEdit,
	"multi_edit":         KindEdit,
	"notebook_edit":      KindNotebookEdit,
	"bash":               KindShell,
}

// Vocabulary maps tool names to kinds: the built-in table plus aliases.
type Vocabulary struct {
	names map[string]Kind
}

// NewVocabulary returns the built-in table extended by aliases (name to
// kind). An alias may not redefine a built-in name: that would let a
// policy turn, say, Bash into a safe tool by accident.
func NewVocabulary(aliases map[string]Kind) (*Vocabulary, error) {
	names := maps.Clone(builtinTools)
	for name, k := range aliases {
		if name == "" {
			return nil, fmt.Errorf("tool alias: empty name")
		}
		if _, err := ParseKind(string(k)); err != nil {
			return nil, fmt.Errorf("tool alias %q: %w", name, err)
		}
		if old, ok := builtinTools[name]; ok && old != k {
			return nil, fmt.Errorf("tool alias %q: built-in tool of kind %q cannot be redefined as %q", name, old, k)
		}
		names[name] = k
	}
	return &Vocabulary{names: names}, nil
}

// Kind returns the kind of a tool name, KindUnknown when not in the table.
func (v *Vocabulary) Kind(name string) Kind {
	if k, ok := v.names[name]; ok {
		return k
	}
	return KindUnknown
}
