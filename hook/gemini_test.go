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
  "tool_input": {"command": "git status", "description": "check"},
  "mcp_context": {"server_name": "gh", "tool_name": "create_issue"}
}`

func TestParseGemini(t *testing.T) {
	in, err := ParseGemini(strings.NewReader(geminiSample))
	if err != nil {
		t.Fatal(err)
	}
	if in.SessionID != "s-1" || in.Cwd != "/work/app" || in.HookEventName != "BeforeTool" ||
		in.ToolName != "run_shell_command" || in.ToolInput["command"] != "git status" ||
		in.MCPServerName != "gh" || in.Timestamp == "" {
		t.Errorf("parsed %+v", in)
	}
	errCases := []struct{ name, input, want string }{
		{"not json", `{`, "not a JSON object"},
		{"claude event", `{"hook_event_name":"PreToolUse","tool_name":"x","tool_input":{}}`, "BeforeTool"},
		{"missing tool_name", `{"hook_event_name":"BeforeTool","tool_input":{}}`, "missing tool_name"},
		{"tool_input not object", `{"hook_event_name":"BeforeTool","tool_name":"x","tool_input":1}`, "not an object"},
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
