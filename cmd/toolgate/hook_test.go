package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// runHook runs "toolgate hook claude-code" with input on stdin and returns
// the decision and reason it printed.
func runHook(t *testing.T, input string, args ...string) (string, string) {
	t.Helper()
	stdin = strings.NewReader(input)
	t.Cleanup(func() { stdin = nil })
	var out, errOut bytes.Buffer
	if code := run(t.Context(), append([]string{"hook", "claude-code"}, args...), &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var got struct {
		HookSpecificOutput struct {
			HookEventName            string `json:"hookEventName"`
			PermissionDecision       string `json:"permissionDecision"`
			PermissionDecisionReason string `json:"permissionDecisionReason"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil || got.HookSpecificOutput.HookEventName != "PreToolUse" {
		t.Fatalf("output %q: %v", out.String(), err)
	}
	return got.HookSpecificOutput.PermissionDecision, got.HookSpecificOutput.PermissionDecisionReason
}

func claudeInput(tool, input string) string {
	return `{"session_id":"s1","transcript_path":"/nonexistent/t.jsonl","cwd":"/home/dev/project","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"` + tool + `","tool_input":` + input + `,"tool_use_id":"toolu_1"}`
}

func TestHookClaudeCode(t *testing.T) {
	addr := startServe(t)
	if d, _ := runHook(t, claudeInput("Read", `{"file_path":"/home/dev/project/main.go"}`), "--addr", addr); d != "allow" {
		t.Errorf("read: %s", d)
	}
	if d, r := runHook(t, claudeInput("Read", `{"file_path":"/home/dev/.ssh/id_rsa"}`), "--addr", addr); d != "deny" || !strings.Contains(r, "denied by rule") {
		t.Errorf("credential read: %s %q", d, r)
	}
	// Default permission mode asks before shell commands that are not read-only.
	if d, _ := runHook(t, claudeInput("Bash", `{"command":"make deploy"}`), "--addr", addr); d != "ask" {
		t.Errorf("make deploy in default mode: %s", d)
	}

	// Failing closed.
	dead := deadAddr(t)
	if d, r := runHook(t, claudeInput("Read", `{"file_path":"x"}`), "--addr", dead, "--timeout", "2s"); d != "deny" || !strings.Contains(r, "could not decide") {
		t.Errorf("server down: %s %q", d, r)
	}
	if d, _ := runHook(t, claudeInput("Read", `{"file_path":"x"}`), "--addr", dead, "--timeout", "2s", "--on-error", "ask"); d != "ask" {
		t.Errorf("server down, on-error ask: %s", d)
	}
	if d, r := runHook(t, `{not json`, "--addr", addr); d != "deny" || !strings.Contains(r, "could not decide") {
		t.Errorf("bad input: %s %q", d, r)
	}
}

func TestHookGeminiCLI(t *testing.T) {
	addr := startServe(t)
	run1 := func(input string, args ...string) map[string]any {
		t.Helper()
		stdin = strings.NewReader(input)
		t.Cleanup(func() { stdin = nil })
		var out, errOut bytes.Buffer
		if code := run(t.Context(), append([]string{"hook", "gemini-cli"}, args...), &out, &errOut); code != 0 {
			t.Fatalf("exit %d: %s", code, errOut.String())
		}
		var got map[string]any
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatalf("output %q: %v", out.String(), err)
		}
		return got
	}
	in := func(tool, input string) string {
		return `{"session_id":"g1","transcript_path":"","cwd":"/home/dev/project","hook_event_name":"BeforeTool","timestamp":"2026-11-22T00:00:00Z","tool_name":"` + tool + `","tool_input":` + input + `}`
	}
	if got := run1(in("read_file", `{"absolute_path":"/home/dev/project/a.go"}`), "--addr", addr); got["decision"] != "allow" {
		t.Errorf("read_file: %v", got)
	}
	if got := run1(in("read_file", `{"absolute_path":"/home/dev/.aws/credentials"}`), "--addr", addr); got["decision"] != "deny" {
		t.Errorf("credentials: %v", got)
	}
	// Gemini has no ask: an ASK blocks, saying approval is needed.
	if got := run1(in("run_shell_command", `{"command":"make deploy"}`), "--addr", addr); got["decision"] != "deny" {
		t.Errorf("ask rendered as: %v", got)
	}
	if got := run1(`[]`, "--addr", addr); got["decision"] != "deny" || !strings.Contains(got["reason"].(string), "could not decide") {
		t.Errorf("bad input: %v", got)
	}
}
