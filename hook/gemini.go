package hook

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	toolgatev1 "github.com/toolgate/toolgate/gen/toolgate/v1"
	"github.com/toolgate/toolgate/hook/hookout"
	"google.golang.org/protobuf/types/known/structpb"
)

// Gemini CLI BeforeTool hook, per the Gemini CLI hooks reference
// (docs/hooks/reference.md and packages/core/src/hooks/types.ts of
// google-gemini/gemini-cli):
//
// Input: session_id, transcript_path, cwd, hook_event_name ("BeforeTool"),
// timestamp, tool_name, tool_input (object), mcp_context (MCP tools only:
// server_name, tool_name as the server names it, and how the server is
// reached; packages/core/src/core/coreToolHookTriggers.ts).
//
// MCP tools: until google-gemini/gemini-cli#21425 (March 2026) Gemini CLI
// registered an MCP tool under its bare name unless that name was taken
// (then server__tool), so an MCP server's "shell" or "Read" reached the hook
// under a name toolgate knows as a built-in tool; since then it is
// mcp_<server>_<tool>. Either way mcp_context is what says the tool is MCP,
// so GeminiToolName names every tool that carries it mcp__<server>__<tool>,
// the form toolgate's rules and tool aliases use.
//
// Output (exit code 0, JSON on stdout): "decision" is "allow" or "deny"
// (alias "block"); "reason" is sent to the agent as the tool error when
// denied. The documented BeforeTool output has no "ask"; Gemini CLI 0.61
// takes one as a request for the user's confirmation, even in YOLO mode,
// which a headless run cannot give (measured by e2e/agents/geminicli: the
// tool does not run and the run ends). GeminiOutput renders ask as a deny
// whose reason says that user approval is needed, which the model reads.
//
// The input carries no permission mode and no tool call id, and the
// transcript (JSON lines under ~/.gemini/tmp/<project>/chats) has no
// documented format, so GeminiRequest sends mode AUTO, no request id (the
// server generates one) and no transcript.

// GeminiInput is the parsed Gemini CLI BeforeTool hook input.
type GeminiInput struct {
	SessionID      string
	TranscriptPath string
	Cwd            string
	HookEventName  string
	Timestamp      string
	ToolName       string
	ToolInput      map[string]any
	// MCPServerName and MCPToolName are mcp_context.server_name and
	// mcp_context.tool_name, set for MCP tools only.
	MCPServerName string
	MCPToolName   string
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
		ToolName   string `json:"tool_name"`
	} `json:"mcp_context"`
}

// ParseGemini reads and validates a BeforeTool hook input. It fails when
// the input is not a JSON object, hook_event_name is not "BeforeTool",
// tool_name is missing, tool_input is missing or not an object, or
// mcp_context lacks server_name or tool_name (an MCP tool toolgate could
// not name).
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
		if w.MCPContext.ServerName == "" || w.MCPContext.ToolName == "" {
			return nil, errors.New("hook input: mcp_context without server_name or tool_name")
		}
		g.MCPServerName = w.MCPContext.ServerName
		g.MCPToolName = w.MCPContext.ToolName
	}
	return g, nil
}

// GeminiToolName is the name toolgate checks a BeforeTool input's tool
// under: mcp__<server>__<tool> for an MCP tool, whatever Gemini CLI called
// it (see the notes above), so that it is never taken for a built-in tool
// and mcp__server__tool rules match it; tool_name otherwise. A Gemini
// mcp_<server>_<tool> name without mcp_context is left as it is: where the
// server ends cannot be told when either name holds "_", and a name
// toolgate does not know goes to the classifier.
func GeminiToolName(in *GeminiInput) string {
	if in.MCPServerName != "" || in.MCPToolName != "" {
		return "mcp__" + in.MCPServerName + "__" + in.MCPToolName
	}
	return in.ToolName
}

// GeminiRequest builds the CheckRequest for a BeforeTool input: tool name
// (GeminiToolName) and input, working directory (only when cwd is
// absolute), session id and
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
	if (in.MCPServerName == "") != (in.MCPToolName == "") {
		return nil, errors.New("hook: MCP tool without a server or tool name")
	}
	input, err := structpb.NewStruct(in.ToolInput)
	if err != nil {
		return nil, fmt.Errorf("hook: tool_input: %w", err)
	}
	return &toolgatev1.CheckRequest{
		SessionId:        in.SessionID,
		Tool:             &toolgatev1.ToolCall{Name: GeminiToolName(in), Input: input},
		WorkingDirectory: absOrEmpty(in.Cwd),
		Mode:             toolgatev1.PermissionMode_PERMISSION_MODE_AUTO,
	}, nil
}

// GeminiOutput writes the BeforeTool hook output: {"decision":"allow"} or
// {"decision":"deny","reason":...}. "ask" cannot be expressed in Gemini
// CLI's BeforeTool output and is written as a deny whose reason asks for
// user approval; any other unknown decision is written as a deny too.
func GeminiOutput(w io.Writer, decision, reason string) error {
	return hookout.GeminiOutput(w, decision, reason)
}
