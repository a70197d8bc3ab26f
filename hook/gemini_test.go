package hook

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	toolgatev1 "github.com/toolgate/toolgate/gen/toolgate/v1"
)

const geminiSample = `{
  "session_id": "s-1",
  "transcript_path": "/home/u/.gemini/tmp/h/chats/session.json",
  "cwd": "/work/app",
  "hook_event_name": "BeforeTool",
  "timestamp": "2026-01-15T10:00:00.000Z",
  "tool_name": "run_shell_command",
  "tool_input": {"command": "git status", "description": "check"}
}`

func TestParseGemini(t *testing.T) {
	in, err := ParseGemini(strings.NewReader(geminiSample))
	if err != nil {
		t.Fatal(err)
	}
	if in.SessionID != "s-1" || in.Cwd != "/work/app" || in.HookEventName != "BeforeTool" ||
		in.ToolName != "run_shell_command" || in.ToolInput["command"] != "git status" ||
		in.MCPServerName != "" || in.MCPToolName != "" || in.Timestamp == "" {
		t.Errorf("parsed %+v", in)
	}
	errCases := []struct{ name, input, want string }{
		{"not json", `{`, "not a JSON object"},
		{"claude event", `{"hook_event_name":"PreToolUse","tool_name":"x","tool_input":{}}`, "BeforeTool"},
		{"missing tool_name", `{"hook_event_name":"BeforeTool","tool_input":{}}`, "missing tool_name"},
		{"tool_input not object", `{"hook_event_name":"BeforeTool","tool_name":"x","tool_input":1}`, "not an object"},
		{"mcp_context empty", `{"hook_event_name":"BeforeTool","tool_name":"read_file","tool_input":{},"mcp_context":{}}`, "mcp_context without"},
		{"mcp_context without tool_name", `{"hook_event_name":"BeforeTool","tool_name":"read_file","tool_input":{},"mcp_context":{"server_name":"fs"}}`, "mcp_context without"},
		{"mcp_context without server_name", `{"hook_event_name":"BeforeTool","tool_name":"read_file","tool_input":{},"mcp_context":{"tool_name":"read_file"}}`, "mcp_context without"},
		{"mcp_context not an object", `{"hook_event_name":"BeforeTool","tool_name":"read_file","tool_input":{},"mcp_context":"fs"}`, "not a JSON object"},
	}
	for _, tc := range errCases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseGemini(strings.NewReader(tc.input))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want containing %q", err, tc.want)
			}
		})
	}
}

func TestGeminiRequest(t *testing.T) {
	in, err := ParseGemini(strings.NewReader(geminiSample))
	if err != nil {
		t.Fatal(err)
	}
	req, err := GeminiRequest(in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if req.GetSessionId() != "s-1" || req.GetWorkingDirectory() != "/work/app" ||
		req.GetTool().GetName() != "run_shell_command" ||
		req.GetTool().GetInput().GetFields()["command"].GetStringValue() != "git status" ||
		req.GetMode() != toolgatev1.PermissionMode_PERMISSION_MODE_AUTO || len(req.GetTranscript()) != 0 {
		t.Errorf("request %v", req)
	}
	in.Cwd = "app"
	if req, _ := GeminiRequest(in, Options{}); req.GetWorkingDirectory() != "" {
		t.Errorf("relative cwd → %q", req.GetWorkingDirectory())
	}
}

// An MCP tool is named mcp__<server>__<tool> whatever name Gemini CLI gave
// it, above all a bare name that toolgate knows as a built-in tool; a tool
// without mcp_context keeps its name.
func TestGeminiMCPToolName(t *testing.T) {
	tests := []struct {
		name, tool, mcpContext, want string
	}{
		{"bare name of a Gemini built-in", "read_file", `{"server_name":"fs","tool_name":"read_file"}`, "mcp__fs__read_file"},
		{"bare name of another agent's shell tool", "shell", `{"server_name":"box","tool_name":"shell"}`, "mcp__box__shell"},
		{"bare name of a Claude Code tool", "Read", `{"server_name":"docs","tool_name":"Read"}`, "mcp__docs__Read"},
		{"current mcp_ name", "mcp_gh_create_issue", `{"server_name":"gh","tool_name":"create_issue"}`, "mcp__gh__create_issue"},
		{"current mcp_ name, underscores in server and tool", "mcp_my_srv_list_all", `{"server_name":"my_srv","tool_name":"list_all"}`, "mcp__my_srv__list_all"},
		{"legacy server__tool name", "gh__create_issue", `{"server_name":"gh","tool_name":"create_issue"}`, "mcp__gh__create_issue"},
		{"extra mcp_context fields", "mcp_gh_x", `{"server_name":"gh","tool_name":"x","command":"npx","args":["gh-mcp"],"cwd":"/w"}`, "mcp__gh__x"},
		{"built-in without mcp_context", "read_file", "", "read_file"},
		{"mcp_context null", "read_file", "null", "read_file"},
		{"mcp_ name without mcp_context stays", "mcp_gh_create_issue", "", "mcp_gh_create_issue"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := `{"hook_event_name":"BeforeTool","cwd":"/work/app","tool_name":"` + tt.tool + `","tool_input":{"file_path":"a.txt"}`
			if tt.mcpContext != "" {
				doc += `,"mcp_context":` + tt.mcpContext
			}
			in, err := ParseGemini(strings.NewReader(doc + "}"))
			if err != nil {
				t.Fatal(err)
			}
			if in.ToolName != tt.tool {
				t.Errorf("ToolName = %q, want the name as sent, %q", in.ToolName, tt.tool)
			}
			if got := GeminiToolName(in); got != tt.want {
				t.Errorf("GeminiToolName = %q, want %q", got, tt.want)
			}
			req, err := GeminiRequest(in, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got := req.GetTool().GetName(); got != tt.want {
				t.Errorf("request tool name = %q, want %q", got, tt.want)
			}
			if req.GetTool().GetInput().GetFields()["file_path"].GetStringValue() != "a.txt" {
				t.Errorf("tool input lost: %v", req.GetTool().GetInput())
			}
		})
	}
	// A hand-built input with half an MCP identity is refused, not guessed.
	for _, in := range []*GeminiInput{
		{ToolName: "read_file", ToolInput: map[string]any{}, MCPServerName: "fs"},
		{ToolName: "read_file", ToolInput: map[string]any{}, MCPToolName: "read_file"},
	} {
		if req, err := GeminiRequest(in, Options{}); err == nil {
			t.Errorf("GeminiRequest(%+v) = %v, want an error", in, req)
		}
	}
}

func TestGeminiOutput(t *testing.T) {
	tests := []struct {
		decision, reason string
		want             string
		reasonHas        string
	}{
		{"allow", "", "allow", ""},
		{"deny", "dangerous", "deny", "dangerous"},
		{"ask", "pushes to main", "deny", "needs the user's approval"},
		{"bogus", "x", "deny", "invalid decision"},
	}
	for _, tc := range tests {
		t.Run(tc.decision, func(t *testing.T) {
			var buf bytes.Buffer
			if err := GeminiOutput(&buf, tc.decision, tc.reason); err != nil {
				t.Fatal(err)
			}
			var out map[string]any
			if err := json.Unmarshal(buf.Bytes(), &out); err != nil {
				t.Fatal(err)
			}
			if out["decision"] != tc.want {
				t.Errorf("decision = %v, want %v", out["decision"], tc.want)
			}
			reason, _ := out["reason"].(string)
			if !strings.Contains(reason, tc.reasonHas) || !strings.Contains(reason, tc.reason) {
				t.Errorf("reason = %q, want containing %q and %q", reason, tc.reasonHas, tc.reason)
			}
			if tc.want == "deny" && reason == "" {
				t.Error("deny without reason")
			}
		})
	}
}
