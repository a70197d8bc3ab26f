package hook

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	toolgatev1 "github.com/toolgate/toolgate/gen/toolgate/v1"
	"google.golang.org/protobuf/types/known/structpb"
)

// Gemini CLI BeforeTool hook, per the Gemini CLI hooks reference
// (docs/hooks/reference.md and packages/core/src/hooks/types.ts of
// google-gemini/gemini-cli):
//
// Input: session_id, transcript_path, cwd, hook_event_name ("BeforeTool"),
// timestamp, tool_name, tool_input (object), mcp_context (MCP tools only).
//
// Output (exit code 0, JSON on stdout): "decision" is "allow" or "deny"
// (alias "block"); "reason" is sent to the agent as the tool error when
// denied. The documented BeforeTool output has no "ask": the HookDecision
// type lists "ask", but only "deny"/"block" block the tool, so "ask" would
// let the tool run in YOLO mode. GeminiOutput therefore renders ask as a
// deny whose reason says that user approval is needed (fail closed).
//
// The input carries no permission mode and no tool call id, and the
// transcript is a single JSON session file whose format is not documented,
// so GeminiRequest sends mode AUTO, no request id (the server generates
// one) and no transcript.

// GeminiInput is the parsed Gemini CLI BeforeTool hook input.
type GeminiInput struct {
	SessionID      string
	TranscriptPath string
	Cwd            string
	HookEventName  string
	Timestamp      string
	ToolName       string
	ToolInput      map[string]any
	// MCPServerName is mcp_context.server_name, set for MCP tools.
	MCPServerName string
}

type geminiWire struct {
	SessionID      string          `json:"session_id"`
	TranscriptPath string          `json:"transcript_path"`
	Cwd            string          `json:"cwd"`
	HookEventName  string          `json:"hook_event_name"`
	Timestamp      string          `json:"timestamp"`
	ToolName       string          `json:"tool_name"`
	ToolInput      json.RawMessage `json:"tool_input"`
	MCPContext     *struct {
		ServerName string `json:"server_name"`
	} `json:"mcp_context"`
}

// ParseGemini reads and validates a BeforeTool hook input. It fails when
// the input is not a JSON object, hook_event_name is not "BeforeTool",
// tool_name is missing, or tool_input is missing or not an object.
func ParseGemini(r io.Reader) (*GeminiInput, error) {
	var w geminiWire
	if err := decodeInput(r, &w); err != nil {
		return nil, err
	}
	in, err := checkCommon("BeforeTool", w.HookEventName, w.ToolName, w.ToolInput)
	if err != nil {
		return nil, err
	}
	g := &GeminiInput{
		SessionID:      w.SessionID,
		TranscriptPath: w.TranscriptPath,
		Cwd:            w.Cwd,
		HookEventName:  w.HookEventName,
		Timestamp:      w.Timestamp,
		ToolName:       w.ToolName,
		ToolInput:      in,
	}
	if w.MCPContext != nil {
		g.MCPServerName = w.MCPContext.ServerName
	}
	return g, nil
}

// GeminiRequest builds the CheckRequest for a BeforeTool input: tool name
// and input, working directory (only when cwd is absolute), session id and
// mode AUTO. No transcript is sent (see the package notes above); opt is
// accepted for symmetry with ClaudeRequest.
func GeminiRequest(in *GeminiInput, opt Options) (*toolgatev1.CheckRequest, error) {
	_ = opt
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
	return &toolgatev1.CheckRequest{
		SessionId:        in.SessionID,
		Tool:             &toolgatev1.ToolCall{Name: in.ToolName, Input: input},
		WorkingDirectory: absOrEmpty(in.Cwd),
		Mode:             toolgatev1.PermissionMode_PERMISSION_MODE_AUTO,
	}, nil
}

type geminiOutput struct {
	Decision string `json:"decision"`
	Reason   string `json:"reason,omitempty"`
}

// GeminiOutput writes the BeforeTool hook output: {"decision":"allow"} or
// {"decision":"deny","reason":...}. "ask" cannot be expressed in Gemini
// CLI's BeforeTool output and is written as a deny whose reason asks for
// user approval; any other unknown decision is written as a deny too.
func GeminiOutput(w io.Writer, decision, reason string) error {
	switch decision {
	case Allow:
		return writeJSON(w, geminiOutput{Decision: Allow, Reason: reason})
	case Deny:
		reason = denyReason(reason)
	case Ask:
		reason = "toolgate: this tool call needs the user's approval, which a Gemini CLI hook cannot request; ask the user to run it or to allow it: " + reason
	default:
		reason = fmt.Sprintf("toolgate: invalid decision %q: %s", decision, reason)
	}
	return writeJSON(w, geminiOutput{Decision: Deny, Reason: reason})
}
