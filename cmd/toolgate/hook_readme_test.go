package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestHookReadmeSnippets installs each agent's hook as a new user would:
// the settings snippet is taken verbatim from docs/hooks.md, written where the
// agent reads it, and the hook command is found in it the way the agent
// finds it and run through sh -c with freshly built toolgate and
// toolgate-hook on PATH and TOOLGATE_HOOK_ADDR set to a server's hook
// listener. Fed the agent's input for a destructive command, the
// hook must print exactly the deny docs/hooks.md shows, and its words
// on what the user sees must quote its reason.
func TestHookReadmeSnippets(t *testing.T) {
	if os.Getenv("TOOLGATE_E2E") == "" {
		t.Skip("builds and runs the binary: make test-e2e runs it (TOOLGATE_E2E=1)")
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "docs", "hooks.md"))
	if err != nil {
		t.Fatal(err)
	}
	hooks := markdownSection(t, string(readme), "# Hooks")

	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("building toolgate needs the go command: %v", err)
	}
	binDir := t.TempDir()
	for name, pkg := range map[string]string{"toolgate": ".", "toolgate-hook": "../toolgate-hook"} {
		build := exec.CommandContext(t.Context(), goBin, "build", "-o", filepath.Join(binDir, name), pkg)
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	hookSocket := filepath.Join(t.TempDir(), "hook.sock")
	startServe(t, "--hook-unix-socket", hookSocket)
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
		// seen is what the documentation must say the user (or model) sees, given
		// the printed reason.
		seen func(reason string) string
	}{
		{"## Claude Code", ".claude/settings.json", "PreToolUse", "claude-code/deny-rule.json", "Bash",
			func(r string) string { return "the user sees it refused with `" + r + "`" }},
		{"## Gemini CLI", ".gemini/settings.json", "BeforeTool", "gemini-cli/deny-rule.json", "run_shell_command",
			func(string) string { return "blocks the call, handing the reason to the model" }},
		{"## Codex", ".codex/hooks.json", "PreToolUse", "codex/deny-rule.json", "Bash",
			func(r string) string { return "`Command blocked by PreToolUse hook: " + r + ". Command: rm -rf /`" }},
	}
	for _, tc := range tests {
		t.Run(tc.heading, func(t *testing.T) {
			section := markdownSection(t, hooks, tc.heading)
			blocks := jsonBlocks(section)
			if len(blocks) < 2 {
				t.Fatalf("want the settings snippet and the printed deny as the first two json blocks, found %d", len(blocks))
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
			sh.Env = append(os.Environ(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"), "TOOLGATE_HOOK_ADDR=unix:"+hookSocket)
			sh.Stdin = bytes.NewReader(input)
			var stderr bytes.Buffer
			sh.Stderr = &stderr
			out, err := sh.Output()
			if err != nil || stderr.Len() > 0 {
				t.Fatalf("%q: %v, stderr %q", command, err, stderr.String())
			}

			reason := denyReasonOf(t, tc.event, out)
			if got, want := strings.TrimSpace(string(out)), strings.TrimSpace(blocks[1]); got != want {
				t.Errorf("the hook printed\n%s\nthe documentation shows\n%s", got, want)
			}
			prose := strings.Join(strings.Fields(section), " ")
			if want := tc.seen(reason); !strings.Contains(prose, want) {
				t.Errorf("docs/hooks.md does not say %q", want)
			}
		})
	}
	t.Run("## Claude Code HTTP hook", func(t *testing.T) {
		section := markdownSection(t, hooks, "## Claude Code")
		testClaudeHTTPHook(t, section, filepath.Join(testdata, "claude-code/deny-rule.json"), testdata)
	})
	t.Run("## Codex trusted_hash", func(t *testing.T) {
		section := markdownSection(t, hooks, "## Codex")
		settings := filepath.Join(t.TempDir(), "hooks.json")
		if err := os.WriteFile(settings, []byte(jsonBlocks(section)[0]), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, ev := range []struct{ name, key string }{{"PreToolUse", "pre_tool_use"}, {"PermissionRequest", "permission_request"}} {
			want := codexTrustHash(ev.key, "*", hookCommand(t, settings, ev.name, "Bash"))
			entry := `[hooks.state."/home/you/.codex/hooks.json:` + ev.key + `:0:0"]` + "\ntrusted_hash = \"" + want + `"`
			if !strings.Contains(section, entry) {
				t.Errorf("docs/hooks.md does not trust the %s hook as\n%s\n(the hash of its hook definition)", ev.name, entry)
			}
		}
	})
	t.Run("## Codex PermissionRequest", func(t *testing.T) {
		// The documented PermissionRequest hook, fed Codex's input for a
		// call a rule denies, prints the refusal shown (the third json
		// block).
		section := markdownSection(t, hooks, "## Codex")
		blocks := jsonBlocks(section)
		if len(blocks) < 3 {
			t.Fatalf("want the PermissionRequest refusal as the third json block, found %d blocks", len(blocks))
		}
		project := t.TempDir()
		settings := filepath.Join(project, ".codex", "hooks.json")
		if err := os.MkdirAll(filepath.Dir(settings), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(settings, []byte(blocks[0]), 0o644); err != nil {
			t.Fatal(err)
		}
		command := hookCommand(t, settings, "PermissionRequest", "Bash")
		input, err := os.ReadFile(filepath.Join(testdata, "codex", "real-permission-curl-pipe-sh.json"))
		if err != nil {
			t.Fatal(err)
		}
		input = bytes.ReplaceAll(input, []byte("$TESTDATA"), []byte(testdata))
		sh := exec.CommandContext(t.Context(), "sh", "-c", command)
		sh.Dir = project
		sh.Env = append(os.Environ(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"), "TOOLGATE_HOOK_ADDR=unix:"+hookSocket)
		sh.Stdin = bytes.NewReader(input)
		out, err := sh.Output()
		if err != nil {
			t.Fatalf("%q: %v", command, err)
		}
		if got, want := strings.TrimSpace(string(out)), strings.TrimSpace(blocks[2]); got != want {
			t.Errorf("the hook printed\n%s\nthe documentation shows\n%s", got, want)
		}
	})
}

// testClaudeHTTPHook serves the documented hook listener config (on a free
// port), finds the HTTP hook in its settings snippet the way Claude Code
// does, posts the recorded input there and expects what the command hook
// prints for it against the same server: a deny.
func testClaudeHTTPHook(t *testing.T, section, inputFile, testdata string) {
	yamls := regexp.MustCompile("(?ms)^```yaml\n(.*?)^```").FindAllStringSubmatch(section, -1)
	blocks := jsonBlocks(section)
	if len(yamls) != 1 || len(blocks) != 3 {
		t.Fatalf("want the hook listener's config (yaml) and the HTTP hook's settings (the third json block), found %d yaml and %d json blocks", len(yamls), len(blocks))
	}
	var settings struct {
		Hooks map[string][]struct {
			Matcher string `json:"matcher"`
			Hooks   []struct {
				Type      string  `json:"type"`
				URL       string  `json:"url"`
				Timeout   float64 `json:"timeout"`
				OnFailure string  `json:"onFailure"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal([]byte(blocks[2]), &settings); err != nil {
		t.Fatalf("the HTTP hook's settings: %v", err)
	}
	var urls []string
	for _, group := range settings.Hooks["PreToolUse"] {
		for _, h := range group.Hooks {
			if h.Type == "http" && matcherSelects(group.Matcher, "Bash") {
				if h.OnFailure != "block" || h.Timeout <= 0 {
					t.Errorf("the HTTP hook has onFailure %q and timeout %v: want block, and a timeout", h.OnFailure, h.Timeout)
				}
				urls = append(urls, h.URL)
			}
		}
	}
	if len(urls) != 1 {
		t.Fatalf("%d HTTP hooks for Bash, want 1", len(urls))
	}
	u, err := url.Parse(urls[0])
	if err != nil {
		t.Fatal(err)
	}
	config := yamls[0][1]
	if !strings.Contains(config, "listen: "+u.Host+"\n") {
		t.Fatalf("the hook URL's address %s is not the config's hook listener:\n%s", u.Host, config)
	}
	// The documented port may be taken on this machine: the same config on
	// a free one.
	path := filepath.Join(t.TempDir(), "toolgate.yaml")
	if err := os.WriteFile(path, []byte(strings.Replace(config, u.Host, "127.0.0.1:0", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, logs := startServeLogs(t, "--config", path)
	u.Host = hookAddr(t, logs)

	input, err := os.ReadFile(inputFile)
	if err != nil {
		t.Fatal(err)
	}
	input = bytes.ReplaceAll(input, []byte("$TESTDATA"), []byte(testdata))
	// As Claude Code posts it: the input as the body, JSON.
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, u.String(), bytes.NewReader(input))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	code, want, errOut := runHookBinary(t, input, "claude-code", "--addr", u.Host)
	if code != 0 || errOut != "" {
		t.Fatalf("the command hook: exit %d, stderr %q", code, errOut)
	}
	if string(body) != want {
		t.Errorf("the hook listener answered\n%s\nthe command hook printed\n%s", body, want)
	}
	denyReasonOf(t, "PreToolUse", body)
}

// codexTrustHash is Codex's trust hash of a command hook: SHA-256 of the
// canonical JSON (keys sorted, compact, no HTML escaping) of its
// identity, with Codex's defaults timeout 600 and async false (as
// e2e/agents/codex computes it for the real Codex).
func codexTrustHash(event, matcher, command string) string {
	identity := map[string]any{
		"event_name": event,
		"matcher":    matcher,
		"hooks":      []any{map[string]any{"type": "command", "command": command, "timeout": 600, "async": false}},
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(identity); err != nil {
		panic(err)
	}
	sum := sha256.Sum256(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	return "sha256:" + hex.EncodeToString(sum[:])
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
	t.Fatalf("no %q heading", heading)
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
