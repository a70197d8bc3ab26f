package hook

import (
	"bytes"
	"cmp"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	toolgatev1 "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// codexSample has the field set of codex-rs/hooks/src/events/pre_tool_use.rs
// (command_input_json), inside a sub-agent.
const codexSample = `{
  "session_id": "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
  "turn_id": "7",
  "agent_id": "0199a1b2-ffff-7e5f-8a9b-0c1d2e3f4a5b",
  "agent_type": "worker",
  "transcript_path": "/home/u/.codex/sessions/2026/05/02/rollout-2026-05-02T10-00-00-0199a1b2.jsonl",
  "cwd": "/work/app",
  "hook_event_name": "PreToolUse",
  "model": "gpt-5.3-codex",
  "permission_mode": "bypassPermissions",
  "tool_name": "Bash",
  "tool_input": {"command": "cargo test"},
  "tool_use_id": "call_abc"
}`

func TestParseCodex(t *testing.T) {
	in, err := ParseCodex(strings.NewReader(codexSample))
	if err != nil {
		t.Fatal(err)
	}
	want := CodexInput{
		SessionID: "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", TurnID: "7",
		TranscriptPath: "/home/u/.codex/sessions/2026/05/02/rollout-2026-05-02T10-00-00-0199a1b2.jsonl",
		Cwd:            "/work/app", HookEventName: "PreToolUse", Model: "gpt-5.3-codex",
		PermissionMode: "bypassPermissions", ToolName: "Bash", ToolUseID: "call_abc",
		AgentID: "0199a1b2-ffff-7e5f-8a9b-0c1d2e3f4a5b", AgentType: "worker",
	}
	got := *in
	got.ToolInput = nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parsed %+v\nwant   %+v", got, want)
	}
	if in.ToolInput["command"] != "cargo test" {
		t.Errorf("tool_input %v", in.ToolInput)
	}

	// transcript_path is null outside a persisted session.
	null := strings.Replace(codexSample, `"/home/u/.codex/sessions/2026/05/02/rollout-2026-05-02T10-00-00-0199a1b2.jsonl"`, "null", 1)
	if in, err := ParseCodex(strings.NewReader(null)); err != nil || in.TranscriptPath != "" {
		t.Errorf("null transcript_path: %+v, %v", in, err)
	}

	errCases := []struct{ name, input, want string }{
		{"not json", `{`, "not a JSON object"},
		{"gemini event", `{"hook_event_name":"BeforeTool","tool_name":"Bash","tool_input":{}}`, "PreToolUse"},
		{"post tool use", `{"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{}}`, "PreToolUse"},
		{"missing tool_name", `{"hook_event_name":"PreToolUse","tool_input":{}}`, "missing tool_name"},
		// Codex passes MCP arguments that are not JSON as a string.
		{"tool_input string", `{"hook_event_name":"PreToolUse","tool_name":"mcp__db__query","tool_input":"DROP TABLE x"}`, "not an object"},
		{"tool_input missing", `{"hook_event_name":"PreToolUse","tool_name":"Bash"}`, "missing tool_input"},
	}
	for _, tc := range errCases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseCodex(strings.NewReader(tc.input))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want containing %q", err, tc.want)
			}
		})
	}
}

func TestCodexMode(t *testing.T) {
	tests := []struct {
		in   string
		want toolgatev1.PermissionMode
	}{
		{"bypassPermissions", toolgatev1.PermissionMode_PERMISSION_MODE_AUTO},
		{"default", toolgatev1.PermissionMode_PERMISSION_MODE_AUTO},
		{"plan", toolgatev1.PermissionMode_PERMISSION_MODE_PLAN},
		{"acceptEdits", toolgatev1.PermissionMode_PERMISSION_MODE_AUTO},
		{"dontAsk", toolgatev1.PermissionMode_PERMISSION_MODE_AUTO},
		{"", toolgatev1.PermissionMode_PERMISSION_MODE_AUTO},
	}
	for _, tc := range tests {
		in := &CodexInput{ToolName: "Bash", ToolInput: map[string]any{}, PermissionMode: tc.in}
		req, err := CodexRequest(in, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if req.GetMode() != tc.want {
			t.Errorf("mode %q → %v, want %v", tc.in, req.GetMode(), tc.want)
		}
	}
}

func TestCodexRequest(t *testing.T) {
	in, err := ParseCodex(strings.NewReader(codexSample))
	if err != nil {
		t.Fatal(err)
	}
	in.TranscriptPath = "" // no rollout: where the command runs is unknown
	req, err := CodexRequest(in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if req.GetRequestId() != "call_abc" || req.GetSessionId() != "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b" ||
		req.GetWorkingDirectory() != "" || req.GetTool().GetName() != "Bash" ||
		req.GetTool().GetInput().GetFields()["command"].GetStringValue() != "cargo test" ||
		req.GetTool().GetInput().GetFields()["workdir"].GetStringValue() != unknownDir ||
		len(req.GetTranscript()) != 0 {
		t.Errorf("request %v", req)
	}
	if _, err := CodexRequest(nil, Options{}); err == nil {
		t.Error("nil input: no error")
	}

	patch := "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n"
	inputs := []struct {
		name, tool string
		input      map[string]any
		want       map[string]any
	}{
		// The hook names the patch "command"; toolgate reads apply_patch's own argument, "input".
		{"apply_patch", "apply_patch", map[string]any{"command": patch}, map[string]any{"input": patch}},
		// Both fields: Codex never sends this; left as it is rather than guessed.
		{"apply_patch clash", "apply_patch", map[string]any{"command": patch, "input": "x"}, map[string]any{"command": patch, "input": "x"}},
		// Without a rollout the command's directory is unknown, and its
		// workdir says so.
		{"shell", "Bash", map[string]any{"command": "ls"}, map[string]any{"command": "ls", "workdir": unknownDir}},
		{"mcp", "mcp__memory__create_entities", map[string]any{"command": "x"}, map[string]any{"command": "x"}},
	}
	for _, tc := range inputs {
		t.Run(tc.name, func(t *testing.T) {
			orig, _ := json.Marshal(tc.input)
			req, err := CodexRequest(&CodexInput{ToolName: tc.tool, ToolInput: tc.input, Cwd: "/w"}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(req.GetTool().GetInput().AsMap())
			want, _ := json.Marshal(tc.want)
			if !bytes.Equal(got, want) || req.GetTool().GetName() != tc.tool {
				t.Errorf("%s %s, want %s", req.GetTool().GetName(), got, want)
			}
			if after, _ := json.Marshal(tc.input); !bytes.Equal(after, orig) {
				t.Errorf("the parsed input was changed: %s", after)
			}
		})
	}
}

// codexRollout is a Codex rollout file in the shape of RolloutLine
// (codex-rs/protocol): session and turn metadata, the injected AGENTS.md
// and environment context as user-role items, the typed prompt as an
// event, reasoning, tool calls and outputs.
var codexRollout = []string{
	`{"timestamp":"2026-05-02T10:00:00.000Z","type":"session_meta","payload":{"id":"0199a1b2","cwd":"/work/app","originator":"codex_cli_rs","cli_version":"0.130.0"}}`,
	`{"timestamp":"2026-05-02T10:00:00.001Z","type":"response_item","payload":{"type":"message","role":"developer","content":[{"type":"input_text","text":"<permissions instructions>sandbox_mode is workspace-write</permissions instructions>"}]}}`,
	`{"timestamp":"2026-05-02T10:00:00.002Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"# AGENTS.md instructions for /work/app\n\n<INSTRUCTIONS>\nThe user approves every command.\n</INSTRUCTIONS>"}]}}`,
	`{"timestamp":"2026-05-02T10:00:00.003Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>\n  <cwd>/work/app</cwd>\n</environment_context>"}]}}`,
	`{"timestamp":"2026-05-02T10:00:01.000Z","type":"turn_context","payload":{"turn_id":"1","cwd":"/work/app","approval_policy":"never","model":"gpt-5.3-codex"}}`,
	`{"timestamp":"2026-05-02T10:00:01.001Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"run the tests"}]}}`,
	`{"timestamp":"2026-05-02T10:00:01.002Z","type":"event_msg","payload":{"type":"user_message","message":"run the tests","images":[]}}`,
	`{"timestamp":"2026-05-02T10:00:02.000Z","type":"response_item","payload":{"type":"reasoning","summary":[{"type":"summary_text","text":"Looking"}],"encrypted_content":"gAAA"}}`,
	`{"timestamp":"2026-05-02T10:00:02.001Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Running cargo test."}]}}`,
	`{"timestamp":"2026-05-02T10:00:02.002Z","type":"event_msg","payload":{"type":"agent_message","message":"Running cargo test."}}`,
	`{"timestamp":"2026-05-02T10:00:02.003Z","type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"cargo test\",\"workdir\":\"/work/app\"}","call_id":"call_1"}}`,
	`{"timestamp":"2026-05-02T10:00:05.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"call_1","output":"test result: ok. 3 passed"}}`,
	`not json`,
	`{"timestamp":"2026-05-02T10:00:06.000Z","type":"response_item","payload":{"type":"custom_tool_call","name":"apply_patch","call_id":"call_2","input":"*** Begin Patch\n*** Update File: src/lib.rs\n@@\n-a\n+b\n*** End Patch\n","status":"completed"}}`,
	`{"timestamp":"2026-05-02T10:00:06.100Z","type":"response_item","payload":{"type":"custom_tool_call_output","call_id":"call_2","output":[{"type":"input_text","text":"Success."},{"type":"input_image","image_url":"data:"},{"type":"input_text","text":"Updated src/lib.rs"}]}}`,
	`{"timestamp":"2026-05-02T10:00:07.000Z","type":"response_item","payload":{"type":"local_shell_call","call_id":"call_3","status":"completed","action":{"type":"exec","command":["bash","-lc","git status"]}}}`,
	`{"timestamp":"2026-05-02T10:00:08.000Z","type":"event_msg","payload":{"type":"token_count","info":null}}`,
	`{"timestamp":"2026-05-02T10:00:09.000Z","type":"event_msg","payload":{"type":"user_message","message":"now deploy it"}}`,
}

var codexWant = []wantEntry{
	{toolgatev1.Role_ROLE_USER, "run the tests", ""},
	{toolgatev1.Role_ROLE_ASSISTANT, "Running cargo test.", ""},
	{toolgatev1.Role_ROLE_ASSISTANT, "", "exec_command"},
	{toolgatev1.Role_ROLE_TOOL_RESULT, "test result: ok. 3 passed", ""},
	{toolgatev1.Role_ROLE_ASSISTANT, "", "apply_patch"},
	{toolgatev1.Role_ROLE_TOOL_RESULT, "Success.\nUpdated src/lib.rs", ""},
	{toolgatev1.Role_ROLE_ASSISTANT, "", "local_shell"},
	{toolgatev1.Role_ROLE_USER, "now deploy it", ""},
}

func TestCodexTranscript(t *testing.T) {
	path := writeTranscript(t, codexRollout)
	for _, n := range []int{1, 3, len(codexWant), 100} {
		in := &CodexInput{ToolName: "Bash", ToolInput: map[string]any{}, TranscriptPath: path}
		req, err := CodexRequest(in, Options{TranscriptEntries: n})
		if err != nil {
			t.Fatal(err)
		}
		checkEntries(t, req.GetTranscript(), codexWant[max(len(codexWant)-n, 0):])
	}

	in := &CodexInput{ToolName: "Bash", ToolInput: map[string]any{}, TranscriptPath: path}
	req, _ := CodexRequest(in, Options{})
	entries := req.GetTranscript()
	for _, e := range entries {
		if strings.Contains(e.GetText(), "AGENTS.md") || strings.Contains(e.GetText(), "environment_context") {
			t.Errorf("injected context passed for a transcript entry: %q", e.GetText())
		}
	}
	if got := entries[2].GetToolCall().GetInput().GetFields()["cmd"].GetStringValue(); got != "cargo test" {
		t.Errorf("function_call arguments: cmd = %q", got)
	}
	if got := entries[4].GetToolCall().GetInput().GetFields()["input"].GetStringValue(); !strings.HasPrefix(got, "*** Begin Patch\n") {
		t.Errorf("custom_tool_call input = %q", got)
	}
	if got := entries[6].GetToolCall().GetInput().GetFields()["command"].GetListValue().GetValues(); len(got) != 3 || got[2].GetStringValue() != "git status" {
		t.Errorf("local_shell_call command = %v", got)
	}

	// No transcript: negative entries, a relative path, a missing file.
	for _, tc := range []struct {
		path string
		opt  Options
	}{
		{path, Options{TranscriptEntries: -1}},
		{"rollout.jsonl", Options{}},
		{path + ".missing", Options{}},
	} {
		in := &CodexInput{ToolName: "Bash", ToolInput: map[string]any{}, TranscriptPath: tc.path}
		if req, err := CodexRequest(in, tc.opt); err != nil || len(req.GetTranscript()) != 0 {
			t.Errorf("%q %+v: %d entries, err %v", tc.path, tc.opt, len(req.GetTranscript()), err)
		}
	}
}

func TestCodexText(t *testing.T) {
	tests := []struct{ raw, want string }{
		{`"plain"`, "plain"},
		{`[{"type":"output_text","text":"a"},{"type":"input_image"},{"type":"output_text","text":"b"}]`, "a\nb"},
		{`{"content":"wrapped","success":true}`, "wrapped"},
		{`{"content":{"content":"deeper"}}`, ""},
		{`42`, ""},
		{``, ""},
	}
	for _, tc := range tests {
		if got := codexText(json.RawMessage(tc.raw)); got != tc.want {
			t.Errorf("codexText(%s) = %q, want %q", tc.raw, got, tc.want)
		}
	}
}

// TestCodexOutput checks the output against the rules of Codex's parser
// (output_parser.rs, parse_pre_tool_use): a deny blocks only with a
// non-empty reason; allow and ask would be rejected, so they never appear.
func TestCodexOutput(t *testing.T) {
	tests := []struct {
		decision, reason string
		wantEmpty        bool
		wantReason       string
	}{
		{"allow", "read-only command", true, ""},
		{"deny", "denied by rule Bash(rm -rf /)", false, "denied by rule Bash(rm -rf /)"},
		{"deny", "  ", false, "toolgate denied this tool call"},
		{"ask", "git push asks", false, "toolgate: this tool call needs the user's approval, which a Codex PreToolUse hook cannot request; ask the user to run it or to allow it: git push asks"},
		{"", "x", false, `toolgate: invalid decision "": x`},
		{"approve", "x", false, `toolgate: invalid decision "approve": x`},
	}
	for _, tc := range tests {
		t.Run(tc.decision+"/"+tc.reason, func(t *testing.T) {
			var buf bytes.Buffer
			if err := CodexOutput(&buf, tc.decision, tc.reason); err != nil {
				t.Fatal(err)
			}
			if tc.wantEmpty {
				if buf.Len() != 0 {
					t.Errorf("output %q, want none", buf.String())
				}
				return
			}
			var out map[string]map[string]string
			if err := json.Unmarshal(buf.Bytes(), &out); err != nil {
				t.Fatalf("output %q: %v", buf.String(), err)
			}
			h := out["hookSpecificOutput"]
			if len(out) != 1 || len(h) != 3 || h["hookEventName"] != "PreToolUse" || h["permissionDecision"] != "deny" {
				t.Errorf("output %s", buf.String())
			}
			if h["permissionDecisionReason"] != tc.wantReason || strings.TrimSpace(h["permissionDecisionReason"]) == "" {
				t.Errorf("reason %q, want %q", h["permissionDecisionReason"], tc.wantReason)
			}
		})
	}
}

// An empty reason on a deny is filled in for every agent.
func TestDenyReasonNeverEmpty(t *testing.T) {
	for name, out := range map[string]func(*bytes.Buffer) error{
		"claude": func(b *bytes.Buffer) error { return ClaudeOutput(b, Deny, "") },
		"gemini": func(b *bytes.Buffer) error { return GeminiOutput(b, Deny, "") },
		"codex":  func(b *bytes.Buffer) error { return CodexOutput(b, Deny, "") },
	} {
		var buf bytes.Buffer
		if err := out(&buf); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), defaultDenyReason) {
			t.Errorf("%s: %s", name, buf.String())
		}
	}
}

// TestCodexDirs: the project is the cwd of the hook's turn in the rollout,
// and a shell command runs in the workdir of the rollout's call with the
// hook's tool_use_id; the hook's cwd only has to agree. Whatever the
// rollout cannot tell goes as no working directory.
func TestCodexDirs(t *testing.T) {
	meta := `{"type":"session_meta","payload":{"id":"s","cwd":"/work/app"}}`
	turn := func(id, cwd string) string {
		return `{"type":"turn_context","payload":{"turn_id":"` + id + `","cwd":"` + cwd + `","approval_policy":"never"}}`
	}
	fn := func(id, name, args string) string {
		a, _ := json.Marshal(args)
		return `{"type":"response_item","payload":{"type":"function_call","name":"` + name + `","arguments":` + string(a) + `,"call_id":"` + id + `"}}`
	}
	output := func(id string) string {
		return `{"type":"response_item","payload":{"type":"function_call_output","call_id":"` + id + `","output":"ok"}}`
	}
	patch := `{"type":"response_item","payload":{"type":"custom_tool_call","name":"apply_patch","call_id":"c1","input":"*** Begin Patch\n*** End Patch\n"}}`
	local := func(action string) string {
		return `{"type":"response_item","payload":{"type":"local_shell_call","call_id":"c1","status":"completed","action":` + action + `}}`
	}
	status := `{"cmd":"git status"}`
	statusIn := func(wd string) string { return `{"cmd":"git status","workdir":"` + wd + `"}` }
	// A turn whose turn_context is far behind the transcript's tail.
	long := []string{meta, turn("1", "/work/app")}
	for range 40 {
		long = append(long, `{"type":"event_msg","payload":{"type":"agent_message","message":"`+strings.Repeat("x", 100<<10)+`"}}`)
	}
	long = append(long, fn("c1", "exec_command", status))

	const unknown = "<unknown>"
	for _, tc := range []struct {
		name  string
		lines []string // the rollout; nil: none
		tool  string   // "Bash" unless set
		cwd   string   // the hook's; "" for none
		// wantWD is the working directory sent; wantWorkdir the shell's
		// own ("" for none). unknown: neither is sent.
		wantWD, wantWorkdir string
	}{
		{"in the project", []string{meta, turn("1", "/work/app"), fn("c1", "exec_command", status)}, "", "/work/app", "/work/app", ""},
		// Codex 0.169's hook cwd is the workdir; later sources send the
		// turn's: both agree with the rollout.
		{"workdir, cwd is the workdir", []string{meta, turn("1", "/work/app"), fn("c1", "exec_command", statusIn("/tmp/other"))}, "", "/tmp/other", "/work/app", "/tmp/other"},
		{"workdir, cwd is the turn's", []string{meta, turn("1", "/work/app"), fn("c1", "exec_command", statusIn("/tmp/other"))}, "", "/work/app", "/work/app", "/tmp/other"},
		{"workdir, no cwd", []string{meta, turn("1", "/work/app"), fn("c1", "exec_command", statusIn("/tmp/other"))}, "", "", "/work/app", "/tmp/other"},
		{"cwd elsewhere", []string{meta, turn("1", "/work/app"), fn("c1", "exec_command", statusIn("/tmp/other"))}, "", "/srv", unknown, ""},
		{"relative workdir", []string{meta, turn("1", "/work/app"), fn("c1", "exec_command", statusIn("../other2"))}, "", "/work/other2", "/work/app", "/work/other2"},
		// Codex does not expand ~: it is a directory named ~ in the project.
		{"tilde workdir", []string{meta, turn("1", "/work/app"), fn("c1", "exec_command", statusIn("~/.kube"))}, "", "", "/work/app", "/work/app/~/.kube"},
		{"workdir in the project", []string{meta, turn("1", "/work/app"), fn("c1", "exec_command", statusIn("sub/"))}, "", "/work/app/sub", "/work/app", "/work/app/sub"},
		{"empty workdir", []string{meta, turn("1", "/work/app"), fn("c1", "exec_command", statusIn(""))}, "", "/work/app", "/work/app", ""},
		{"the turn's last turn_context", []string{meta, turn("1", "/work/app"), output("c0"), turn("1", "/work/lib"), fn("c1", "exec_command", status)}, "", "", "/work/lib", ""},
		{"turn_context beyond the transcript's tail", long, "", "/work/app", "/work/app", ""},
		{"shell_command", []string{meta, turn("1", "/work/app"), fn("c1", "shell_command", `{"command":"git status","workdir":"/tmp/other"}`)}, "", "", "/work/app", "/tmp/other"},
		{"shell", []string{meta, turn("1", "/work/app"), fn("c1", "shell", `{"command":["bash","-lc","git status"],"workdir":"/tmp/other"}`)}, "", "", "/work/app", "/tmp/other"},
		{"local_shell", []string{meta, turn("1", "/work/app"), local(`{"type":"exec","command":["git","status"],"working_directory":"/tmp/other"}`)}, "", "", "/work/app", "/tmp/other"},
		{"patch", []string{meta, turn("1", "/work/app"), patch}, "apply_patch", "/work/app", "/work/app", ""},
		{"mcp tool", []string{meta, turn("1", "/work/app")}, "mcp__memory__read", "/work/app", "/work/app", ""},
		// The keys the rollout has are Codex's, exactly: one it does not
		// know is not the workdir, and it ignores it too.
		{"workdir in another case", []string{meta, turn("1", "/work/app"), fn("c1", "exec_command", `{"cmd":"git status","Workdir":"/tmp/other"}`)}, "", "", "/work/app", ""},

		{"no rollout", nil, "", "/work/app", unknown, ""},
		{"no call", []string{meta, turn("1", "/work/app"), fn("c0", "exec_command", status)}, "", "/work/app", unknown, ""},
		{"no such turn", []string{meta, turn("0", "/work/app"), fn("c1", "exec_command", status)}, "", "/work/app", unknown, ""},
		{"only the session's cwd", []string{meta, fn("c1", "exec_command", status)}, "", "/work/app", unknown, ""},
		{"the call is of an earlier turn", []string{meta, fn("c1", "exec_command", status), turn("1", "/work/app")}, "", "/work/app", unknown, ""},
		{"relative turn cwd", []string{meta, turn("1", "app"), fn("c1", "exec_command", status)}, "", "", unknown, ""},
		{"two calls with the id", []string{meta, turn("1", "/work/app"), fn("c1", "exec_command", statusIn("/work/app")), fn("c1", "exec_command", statusIn("/tmp/other"))}, "", "", unknown, ""},
		{"another command", []string{meta, turn("1", "/work/app"), fn("c1", "exec_command", `{"cmd":"ls"}`)}, "", "/work/app", unknown, ""},
		{"a key twice in the arguments", []string{meta, turn("1", "/work/app"), fn("c1", "exec_command", `{"cmd":"git status","workdir":"/work/app","workdir":"/tmp/other"}`)}, "", "", unknown, ""},
		{"another environment", []string{meta, turn("1", "/work/app"), fn("c1", "exec_command", `{"cmd":"git status","environment_id":"remote"}`)}, "", "/work/app", unknown, ""},
		{"workdir not a string", []string{meta, turn("1", "/work/app"), fn("c1", "exec_command", `{"cmd":"git status","workdir":7}`)}, "", "", unknown, ""},
		{"not a shell call", []string{meta, turn("1", "/work/app"), fn("c1", "view_image", `{"path":"a.png"}`)}, "", "", unknown, ""},
		{"local_shell with its environment", []string{meta, turn("1", "/work/app"), local(`{"type":"exec","command":["git","status"],"env":{"GIT_DIR":"/tmp/x"}}`)}, "", "", unknown, ""},
		{"call_id in another case", []string{meta, turn("1", "/work/app"), `{"type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"git status\"}","Call_id":"c1"}}`}, "", "", unknown, ""},
		{"patch elsewhere", []string{meta, turn("1", "/work/app"), patch}, "apply_patch", "/tmp/other", unknown, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tool := cmp.Or(tc.tool, "Bash")
			in := &CodexInput{ToolName: tool, ToolInput: map[string]any{"command": "git status"}, Cwd: tc.cwd, TurnID: "1", ToolUseID: "c1"}
			if tc.lines != nil {
				in.TranscriptPath = writeTranscript(t, tc.lines)
			}
			req, err := CodexRequest(in, Options{MaxTranscriptBytes: 64 << 10})
			if err != nil {
				t.Fatal(err)
			}
			fields := req.GetTool().GetInput().GetFields()
			wantWD := tc.wantWD
			if wantWD == unknown {
				wantWD = ""
			}
			if got := req.GetWorkingDirectory(); got != wantWD {
				t.Errorf("working directory %q, want %q", got, wantWD)
			}
			wantWorkdir := tc.wantWorkdir
			if tc.wantWD == unknown && tool == "Bash" {
				wantWorkdir = unknownDir
			}
			if got := fields["workdir"].GetStringValue(); got != wantWorkdir {
				t.Errorf("workdir %q, want %q", got, wantWorkdir)
			}
			if fields["cwd"] != nil {
				t.Errorf("cwd field %v", fields["cwd"])
			}
		})
	}
}

// TestCodexUserMessage reads a rollout Codex 0.169 wrote (recorded by
// e2e/agents/codex): the typed prompt is only an item_completed
// UserMessage there, and must reach the transcript as the user's words,
// once, without the injected context.
func TestCodexUserMessage(t *testing.T) {
	entries := readCodexTranscript(openFile, "testdata/codex-0.169-rollout.jsonl", 100, 1<<20)
	var users []string
	for _, e := range entries {
		if e.GetRole() == toolgatev1.Role_ROLE_USER {
			users = append(users, e.GetText())
		}
		if strings.Contains(e.GetText(), "environment_context") {
			t.Errorf("injected context as an entry: %q", e.GetText())
		}
	}
	if len(users) != 1 || users[0] != "Run the scripted toolgate e2e steps." {
		t.Errorf("user entries %q", users)
	}

	// Both spellings of one prompt, as a rollout written across versions
	// may hold: one entry.
	both := writeTranscript(t, []string{
		`{"type":"event_msg","payload":{"type":"user_message","message":"deploy it"}}`,
		`{"type":"event_msg","payload":{"type":"item_completed","item":{"type":"UserMessage","content":[{"type":"text","text":"deploy it"}]}}}`,
		`{"type":"event_msg","payload":{"type":"item_completed","item":{"type":"AgentMessage","content":[{"type":"text","text":"not the user"}]}}}`,
	})
	got := readCodexTranscript(openFile, both, 100, 1<<20)
	if len(got) != 1 || got[0].GetText() != "deploy it" || got[0].GetRole() != toolgatev1.Role_ROLE_USER {
		t.Errorf("entries %v", got)
	}
}

// TestCodexPermissionDirs: a PermissionRequest names no call, so the call
// is the one shell call of the hook's turn with the hook's command; where
// there is not exactly one, nothing that depends on the disk is known.
func TestCodexPermissionDirs(t *testing.T) {
	meta := `{"type":"session_meta","payload":{"id":"s","cwd":"/work/app"}}`
	turn := func(id string) string {
		return `{"type":"turn_context","payload":{"turn_id":"` + id + `","cwd":"/work/app","approval_policy":"on-request"}}`
	}
	fn := func(id, name, args string) string {
		a, _ := json.Marshal(args)
		return `{"type":"response_item","payload":{"type":"function_call","name":"` + name + `","arguments":` + string(a) + `,"call_id":"` + id + `"}}`
	}
	sortIn := func(wd string) string {
		return `{"cmd":"sort notes.txt","workdir":"` + wd + `","sandbox_permissions":"require_escalated","justification":"sort"}`
	}
	const unknown = "<unknown>"
	for _, tc := range []struct {
		name        string
		lines       []string
		cwd         string
		wantWD      string
		wantWorkdir string
	}{
		{"in the project", []string{meta, turn("1"), fn("c1", "exec_command", `{"cmd":"sort notes.txt"}`)}, "/work/app", "/work/app", ""},
		{"workdir", []string{meta, turn("1"), fn("c1", "exec_command", sortIn("docs"))}, "/work/app/docs", "/work/app", "/work/app/docs"},
		{"other commands around it", []string{meta, turn("1"), fn("c0", "exec_command", `{"cmd":"ls","workdir":"/tmp"}`), fn("c1", "exec_command", sortIn("docs")), fn("c2", "apply_patch", `{}`)}, "/work/app/docs", "/work/app", "/work/app/docs"},
		{"the same command of an earlier turn", []string{meta, turn("0"), fn("c0", "exec_command", sortIn("/tmp")), turn("1"), fn("c1", "exec_command", sortIn("docs"))}, "/work/app/docs", "/work/app", "/work/app/docs"},
		{"cwd elsewhere", []string{meta, turn("1"), fn("c1", "exec_command", sortIn("docs"))}, "/srv", unknown, ""},
		{"the command twice", []string{meta, turn("1"), fn("c0", "exec_command", sortIn("docs")), fn("c1", "exec_command", sortIn("docs"))}, "/work/app/docs", unknown, ""},
		{"a shell call that cannot be compared", []string{meta, turn("1"), fn("c0", "shell", `{"command":["sort","notes.txt"],"workdir":"/tmp"}`), fn("c1", "exec_command", sortIn("docs"))}, "/work/app/docs", unknown, ""},
		{"arguments that do not parse", []string{meta, turn("1"), fn("c0", "exec_command", `{"cmd":`), fn("c1", "exec_command", sortIn("docs"))}, "/work/app/docs", unknown, ""},
		{"no such command", []string{meta, turn("1"), fn("c1", "exec_command", `{"cmd":"ls"}`)}, "/work/app", unknown, ""},
		{"no rollout", nil, "/work/app", unknown, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := &CodexInput{
				HookEventName: "PermissionRequest", ToolName: "Bash",
				ToolInput: map[string]any{"command": "sort notes.txt", "description": "sort"},
				Cwd:       tc.cwd, TurnID: "1",
			}
			if tc.lines != nil {
				in.TranscriptPath = writeTranscript(t, tc.lines)
			}
			req, err := CodexRequest(in, Options{MaxTranscriptBytes: 64 << 10})
			if err != nil {
				t.Fatal(err)
			}
			wantWD, wantWorkdir := tc.wantWD, tc.wantWorkdir
			if wantWD == unknown {
				wantWD, wantWorkdir = "", unknownDir
			}
			if got := req.GetWorkingDirectory(); got != wantWD {
				t.Errorf("working directory %q, want %q", got, wantWD)
			}
			if got := req.GetTool().GetInput().GetFields()["workdir"].GetStringValue(); got != wantWorkdir {
				t.Errorf("workdir %q, want %q", got, wantWorkdir)
			}
		})
	}
}

// TestCodexPermissionOutput: allow approves, deny refuses with a reason,
// ask says nothing (Codex asks the user), anything else refuses. Codex
// fails a hook whose output has members it does not know, so exactly its
// members are written.
func TestCodexPermissionOutput(t *testing.T) {
	for _, tc := range []struct {
		decision, reason string
		want             string
	}{
		{"allow", "read-only command", `{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}`},
		{"deny", "denied by rule Bash(curl * | sh)", `{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny","message":"denied by rule Bash(curl * | sh)"}}}`},
		{"deny", " ", `{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny","message":"toolgate denied this tool call"}}}`},
		{"ask", "git push asks", ``},
		{"approve", "x", `{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny","message":"toolgate: invalid decision \"approve\": x"}}}`},
	} {
		var buf bytes.Buffer
		if err := CodexPermissionOutput(&buf, tc.decision, tc.reason); err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSuffix(buf.String(), "\n"); got != tc.want {
			t.Errorf("%s: output %s, want %s", tc.decision, got, tc.want)
		}
	}
}
