// Package vocab is toolgate's one vocabulary of tool kinds and tool
// names: which agent tool is a read, a search, an edit, a shell, and so
// on. The engine decides by kind and the rules match by kind from this
// table, so a tool is named in one place.
package vocab

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Kind is the canonical kind of a tool, independent of how an agent names it.
type Kind string

// Tool kinds. KindRead, KindSearch, KindMetadata and KindBackgroundOutput
// are the safe kinds (reads and searches still have their targets judged);
// edit kinds may take the accept-edits path; every other kind, and above
// all KindUnknown, is never fast-pathed.
const (
	KindUnknown      Kind = "unknown"
	KindRead         Kind = "read"          // reads file content
	KindSearch       Kind = "search"        // lists or searches files, code intelligence
	KindMetadata     Kind = "metadata"      // todos, tasks, plan mode, questions, messages, subagents
	KindEdit         Kind = "edit"          // edits an existing file in place
	KindWrite        Kind = "write"         // creates or overwrites a file
	KindNotebookEdit Kind = "notebook_edit" // edits a Jupyter notebook cell
	KindPatch        Kind = "patch"         // applies a multi-file patch (Codex apply_patch)
	KindShell        Kind = "shell"         // runs a shell command
	KindWebFetch     Kind = "web_fetch"     // fetches a URL
	KindWebSearch    Kind = "web_search"    // searches the web
	// KindBackgroundOutput reads what a background shell command or
	// subagent that the agent itself started in this session has printed,
	// and nothing else: that command or subagent's own calls were checked
	// when they were made, so reading their output reveals nothing that
	// was not already allowed. A kind of its own rather than metadata, so
	// that rules, logs and the classifier can tell it apart.
	KindBackgroundOutput Kind = "background_output"
)

var knownKinds = map[Kind]bool{
	KindRead: true, KindSearch: true, KindMetadata: true, KindEdit: true, KindWrite: true,
	KindNotebookEdit: true, KindPatch: true, KindShell: true, KindWebFetch: true, KindWebSearch: true,
	KindBackgroundOutput: true,
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

// IsSafe reports whether calls of this kind are read-only or metadata.
func (k Kind) IsSafe() bool {
	return k == KindRead || k == KindSearch || k == KindMetadata || k == KindBackgroundOutput
}

// builtinTools maps the tool names of the agents we know onto kinds. Names
// are matched exactly: agents spell their own tools consistently, and a
// near-miss must stay unknown rather than be guessed into a safe kind.
//
// Left out on purpose, so unknown (to the classifier, or ask):
//   - Claude Code's Skill (runs a user- or project-defined skill:
//     instructions, scripts, tools) and SlashCommand (runs a user- or
//     project-defined command).
//   - Gemini CLI's save_memory (writes GEMINI.md memory, which steers later
//     sessions), activate_skill (loads a skill and adds its directory to the
//     workspace), invoke_agent (runs a subagent by name; a remote A2A
//     subagent makes its calls elsewhere, unchecked) and get_internal_docs
//     (its path is relative to Gemini CLI's own docs directory, which
//     toolgate cannot place).
//
// Claude Code: code.claude.com/docs/en/tools-reference, and the tool
// sources (src/tools/*, src/utils/permissions/classifierDecision.ts and
// permissionRuleParser.ts, as published in copies of Claude Code 2.1).
// Gemini CLI: packages/core/src/tools/definitions/base-declarations.ts,
// tool-names.ts, shellBackgroundTools.ts, trackerTools.ts and
// agents/agent-tool.ts of google-gemini/gemini-cli @5411f113 (August 2026).
// Codex: codex-rs/core/src/tools of openai/codex.
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
	// Reads a resource of an MCP server: a read, whose uri is judged as
	// one (a file:// URI is a read of that file).
	"ReadMcpResourceTool": KindRead,
	"TodoWrite":           KindMetadata,
	"TaskCreate":          KindMetadata,
	"TaskGet":             KindMetadata,
	"TaskUpdate":          KindMetadata,
	"TaskList":            KindMetadata,
	// Stops one of this session's background tasks; KillShell and
	// KillBash are its earlier names (permissionRuleParser.ts).
	"TaskStop":        KindMetadata,
	"KillShell":       KindMetadata,
	"KillBash":        KindMetadata,
	"AskUserQuestion": KindMetadata,
	"EnterPlanMode":   KindMetadata,
	"ExitPlanMode":    KindMetadata,
	"TeamCreate":      KindMetadata,
	"TeamDelete":      KindMetadata,
	"SendMessage":     KindMetadata,
	"Sleep":           KindMetadata,
	// Launches a subagent; each of its tool calls goes through the same
	// hooks and is checked on its own, and it cannot widen the session's
	// permission mode (its mode input is ignored). Agent is the current
	// name, Task the one before it (permissionRuleParser.ts: Task → Agent).
	"Agent": KindMetadata,
	"Task":  KindMetadata,
	// TaskOutput returns the output of a background shell, subagent or
	// remote session of this session by task_id (read-only in its own
	// definition; in classifierDecision.ts's list of tools auto mode never
	// classifies). It replaced BashOutput (bash_id, optional filter regex
	// over the output) and AgentOutputTool in Claude Code 2.0.64.
	"TaskOutput":      KindBackgroundOutput,
	"BashOutput":      KindBackgroundOutput,
	"AgentOutputTool": KindBackgroundOutput,
	"Edit":            KindEdit,
	"MultiEdit":       KindEdit,
	"Write":           KindWrite,
	"NotebookEdit":    KindNotebookEdit,
	"Bash":            KindShell,
	"WebFetch":        KindWebFetch,
	"WebSearch":       KindWebSearch,

	// Gemini CLI.
	"read_many_files": KindRead,
	"list_directory":  KindSearch,
	"grep_search":     KindSearch,
	// search_file_content is grep_search's legacy alias (tool-names.ts
	// TOOL_LEGACY_ALIASES), still accepted by Gemini CLI.
	"search_file_content": KindSearch,
	"write_todos":         KindMetadata,
	// Sets the session's topic title and summary shown to the user.
	"update_topic": KindMetadata,
	// Asks the user multiple-choice or free-text questions.
	"ask_user": KindMetadata,
	// A subagent hands its result back to its parent.
	"complete_task": KindMetadata,
	// The task tracker: tasks kept in Gemini CLI's own temporary directory
	// (~/.gemini/tmp/<project>/tracker), like Claude Code's Task* tools.
	"tracker_create_task":    KindMetadata,
	"tracker_update_task":    KindMetadata,
	"tracker_get_task":       KindMetadata,
	"tracker_list_tasks":     KindMetadata,
	"tracker_add_dependency": KindMetadata,
	"tracker_visualize":      KindMetadata,
	// Lists this session's background shell processes (pid, command,
	// status); reads no file.
	"list_background_processes": KindMetadata,
	// Reads the log of a background shell process by pid; Gemini CLI
	// refuses a pid that is not one of this session's.
	"read_background_output": KindBackgroundOutput,
	"write_file":             KindWrite,
	"replace":                KindEdit,
	"run_shell_command":      KindShell,
	"web_fetch":              KindWebFetch,
	"google_web_search":      KindWebSearch,

	// Codex.
	"shell":        KindShell,
	"local_shell":  KindShell,
	"exec_command": KindShell,
	"apply_patch":  KindPatch,
	"update_plan":  KindMetadata,
	"view_image":   KindRead,
	"web_search":   KindWebSearch,

	// toolgate's snake_case names (also Gemini CLI's read_file, glob,
	// enter_plan_mode, exit_plan_mode, list_mcp_resources and
	// read_mcp_resource, which mean the same).
	"read_file":          KindRead,
	"grep":               KindSearch,
	"glob":               KindSearch,
	"lsp":                KindSearch,
	"tool_search":        KindSearch,
	"list_mcp_resources": KindMetadata,
	"read_mcp_resource":  KindRead, // see ReadMcpResourceTool
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
	"file_edit":          KindEdit,
	"multi_edit":         KindEdit,
	"file_write":         KindWrite,
	"notebook_edit":      KindNotebookEdit,
	"bash":               KindShell,
}

// unclassifiedTools are tools the agents have that builtinTools leaves out
// on purpose (see there): their calls are of unknown kind, and a rule may
// still name them (deny Skill).
var unclassifiedTools = []string{"Skill", "SlashCommand", "save_memory", "activate_skill", "invoke_agent", "get_internal_docs"}

// Vocabulary maps tool names to kinds: the built-in table plus aliases.
type Vocabulary struct {
	names map[string]Kind
}

// New returns the built-in table extended by aliases (name to
// kind). An alias may not redefine a built-in name: that would let a
// policy turn, say, Bash into a safe tool by accident.
func New(aliases map[string]Kind) (*Vocabulary, error) {
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

// Builtin returns the kind of a built-in tool name.
func Builtin(name string) (Kind, bool) {
	k, ok := builtinTools[name]
	return k, ok
}

// BuiltinNames returns the built-in tool names whose kind keep reports,
// sorted.
func BuiltinNames(keep func(Kind) bool) []string {
	var out []string
	for n, k := range builtinTools {
		if keep(k) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// Known reports whether name is a tool toolgate knows: built in, an alias,
// or one the agents have whose kind stays unknown on purpose (Skill).
func (v *Vocabulary) Known(name string) bool {
	_, ok := v.names[name]
	return ok || slices.Contains(unclassifiedTools, name)
}

// Nearest returns the known tool name nearest to name (see the function
// Nearest), or "".
func (v *Vocabulary) Nearest(name string) string {
	known := slices.Concat(slices.Collect(maps.Keys(v.names)), unclassifiedTools)
	slices.Sort(known)
	return Nearest(name, known)
}

// Nearest returns the name in known nearest to name by edit distance,
// ignoring case, when it is near enough to be a typo of it: within a
// third of name's length (at least 1, at most 3 edits); "" otherwise. Ties
// go to the first in known. Messages use it to say "did you mean".
func Nearest(name string, known []string) string {
	limit := min(max(len(name)/3, 1), 3)
	best, bestD := "", limit+1
	for _, k := range known {
		if d := editDistance(strings.ToLower(name), strings.ToLower(k)); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the Damerau-Levenshtein distance (optimal string
// alignment) between a and b: swapping two letters is one edit.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
