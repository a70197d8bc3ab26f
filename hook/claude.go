package hook

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"strings"

	toolgatev1 "github.com/toolgate/toolgate/gen/toolgate/v1"
	"github.com/toolgate/toolgate/hook/hookout"
	"google.golang.org/protobuf/types/known/structpb"
)

// maxHookInput bounds the hook input read from stdin.
const maxHookInput = 16 << 20

// MaxInputBytes is the largest hook input the adapters read.
const MaxInputBytes = maxHookInput

// ClaudeInput is the parsed Claude Code PreToolUse hook input.
type ClaudeInput struct {
	SessionID      string
	TranscriptPath string
	Cwd            string
	PermissionMode string
	HookEventName  string
	ToolName       string
	ToolInput      map[string]any
	ToolUseID      string
}

type claudeWire struct {
	SessionID      string          `json:"session_id"`
	TranscriptPath string          `json:"transcript_path"`
	Cwd            string          `json:"cwd"`
	PermissionMode string          `json:"permission_mode"`
	HookEventName  string          `json:"hook_event_name"`
	ToolName       string          `json:"tool_name"`
	ToolInput      json.RawMessage `json:"tool_input"`
	ToolUseID      string          `json:"tool_use_id"`
}

// ParseClaude reads and validates a PreToolUse hook input. It fails when the
// input is not a JSON object, hook_event_name is not "PreToolUse", tool_name
// is missing, or tool_input is missing or not an object.
func ParseClaude(r io.Reader) (*ClaudeInput, error) {
	var w claudeWire
	if err := decodeInput(r, &w); err != nil {
		return nil, err
	}
	in, err := checkCommon("PreToolUse", w.HookEventName, w.ToolName, w.ToolInput)
	if err != nil {
		return nil, err
	}
	return &ClaudeInput{
		SessionID:      w.SessionID,
		TranscriptPath: w.TranscriptPath,
		Cwd:            w.Cwd,
		PermissionMode: w.PermissionMode,
		HookEventName:  w.HookEventName,
		ToolName:       w.ToolName,
		ToolInput:      in,
		ToolUseID:      w.ToolUseID,
	}, nil
}

// decodeInput decodes one JSON object from r (bounded) into the struct *v.
func decodeInput(r io.Reader, v any) error {
	data, err := io.ReadAll(io.LimitReader(r, maxHookInput+1))
	if err != nil {
		return fmt.Errorf("hook input: %w", err)
	}
	if len(data) > maxHookInput {
		return fmt.Errorf("hook input: larger than %d bytes", maxHookInput)
	}
	// Keys exactly as the agent writes them, each once (decodeExact).
	if err := decodeExact(data, v); err != nil {
		return fmt.Errorf("hook input: not a JSON object: %w", err)
	}
	return nil
}

// checkCommon validates what every agent's pre-tool hook input carries:
// the event, the tool name, and a tool input that is a JSON object.
func checkCommon(wantEvent, event, tool string, input json.RawMessage) (map[string]any, error) {
	if event != wantEvent {
		return nil, fmt.Errorf("hook input: hook_event_name is %q, want %q", event, wantEvent)
	}
	if tool == "" {
		return nil, errors.New("hook input: missing tool_name")
	}
	return objectOf(input)
}

// objectOf decodes tool_input, which must be a JSON object.
func objectOf(raw json.RawMessage) (map[string]any, error) {
	var v any
	if len(raw) == 0 {
		return nil, errors.New("hook input: missing tool_input")
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("hook input: tool_input: %w", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("hook input: tool_input is not an object")
	}
	return m, nil
}

// ClaudeMode maps a Claude Code permission_mode to the API's mode.
//
//	"default"           → DEFAULT
//	"acceptEdits"       → ACCEPT_EDITS
//	"plan"              → PLAN
//	"bypassPermissions" → BYPASS
//	"auto"              → AUTO
//
// Anything else ("dontAsk", "", future modes) maps to DEFAULT, which asks
// rather than allows: an unknown mode must not widen what runs unattended.
func ClaudeMode(mode string) toolgatev1.PermissionMode {
	switch mode {
	case "default":
		return toolgatev1.PermissionMode_PERMISSION_MODE_DEFAULT
	case "acceptEdits":
		return toolgatev1.PermissionMode_PERMISSION_MODE_ACCEPT_EDITS
	case "plan":
		return toolgatev1.PermissionMode_PERMISSION_MODE_PLAN
	case "bypassPermissions":
		return toolgatev1.PermissionMode_PERMISSION_MODE_BYPASS
	case "auto":
		return toolgatev1.PermissionMode_PERMISSION_MODE_AUTO
	default:
		return toolgatev1.PermissionMode_PERMISSION_MODE_DEFAULT
	}
}

// ClaudeRequest builds the CheckRequest for a PreToolUse input: the tool
// name and input, the directories (claudeDirs), the session id, request
// id = tool_use_id, the mapped mode (see ClaudeMode) and the last
// opt.TranscriptEntries entries of the transcript file, oldest first. Only
// the last opt.MaxTranscriptBytes of the file are read. A missing or
// unreadable transcript, or a transcript_path that is not absolute, yields
// no transcript and no error.
func ClaudeRequest(in *ClaudeInput, opt Options) (*toolgatev1.CheckRequest, error) {
	if in == nil {
		return nil, errors.New("hook: nil input")
	}
	if in.ToolName == "" {
		return nil, errors.New("hook: missing tool name")
	}
	wd, tool := claudeDirs(in, opt)
	input, err := structpb.NewStruct(tool)
	if err != nil {
		return nil, fmt.Errorf("hook: tool_input: %w", err)
	}
	req := &toolgatev1.CheckRequest{
		RequestId:        in.ToolUseID,
		SessionId:        in.SessionID,
		Tool:             &toolgatev1.ToolCall{Name: in.ToolName, Input: input},
		WorkingDirectory: wd,
		Mode:             ClaudeMode(in.PermissionMode),
	}
	if n := opt.entries(); n > 0 && opt.readable(in.TranscriptPath) {
		req.Transcript = readClaudeTranscript(opt.open, in.TranscriptPath, n, opt.maxBytes())
	}
	return req, nil
}

// claudeDirs returns the working directory to send and the tool input,
// with where the tool runs made explicit.
//
// The hook's cwd is Claude Code's current directory, which follows the
// Bash tool's cd: it is where the call runs, not the project. The project
// is CLAUDE_PROJECT_DIR, which Claude Code sets in the hook's environment,
// or else the cwd of the session's first transcript line, where the
// session started. Then:
//   - Bash runs in cwd: the project goes as the working directory and cwd
//     as the command's own workdir, so that a nested repository is judged
//     as the place it is.
//   - The file tools (claudeFileTools) resolve a relative path, or a
//     missing one, against cwd: the adapter writes it out as Claude Code
//     would resolve it.
//   - Any other tool is sent with the project only when cwd is the
//     project: where its directory may matter, the adapter cannot know
//     how.
//
// What is unknown (no project, no absolute cwd) is sent as no working
// directory, and a command or path that depends on it says so, so that
// nothing that depends on the disk is allowed locally.
func claudeDirs(in *ClaudeInput, opt Options) (string, map[string]any) {
	project := absOrEmpty(opt.getenv("CLAUDE_PROJECT_DIR"))
	if project == "" && opt.readable(in.TranscriptPath) {
		project = claudeSessionCwd(opt.open, in.TranscriptPath)
	}
	cwd := absOrEmpty(in.Cwd)
	tool := in.ToolInput
	if in.ToolName == "Bash" {
		switch {
		case project == "" || cwd == "":
			return "", withWorkdir(tool, cmp.Or(cwd, unknownDir))
		case cwd == project:
			return project, tool
		}
		return project, withWorkdir(tool, cwd)
	}
	f, fileTool := claudeFileTools[in.ToolName]
	if fileTool && cwd != project {
		var ok bool
		if tool, ok = claudeFilePath(tool, f.field, f.optional, cwd); !ok {
			return "", tool
		}
	}
	switch {
	case project == "" || cwd == "":
		return "", tool
	case cwd == project, fileTool:
		return project, tool
	}
	return "", tool
}

// claudeFilePath returns a file tool's input with its path field as
// Claude Code resolves it in directory dir (claudeResolve): a missing
// optional path is dir itself. Where dir is unknown ("") a relative path
// stays as it is, and a missing one is "."; the engine places neither
// without a working directory. A missing required path, or one that is
// not a string, is not resolved (false).
func claudeFilePath(tool map[string]any, field string, optional bool, dir string) (map[string]any, bool) {
	p, has := tool[field]
	if !has || p == nil {
		if !optional {
			return tool, false // Claude Code refuses the call
		}
		tool = maps.Clone(tool)
		tool[field] = cmp.Or(dir, ".")
		return tool, true
	}
	s, isStr := p.(string)
	if !isStr {
		return tool, false
	}
	if dir != "" {
		tool = maps.Clone(tool)
		tool[field] = claudeResolve(dir, s)
	}
	return tool, true
}

// unknownDir is the workdir a shell command is sent with when the hook
// cannot tell where it runs: with no working directory, the engine refuses
// a command that runs in a directory of its own.
const unknownDir = "(unknown to the hook)"

// claudeFileTools are Claude Code's tools that take a path relative to its
// current directory, by the field that holds it; optional ones search the
// current directory when it is missing.
var claudeFileTools = map[string]struct {
	field    string
	optional bool
}{
	"Read":         {field: "file_path"},
	"Write":        {field: "file_path"},
	"Edit":         {field: "file_path"},
	"MultiEdit":    {field: "file_path"},
	"NotebookEdit": {field: "notebook_path"},
	"LS":           {field: "path"},
	"Grep":         {field: "path", optional: true},
	"Glob":         {field: "path", optional: true},
}

// claudeResolve is where Claude Code takes path p given in directory dir:
// "~" and "~/..." are the home directory's, an absolute path is itself, and
// a relative one is joined to dir and cleaned, as Node's path.resolve does.
func claudeResolve(dir, p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

// withWorkdir returns a shell tool's input with dir as its workdir. An input
// that names another directory already keeps it and gets dir as "cwd" too:
// the engine refuses a command whose directory fields disagree.
func withWorkdir(tool map[string]any, dir string) map[string]any {
	tool = maps.Clone(tool)
	if w, has := tool["workdir"]; !has {
		tool["workdir"] = dir
	} else if w != dir {
		tool["cwd"] = dir
	}
	return tool
}

// claudeSessionCwd returns the cwd of the first line of a Claude Code
// transcript that has one (the session's start, before any cd), when it
// is absolute and within the first maxSessionHeadBytes of the file.
func claudeSessionCwd(open Opener, path string) string {
	head := readHead(open, path, maxSessionHeadBytes)
	for line := range bytes.SplitSeq(head, []byte{'\n'}) {
		m, err := exactObject(line)
		if err != nil {
			continue
		}
		raw, ok := m["cwd"]
		if !ok {
			continue
		}
		var cwd string
		if json.Unmarshal(raw, &cwd) != nil {
			return ""
		}
		return absOrEmpty(cwd)
	}
	return ""
}

// absOrEmpty passes an absolute directory on as the agent gave it (the
// server resolves it the kernel's way; cleaning it here would take
// "link/.." lexically) and drops a relative one.
func absOrEmpty(dir string) string {
	if !filepath.IsAbs(dir) {
		return ""
	}
	return dir
}

// preToolUseOutput is the PreToolUse hook output that Claude Code and Codex
// share (hookout writes it; tests read it).
type preToolUseOutput struct {
	HookSpecificOutput preToolUseDecision `json:"hookSpecificOutput"`
}

type preToolUseDecision struct {
	HookEventName            string `json:"hookEventName"`
	PermissionDecision       string `json:"permissionDecision"`
	PermissionDecisionReason string `json:"permissionDecisionReason"`
}

// ClaudeOutput writes the PreToolUse hook output for decision ("allow",
// "deny" or "ask") and reason, as one JSON line. Any other decision is
// written as "deny" (fail closed) with the bad value named in the reason.
// A deny always carries a reason.
func ClaudeOutput(w io.Writer, decision, reason string) error {
	return hookout.ClaudeOutput(w, decision, reason)
}

// ClaudeAsksUser reports whether the point of a Claude Code tool is a
// question to the user (hookout.ClaudeAsksUser).
func ClaudeAsksUser(tool string) bool { return hookout.ClaudeAsksUser(tool) }

// ClaudeToolOutput is ClaudeOutput for a call of tool: for a tool that asks
// the user (ClaudeAsksUser) only a deny is written, and anything else
// writes nothing, which leaves the call to Claude Code's own prompt.
func ClaudeToolOutput(w io.Writer, tool, decision, reason string) error {
	return hookout.ClaudeToolOutput(w, tool, decision, reason)
}
