package hook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"

	toolgatev1 "github.com/toolgate/toolgate/gen/toolgate/v1"
	"github.com/toolgate/toolgate/hook/hookout"
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
// PermissionRequest hook (codex-rs/hooks/src/events/permission_request.rs,
// schema/generated/permission-request.command.{input,output}.schema.json,
// and seen from Codex 0.171 by e2e/agents/codex): Codex runs it where a
// call needs approval, before asking the user or its reviewer, so never
// under approval policy "never" (and so never in `codex exec`). Its input
// is the PreToolUse input without tool_use_id: tool_name "Bash" (shell
// commands and network approvals), tool_input {"command": "<script>",
// "description": "<the model's justification>"}, and cwd the directory
// the command runs in. Its output {"hookSpecificOutput": {"hookEventName":
// "PermissionRequest", "decision": {"behavior": "allow"}}} approves the
// call, {... "behavior": "deny", "message": "..."} refuses it, and no
// output leaves it to Codex's approval flow; an invalid output or a failed
// hook does too. So CodexPermissionOutput approves an allow, refuses a
// deny, and writes nothing for an ask: the user is asked, as toolgate
// asked. Without tool_use_id the call is found in the rollout by its
// command (readCodexShellCall).
//
// permission_mode is "bypassPermissions" when Codex's approval policy is
// "never" and "default" otherwise. Neither says what may run unattended, which
// is the question toolgate answers, so CodexMode sends AUTO for both; only
// "plan", which can only narrow, is kept.

// CodexInput is the parsed Codex PreToolUse or PermissionRequest hook
// input.
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

// ParseCodex reads and validates a Codex PreToolUse or PermissionRequest
// hook input. It fails when the input is not a JSON object,
// hook_event_name is neither, tool_name is missing, or tool_input is missing or not an object (Codex
// passes MCP arguments that are not JSON as a string: such a call cannot be
// checked and is refused).
func ParseCodex(r io.Reader) (*CodexInput, error) {
	var w codexWire
	if err := decodeInput(r, &w); err != nil {
		return nil, err
	}
	event := "PreToolUse"
	if w.HookEventName == hookout.CodexPermissionRequest {
		event = w.HookEventName
	}
	in, err := checkCommon(event, w.HookEventName, w.ToolName, w.ToolInput)
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
// tool name, the input mapped by codexToolInput, the directories
// (codexDirs), the session id, request id = tool_use_id, the mode from
// CodexMode, and the last opt.TranscriptEntries entries of the rollout
// file (see readCodexTranscript), reading at most opt.MaxTranscriptBytes
// from its end.
func CodexRequest(in *CodexInput, opt Options) (*toolgatev1.CheckRequest, error) {
	if in == nil {
		return nil, errors.New("hook: nil input")
	}
	if in.ToolName == "" {
		return nil, errors.New("hook: missing tool name")
	}
	var call codexCall
	switch {
	case !opt.readable(in.TranscriptPath):
	case in.HookEventName == hookout.CodexPermissionRequest:
		call = readCodexShellCall(opt.open, in.TranscriptPath, in.TurnID, in.ToolInput["command"])
	default:
		call = readCodexCall(opt.open, in.TranscriptPath, in.TurnID, in.ToolUseID)
	}
	wd, tool := codexDirs(in, call)
	input, err := structpb.NewStruct(codexToolInput(in.ToolName, tool))
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
	if n := opt.entries(); n > 0 && opt.readable(in.TranscriptPath) {
		req.Transcript = readCodexTranscript(opt.open, in.TranscriptPath, n, opt.maxBytes())
	}
	return req, nil
}

// codexDirs returns the working directory to send and the tool input, with
// where a shell command runs made explicit.
//
// The hook input does not say where a command runs: its tool_input is only
// {"command": ...}, and its cwd has been the command's directory (0.169,
// measured by e2e/agents/codex) or the turn's (later sources build it from
// the turn context). The rollout says both, and is written before the hook
// runs: the project is the cwd of the turn_context of the hook's turn_id,
// and the command runs in the workdir of the call whose call_id is the
// hook's tool_use_id, resolved against it (codexShellDir). The hook's cwd
// must be one of the two, or the input and the rollout disagree.
//
// What cannot be known that way is sent as no working directory, and a
// shell command with unknownDir as its workdir, so that nothing that
// depends on the disk is allowed locally.
func codexDirs(in *CodexInput, call codexCall) (string, map[string]any) {
	tool, root := in.ToolInput, call.turnCwd
	unknown := func() (string, map[string]any) {
		if codexShellTools[in.ToolName] {
			return "", withWorkdir(tool, unknownDir)
		}
		return "", tool
	}
	if root == "" {
		return unknown()
	}
	// Codex's paths are normalized; compared cleaned, sent as written.
	clean := filepath.Clean(root)
	cwd := absOrEmpty(in.Cwd)
	if cwd != "" {
		cwd = filepath.Clean(cwd)
	}
	if !codexShellTools[in.ToolName] {
		if cwd != "" && cwd != clean {
			return unknown()
		}
		return root, tool
	}
	dir, ok := codexShellDir(call, clean, tool["command"])
	switch {
	case !ok, cwd != "" && cwd != clean && cwd != dir:
		return unknown()
	case dir == clean:
		return root, tool
	}
	return root, withWorkdir(tool, dir)
}

// codexShellDir returns where Codex runs the shell call the rollout
// recorded: its workdir joined to the turn's cwd root, cleaned as Codex
// cleans it, or root without one. It is not known (false) unless exactly
// one call has the id, it is a shell tool Codex runs locally whose
// arguments parse with each key once, and, where the call names its
// command as one string, it is the command the hook was given.
func codexShellDir(call codexCall, root string, command any) (string, bool) {
	if call.calls != 1 {
		return "", false
	}
	var args map[string]json.RawMessage
	var workdir json.RawMessage
	switch name := jsonString(call.payload["name"]); {
	case call.typ == "local_shell_call":
		var err error
		if args, err = exactObject(call.payload["action"]); err != nil {
			return "", false
		}
		// Its environment and user are not in the hook's command.
		if jsonString(args["type"]) != "exec" || !absent(args["env"]) || !absent(args["user"]) {
			return "", false
		}
		workdir = args["working_directory"]
	case call.typ == "function_call" && codexShellFunctions[name] != "":
		var err error
		if args, err = exactObject([]byte(jsonString(call.payload["arguments"]))); err != nil {
			return "", false
		}
		if key := codexShellFunctions[name]; key != "-" {
			cmd, isStr := command.(string)
			if !isStr || jsonString(args[key]) != cmd {
				return "", false
			}
		}
		// Another environment is another machine's disk.
		if !absent(args["environment_id"]) {
			return "", false
		}
		workdir = args["workdir"]
	default:
		return "", false
	}
	if absent(workdir) {
		return root, true
	}
	var wd string
	if json.Unmarshal(workdir, &wd) != nil {
		return "", false
	}
	if filepath.IsAbs(wd) {
		return filepath.Clean(wd), true
	}
	return filepath.Join(root, wd), true
}

// codexShellFunctions are Codex's function-call shell tools, by the
// argument that holds the command as the hook gets it ("-": a list of
// words, which the hook gets joined).
var codexShellFunctions = map[string]string{"exec_command": "cmd", "shell_command": "command", "shell": "-"}

// absent reports a JSON member that is missing, null or "".
func absent(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null" || string(raw) == `""`
}

// codexShellTools are the names Codex gives its shell tools in hook input.
var codexShellTools = map[string]bool{"Bash": true, "shell": true, "shell_command": true, "exec_command": true, "local_shell": true}

// CodexOutput writes the Codex PreToolUse hook output (hookout.CodexOutput).
func CodexOutput(w io.Writer, decision, reason string) error {
	return hookout.CodexOutput(w, decision, reason)
}

// CodexPermissionOutput writes the Codex PermissionRequest hook output
// (hookout.CodexPermissionOutput).
func CodexPermissionOutput(w io.Writer, decision, reason string) error {
	return hookout.CodexPermissionOutput(w, decision, reason)
}
