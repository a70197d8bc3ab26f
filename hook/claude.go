package hook

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	toolgatev1 "github.com/toolgate/toolgate/gen/toolgate/v1"
	"google.golang.org/protobuf/types/known/structpb"
)

// maxHookInput bounds the hook input read from stdin.
const maxHookInput = 16 << 20

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

// decodeInput decodes one JSON object from r (bounded) into v.
func decodeInput(r io.Reader, v any) error {
	data, err := io.ReadAll(io.LimitReader(r, maxHookInput+1))
	if err != nil {
		return fmt.Errorf("hook input: %w", err)
	}
	if len(data) > maxHookInput {
		return fmt.Errorf("hook input: larger than %d bytes", maxHookInput)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("hook input: not a JSON object: %w", err)
	}
	return nil
}

// objectOf decodes tool_input, which must be a JSON object.
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
// name and input, the working directory (only when cwd is absolute), the
// session id, request id = tool_use_id, the mapped mode (see ClaudeMode) and
// the last opt.TranscriptEntries entries of the transcript file, oldest
// first. Only the last opt.MaxTranscriptBytes of the file are read. A
// missing or unreadable transcript, or a transcript_path that is not
// absolute, yields no transcript and no error.
func ClaudeRequest(in *ClaudeInput, opt Options) (*toolgatev1.CheckRequest, error) {
	if in == nil {
		return nil, errors.New("hook: nil input")
	}
	if in.ToolName == "" {
		return nil, errors.New("hook: missing tool name")
	}
	input, err := structpb.NewStruct(in.ToolInput)
	if err != nil {
		return nil, fmt.Errorf("hook: tool_input: %w", err)
	}
	req := &toolgatev1.CheckRequest{
		RequestId:        in.ToolUseID,
		SessionId:        in.SessionID,
		Tool:             &toolgatev1.ToolCall{Name: in.ToolName, Input: input},
		WorkingDirectory: absOrEmpty(in.Cwd),
		Mode:             ClaudeMode(in.PermissionMode),
	}
	if n := opt.entries(); n > 0 && filepath.IsAbs(in.TranscriptPath) {
		req.Transcript = readClaudeTranscript(in.TranscriptPath, n, opt.maxBytes())
	}
	return req, nil
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
// share.
type preToolUseOutput struct {
	HookSpecificOutput preToolUseDecision `json:"hookSpecificOutput"`
}

type preToolUseDecision struct {
	HookEventName            string `json:"hookEventName"`
	PermissionDecision       string `json:"permissionDecision"`
	PermissionDecisionReason string `json:"permissionDecisionReason"`
}

func writePreToolUse(w io.Writer, decision, reason string) error {
	return writeJSON(w, preToolUseOutput{HookSpecificOutput: preToolUseDecision{
		HookEventName:            "PreToolUse",
		PermissionDecision:       decision,
		PermissionDecisionReason: reason,
	}})
}

// ClaudeOutput writes the PreToolUse hook output for decision ("allow",
// "deny" or "ask") and reason, as one JSON line. Any other decision is
// written as "deny" (fail closed) with the bad value named in the reason.
// A deny always carries a reason (see denyReason).
func ClaudeOutput(w io.Writer, decision, reason string) error {
	switch decision {
	case Allow, Ask:
	case Deny:
		reason = denyReason(reason)
	default:
		reason = fmt.Sprintf("toolgate: invalid decision %q: %s", decision, reason)
		decision = Deny
	}
	return writePreToolUse(w, decision, reason)
}

// ClaudeAsksUser reports whether the point of a Claude Code tool is a
// question to the user: its permission prompt is the question itself (the
// plan to approve, the choices to answer), so a hook's allow would skip
// what the user is there to say.
func ClaudeAsksUser(tool string) bool {
	return tool == "ExitPlanMode" || tool == "AskUserQuestion"
}

// ClaudeToolOutput is ClaudeOutput for a call of tool: for a tool that asks
// the user (ClaudeAsksUser) only a deny is written, and anything else
// writes nothing, which leaves the call to Claude Code's own prompt.
func ClaudeToolOutput(w io.Writer, tool, decision, reason string) error {
	if ClaudeAsksUser(tool) && decision != Deny {
		return nil
	}
	return ClaudeOutput(w, decision, reason)
}

func writeJSON(w io.Writer, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	data = append(data, '\n')
	_, err = w.Write(data)
	return err
}
