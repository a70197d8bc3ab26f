package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestHookReadmeSnippets installs each agent's hook as a new user would:
// the settings snippet is taken verbatim from README.md, written where the
// agent reads it, and the hook command is found in it the way the agent
// finds it and run through sh -c with a freshly built toolgate on PATH and
// TOOLGATE_ADDR set. Fed the agent's input for a destructive command, the
// hook must print exactly the deny the README shows, and the README's words
// on what the user sees must quote its reason.
func TestHookReadmeSnippets(t *testing.T) {
	if os.Getenv("TOOLGATE_E2E") == "" {
		t.Skip("builds and runs the binary: make test-e2e runs it (TOOLGATE_E2E=1)")
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	hooks := markdownSection(t, string(readme), "## Hooks")

	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("building toolgate needs the go command: %v", err)
	}
	binDir := t.TempDir()
	build := exec.CommandContext(t.Context(), goBin, "build", "-o", filepath.Join(binDir, "toolgate"), ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	addr := startServe(t)
	testdata, err := filepath.Abs(filepath.Join("testdata", "hook"))
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		heading  string
		settings string // where the agent reads the snippet, in the project
		event    string // hooks.<event>
		input    string // recorded hook input of a denied command
		tool     string // the tool name the agent matches against
		// seen is what the README must say the user (or model) sees, given
		// the printed reason.
		seen func(reason string) string
	}{
		{"### Claude Code", ".claude/settings.json", "PreToolUse", "claude-code/deny-rule.json", "Bash",
			func(r string) string { return "the user sees it refused with `" + r + "`" }},
		{"### Gemini CLI", ".gemini/settings.json", "BeforeTool", "gemini-cli/deny-rule.json", "run_shell_command",
			func(string) string { return "blocks the call, handing the reason to the model" }},
		{"### Codex", ".codex/hooks.json", "PreToolUse", "codex/deny-rule.json", "Bash",
			func(r string) string { return "`Command blocked by PreToolUse hook: " + r + ". Command: rm -rf /`" }},
	}
	for _, tc := range tests {
		t.Run(tc.heading, func(t *testing.T) {
			section := markdownSection(t, hooks, tc.heading)
			blocks := jsonBlocks(section)
			if len(blocks) != 2 {
				t.Fatalf("want the settings snippet and the printed deny as the two json blocks, found %d", len(blocks))
			}
			project := t.TempDir()
			settingsPath := filepath.Join(project, tc.settings)
			if err := os.MkdirAll(filepath.Dir(settingsPath), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(settingsPath, []byte(blocks[0]), 0o644); err != nil {
				t.Fatal(err)
			}
			command := hookCommand(t, settingsPath, tc.event, tc.tool)

			input, err := os.ReadFile(filepath.Join(testdata, tc.input))
			if err != nil {
				t.Fatal(err)
			}
			input = bytes.ReplaceAll(input, []byte("$TESTDATA"), []byte(testdata))
			sh := exec.CommandContext(t.Context(), "sh", "-c", command)
			sh.Dir = project
			sh.Env = append(os.Environ(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"), "TOOLGATE_ADDR="+addr)
			sh.Stdin = bytes.NewReader(input)
			var stderr bytes.Buffer
			sh.Stderr = &stderr
			out, err := sh.Output()
			if err != nil || stderr.Len() > 0 {
				t.Fatalf("%q: %v, stderr %q", command, err, stderr.String())
			}

			reason := denyReasonOf(t, tc.event, out)
			if got, want := strings.TrimSpace(string(out)), strings.TrimSpace(blocks[1]); got != want {
				t.Errorf("the hook printed\n%s\nthe README shows\n%s", got, want)
			}
			prose := strings.Join(strings.Fields(section), " ")
			if want := tc.seen(reason); !strings.Contains(prose, want) {
				t.Errorf("the README does not say %q", want)
			}
		})
	}
}

// markdownSection returns the text from the line that starts with heading
// to the next heading of the same or a higher level.
func markdownSection(t *testing.T, doc, heading string) string {
	t.Helper()
	level := strings.Index(heading, " ")
	lines := strings.Split(doc, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, heading) {
			continue
		}
		end := len(lines)
		for j := i + 1; j < len(lines); j++ {
			if n := len(lines[j]) - len(strings.TrimLeft(lines[j], "#")); n > 0 && n <= level && strings.HasPrefix(lines[j][n:], " ") {
				end = j
				break
			}
		}
		return strings.Join(lines[i:end], "\n")
	}
	t.Fatalf("README.md has no %q heading", heading)
	return ""
}

var jsonBlockRE = regexp.MustCompile("(?ms)^```json\n(.*?)^```")

func jsonBlocks(section string) []string {
	var out []string
	for _, m := range jsonBlockRE.FindAllStringSubmatch(section, -1) {
		out = append(out, m[1])
	}
	return out
}

// hookCommand reads a settings file the way the agents do (hooks.<event>:
// groups of a matcher and command hooks) and returns the one command hook
// that runs for tool.
func hookCommand(t *testing.T, path, event, tool string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var settings struct {
		Hooks map[string][]struct {
			Matcher string `json:"matcher"`
			Hooks   []struct {
				Type    string `json:"type"`
				Command string `json:"command"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&settings); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var commands []string
	for _, group := range settings.Hooks[event] {
		if !matcherSelects(group.Matcher, tool) {
			continue
		}
		for _, h := range group.Hooks {
			if h.Type == "command" {
				commands = append(commands, h.Command)
			}
		}
	}
	if len(commands) != 1 {
		t.Fatalf("%s: %d command hooks for %s on %s, want 1", path, len(commands), event, tool)
	}
	return commands[0]
}

// matcherSelects is the matcher rule the three agents share: empty or "*"
// selects every tool, otherwise the tool name must equal the matcher or
// match it as a regular expression.
func matcherSelects(matcher, tool string) bool {
	if matcher == "" || matcher == "*" || matcher == tool {
		return true
	}
	re, err := regexp.Compile(matcher)
	return err == nil && re.MatchString(tool)
}

// denyReasonOf checks that out is a deny as the agent reads it and returns
// its reason: Claude Code's and Codex's hookSpecificOutput, Gemini CLI's
// decision and reason. Codex ignores a deny without a reason.
func denyReasonOf(t *testing.T, event string, out []byte) string {
	t.Helper()
	var o struct {
		HookSpecificOutput *struct {
			HookEventName            string `json:"hookEventName"`
			PermissionDecision       string `json:"permissionDecision"`
			PermissionDecisionReason string `json:"permissionDecisionReason"`
		} `json:"hookSpecificOutput"`
		Decision string `json:"decision"`
		Reason   string `json:"reason"`
	}
	if err := json.Unmarshal(out, &o); err != nil {
		t.Fatalf("output %q: %v", out, err)
	}
	var decision, reason string
	if event == "BeforeTool" {
		decision, reason = o.Decision, o.Reason
	} else if h := o.HookSpecificOutput; h != nil && h.HookEventName == event {
		decision, reason = h.PermissionDecision, h.PermissionDecisionReason
	}
	if decision != "deny" || strings.TrimSpace(reason) == "" {
		t.Fatalf("not a deny with a reason: %s", out)
	}
	return reason
}
