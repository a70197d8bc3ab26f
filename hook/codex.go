package hook

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"

	toolgatev1 "github.com/toolgate/toolgate/gen/toolgate/v1"
	"google.golang.org/protobuf/types/known/structpb"
)

// Codex PreToolUse hook, read from the openai/codex sources (commits
// abbreviated):
//   - codex-rs/hooks/src/events/pre_tool_use.rs @0082977c (input, exit codes)
//   - codex-rs/hooks/src/engine/output_parser.rs @0ea83813 (output rules)
//   - codex-rs/core/src/hook_runtime.rs @00767bce (permission_mode, what the
//     model is told on a block)
//   - codex-rs/core/src/tools/hook_names.rs @05d99c83 and the apply_patch and
//     mcp handlers (tool names and tool_input shapes)
//   - codex-rs/config/src/hook_config.rs @012d0aa0 (hooks.json / [hooks])
//
// Input: session_id, turn_id, transcript_path (string or null: the session's
// rollout JSON lines), cwd, hook_event_name ("PreToolUse"), model,
// permission_mode, tool_name, tool_input, tool_use_id, and agent_id and
// agent_type inside sub-agents. Every shell tool (shell, shell_command,
// exec_command) arrives as tool_name "Bash" with tool_input
// {"command": "<script>"}; apply_patch as "apply_patch" with
// {"command": "<patch>"}; MCP tools as "mcp__<server>__<tool>" with their
// arguments.
//
// Output: only a deny acts. {"hookSpecificOutput": {"hookEventName":
// "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason":
// "..."}} with a non-empty reason blocks the call, and the model is told
// "Command blocked by PreToolUse hook: <reason>. Command: <command>".
// "allow" (without updatedInput) and "ask" are rejected as unsupported
// (openai/codex#20756, which would add them, was closed unmerged); Codex then
// marks the hook failed and runs the tool anyway, as it does when a hook
// exits with another code or times out. So CodexOutput renders allow as no
// output (Codex goes on under its own approval policy and sandbox) and ask
// as a deny whose reason says that the user's approval is needed (fail
// closed).
//
// permission_mode is "bypassPermissions" when Codex's approval policy is
// "never" and "default" otherwise. Neither says what may run unattended, which
// is the question toolgate answers, so CodexMode sends AUTO for both; only
// "plan", which can only narrow, is kept.

// CodexInput is the parsed Codex PreToolUse hook input.
type CodexInput struct {
	SessionID      string
	TurnID         string
	TranscriptPath string
	Cwd            string
	HookEventName  string
	Model          string
	PermissionMode string
	ToolName       string
	ToolInput      map[string]any
	ToolUseID      string
	// AgentID and AgentType are set inside sub-agents.
	AgentID   string
	AgentType string
}

type codexWire struct {
	SessionID      string          `json:"session_id"`
	TurnID         string          `json:"turn_id"`
	TranscriptPath string          `json:"transcript_path"` // null decodes as ""
	Cwd            string          `json:"cwd"`
	HookEventName  string          `json:"hook_event_name"`
	Model          string          `json:"model"`
	PermissionMode string          `json:"permission_mode"`
	ToolName       string          `json:"tool_name"`
	ToolInput      json.RawMessage `json:"tool_input"`
	ToolUseID      string          `json:"tool_use_id"`
	AgentID        string          `json:"agent_id"`
	AgentType      string          `json:"agent_type"`
}

// ParseCodex reads and validates a Codex PreToolUse hook input. It fails
// when the input is not a JSON object, hook_event_name is not "PreToolUse",
// tool_name is missing, or tool_input is missing or not an object (Codex
// passes MCP arguments that are not JSON as a string: such a call cannot be
// checked and is refused).
func ParseCodex(r io.Reader) (*CodexInput, error) {
	var w codexWire
	if err := decodeInput(r, &w); err != nil {
		return nil, err
	}
	in, err := checkCommon("PreToolUse", w.HookEventName, w.ToolName, w.ToolInput)
	if err != nil {
		return nil, err
	}
	return &CodexInput{
		SessionID:      w.SessionID,
		TurnID:         w.TurnID,
		TranscriptPath: w.TranscriptPath,
		Cwd:            w.Cwd,
		HookEventName:  w.HookEventName,
		Model:          w.Model,
		PermissionMode: w.PermissionMode,
		ToolName:       w.ToolName,
		ToolInput:      in,
		ToolUseID:      w.ToolUseID,
		AgentID:        w.AgentID,
		AgentType:      w.AgentType,
	}, nil
}

// CodexMode maps a Codex permission_mode to the API's mode: "plan" → PLAN,
// anything else → AUTO (see the notes above).
func CodexMode(mode string) toolgatev1.PermissionMode {
	if mode == "plan" {
		return toolgatev1.PermissionMode_PERMISSION_MODE_PLAN
	}
	return toolgatev1.PermissionMode_PERMISSION_MODE_AUTO
}

// codexToolInput maps a hook tool_input onto toolgate's vocabulary. The only
// difference is apply_patch: the hook names the patch "command", the tool's
// own argument (which toolgate reads) is "input".
func codexToolInput(tool string, input map[string]any) map[string]any {
	if tool != "apply_patch" {
		return input
	}
	patch, ok := input["command"]
	if !ok {
		return input
	}
	if _, clash := input["input"]; clash {
		return input // ambiguous: leave it for toolgate to refuse
	}
	out := maps.Clone(input)
	delete(out, "command")
	out["input"] = patch
	return out
}

// CodexRequest builds the CheckRequest for a Codex PreToolUse input: the
// tool name, the input mapped by codexToolInput, the session id, request
// id = tool_use_id, the mode from CodexMode, and the last
// opt.TranscriptEntries entries of the rollout file (see
// readCodexTranscript), reading at most opt.MaxTranscriptBytes from its
// end.
//
// The hook's cwd is where the command runs (exec_command's workdir), not
// the project: the session's root is the cwd of the rollout's last
// turn_context (or of its session_meta). That root is the working
// directory, and a shell command carries the hook's cwd as its own
// "workdir", so that a command run in another repository is judged as
// running there. Without a rollout naming an absolute root the project is
// unknown: no working directory is sent, and nothing that depends on
// where the project is can be allowed locally. A tool other than a shell
// whose cwd is not the root is sent without one too.
func CodexRequest(in *CodexInput, opt Options) (*toolgatev1.CheckRequest, error) {
	if in == nil {
		return nil, errors.New("hook: nil input")
	}
	if in.ToolName == "" {
		return nil, errors.New("hook: missing tool name")
	}
	var (
		entries []*toolgatev1.TranscriptEntry
		root    string
	)
	if filepath.IsAbs(in.TranscriptPath) {
		entries, root = readCodexRollout(in.TranscriptPath, opt.entries(), opt.maxBytes())
	}
	tool := codexToolInput(in.ToolName, in.ToolInput)
	cwd := absOrEmpty(in.Cwd)
	wd := ""
	switch {
	case codexShellTools[in.ToolName]:
		wd = root
		if cwd != "" {
			tool = maps.Clone(tool)
			if _, has := tool["workdir"]; !has {
				tool["workdir"] = cwd
			} else if tool["workdir"] != cwd {
				// Two places: the engine refuses an ambiguous workdir.
				tool["cwd"] = cwd
			}
		}
	case cwd != "" && cwd == root:
		wd = root
	}
	input, err := structpb.NewStruct(tool)
	if err != nil {
		return nil, fmt.Errorf("hook: tool_input: %w", err)
	}
	req := &toolgatev1.CheckRequest{
		RequestId:        in.ToolUseID,
		SessionId:        in.SessionID,
		Tool:             &toolgatev1.ToolCall{Name: in.ToolName, Input: input},
		WorkingDirectory: wd,
		Mode:             CodexMode(in.PermissionMode),
	}
	if opt.entries() > 0 {
		req.Transcript = entries
	}
	return req, nil
}

// codexShellTools are the names Codex gives its shell tools in hook input.
var codexShellTools = map[string]bool{"Bash": true, "shell": true, "shell_command": true, "exec_command": true, "local_shell": true}

// CodexOutput writes the Codex PreToolUse hook output: nothing for "allow"
// (Codex's own approval policy and sandbox still apply), a deny with the
// reason for "deny", and a deny asking for the user's approval for "ask",
// which Codex cannot express. Any other decision is written as a deny that
// names it.
func CodexOutput(w io.Writer, decision, reason string) error {
	switch decision {
	case Allow:
		return nil
	case Deny:
		reason = denyReason(reason)
	case Ask:
		reason = "toolgate: this tool call needs the user's approval, which a Codex hook cannot request; ask the user to run it or to allow it: " + reason
	default:
		reason = fmt.Sprintf("toolgate: invalid decision %q: %s", decision, reason)
	}
	return writePreToolUse(w, Deny, reason)
}
