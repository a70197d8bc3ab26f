package claudecode

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/e2e/agents/agenttest"
)

// TestClaudeCodeUnattended: in -p mode nobody can answer a hook's ask, and
// Claude Code leaves the call unrun. Marked unattended (--unattended on
// the hook command, or TOOLGATE_UNATTENDED=1 in the CLI's environment,
// which reaches the command hook), toolgate answers that ask itself: a
// deny whose reason says nobody could answer, which the model reads in
// its tool_result. The call never runs either way.
func TestClaudeCodeUnattended(t *testing.T) {
	agents := os.Getenv("TOOLGATE_AGENTS_DIR")
	if agents == "" {
		t.Skip("the real agent CLIs are installed and run by make e2e-agents (TOOLGATE_AGENTS_DIR)")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 150*time.Second)
	defer cancel()
	root := realTempDir(t)
	home := filepath.Join(root, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	claude := claudeBinary(ctx, t, filepath.Join(agents, "claude-code"))
	toolgate := agenttest.ToolgateBinary(ctx, t)
	srv := agenttest.StartToolgate(ctx, t, toolgate, home)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		flag       string
		env        string
		decision   string
		unattended bool
	}{
		{"attended", "", "", "ask", false},
		{"flag", " --unattended", "", "deny", true},
		{"environment", "", "TOOLGATE_UNATTENDED=1", "deny", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(root, tc.name)
			project := filepath.Join(dir, "project")
			if err := os.MkdirAll(project, 0o755); err != nil {
				t.Fatal(err)
			}
			ran := filepath.Join(project, "ran.txt")
			// touch is not read-only and the server has no classifier:
			// toolgate asks.
			fake := newFakeAPI(t, promptMarker, filepath.Join(dir, "installed"), []scriptedCall{{tool: "Bash",
				input: func(context.Context, map[string]toolResult) map[string]any {
					return map[string]any{"command": "touch " + ran, "description": "Create a file"}
				}}})
			records := filepath.Join(dir, "hooks.jsonl")
			hook := recordEnv + "=" + agenttest.ShellQuote(records) + " " + agenttest.ShellQuote(self) + " " +
				agenttest.ShellQuote(toolgate) + " hook claude-code --addr " + srv.Addr + tc.flag
			settings, _ := json.Marshal(map[string]any{"hooks": map[string]any{"PreToolUse": []any{map[string]any{
				"matcher": "*", "hooks": []any{map[string]any{"type": "command", "command": hook, "timeout": 30}},
			}}}})
			settingsFile := filepath.Join(dir, "settings.json")
			writeFile(t, settingsFile, string(settings))
			env := []string{
				"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TERM=dumb",
				"ANTHROPIC_BASE_URL=" + fake.URL(), "ANTHROPIC_API_KEY=sk-ant-e2e-offline",
				"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1",
			}
			if tc.env != "" {
				env = append(env, tc.env)
			}
			run := runPrint(ctx, claude, project, env, promptMarker, "--settings", settingsFile, "--permission-mode", "auto")
			snap := fake.snapshot()
			res, ok := snap.results[toolUseIDPrefix+"00"]
			recs := readHookRecords(t, records)
			_, statErr := os.Stat(ran)
			t.Logf("CLI: %v; hook records %d; tool_result is_error=%v %q; ran: %v", run.err, len(recs), res.IsError, firstLine(res.Content), statErr == nil)
			if !ok || len(recs) != 1 {
				t.Fatalf("tool_result %v, %d hook runs, want one of each\n%s", ok, len(recs), run.tails())
			}
			got, reason := recs[0].decision(), recs[0].reason()
			if got != tc.decision || strings.Contains(reason, "nobody can answer") != tc.unattended {
				t.Errorf("the hook printed %q (%s), want %s", got, reason, tc.decision)
			}
			if statErr == nil {
				t.Errorf("the call ran")
			}
			if tc.unattended && (!res.IsError || !strings.Contains(res.Content, "nobody can answer")) {
				t.Errorf("the model's tool_result (is_error=%v) %q does not give the unattended reason", res.IsError, res.Content)
			}
		})
	}
}
