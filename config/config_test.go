package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/server"
)

func TestDefault(t *testing.T) {
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	if c.Server != server.DefaultConfig() {
		t.Errorf("embedded server settings %+v differ from server.DefaultConfig %+v", c.Server, server.DefaultConfig())
	}
	if got := c.PolicyNames(); len(got) != 1 || got[0] != engine.DefaultPolicy {
		t.Fatalf("policies %v, want [default]", got)
	}
	if len(c.Policies["default"].Permissions.Deny) == 0 {
		t.Error("default policy has no deny rules")
	}
}

func write(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "toolgate.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoad(t *testing.T) {
	p := write(t, `
server:
  listen: 0.0.0.0:6000
  shutdown_timeout: 3s
policies:
  default: {}
  strict:
    permissions:
      deny: [Bash]
    accept_edits: false
    tool_aliases: {my_shell: shell}
`)
	c, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if c.Server.Listen != "0.0.0.0:6000" || c.Server.ShutdownTimeout != 3*time.Second {
		t.Errorf("server %+v", c.Server)
	}
	if c.Server.MaxToolInputBytes != server.DefaultConfig().MaxToolInputBytes {
		t.Errorf("unset field lost its default: %d", c.Server.MaxToolInputBytes)
	}
	spec := c.EnginePolicies()["strict"]
	if !spec.DisableAcceptEdits || spec.ToolAliases["my_shell"] != engine.KindShell || spec.Permissions.Deny[0] != "Bash" {
		t.Errorf("strict policy %+v", spec)
	}
	eng, err := engine.New(engine.Config{Policies: c.EnginePolicies()})
	if err != nil {
		t.Fatal(err)
	}
	// The file's default policy is empty, and that is what is used, not the embedded one.
	res, err := eng.Check(t.Context(), &engine.Request{Tool: engine.ToolCall{Name: "Bash", Input: map[string]any{"command": "rm -rf /"}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Source == engine.SourceRule {
		t.Errorf("embedded deny rules leaked into a file that replaced them: %+v", res)
	}
	res, err = eng.Check(t.Context(), &engine.Request{Policy: "strict", Tool: engine.ToolCall{Name: "my_shell", Input: map[string]any{"command": "ls"}}})
	if err != nil || res.Decision != engine.Deny {
		t.Errorf("strict policy via alias: %+v %v", res, err)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []string
	}{
		{"unknown field", "server:\n  lisen: x\n", []string{"line 2", "lisen"}},
		{"bad duration", "server:\n  shutdown_timeout: soon\n", []string{"soon"}},
		{"bad server value", "server:\n  max_stream_in_flight: 0\n", []string{"server.max_stream_in_flight"}},
		{"bad rule", "policies:\n  default:\n    permissions:\n      allow: [\"Edit(\"]\n", []string{"policies.default.permissions.allow[0]"}},
		{"bad alias kind", "policies:\n  p:\n    tool_aliases: {x: teleport}\n", []string{"policies.p.tool_aliases", "teleport"}},
		{"unsafe safe tool", "policies:\n  p:\n    safe_tools: [Bash]\n", []string{"policies.p.safe_tools[0]"}},
		{"read root holding secrets", "policies:\n  p:\n    read_roots: [~/.ssh]\n", []string{"policies.p.read_roots[0]"}},
		{"relative read root", "policies:\n  p:\n    read_roots: [vendor]\n", []string{"policies.p.read_roots[0]"}},
		{"bad protected path", "policies:\n  p:\n    protected_paths: [\"/abs\"]\n", []string{"policies.p.protected_paths"}},
		{"not yaml", "server: [\n", []string{"yaml"}},
		{"no default policy", "policies:\n  defualt:\n    permissions:\n      deny: [Bash]\n", []string{"policies.default: missing", "policies defined: defualt"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := write(t, tt.body)
			_, err := Load(p)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range append([]string{p}, tt.want...) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing file: %v", err)
	}
}

func TestLoadClassifier(t *testing.T) {
	p := write(t, `
classifier:
  api: responses
  two_stage: true
  backends:
    - {name: main, base_url: "https://llm.example/v1", model: m1, max_concurrent: 2}
    - {base_url: "http://127.0.0.1:8000/v1", model: local, api: chat}
policies:
  default:
    auto_mode:
      soft_deny: [Deploying to production.]
`)
	c, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	cl := c.Classifier
	if !cl.Enabled() || !cl.TwoStage || cl.Timeout != 5*time.Second {
		t.Fatalf("classifier %+v", cl)
	}
	b0, b1 := cl.Backends[0], cl.Backends[1]
	if b0.API != "responses" || b0.APIKeyEnv != "OPENAI_API_KEY" || b0.Timeout != cl.Timeout/2 || b0.MaxConcurrent != 2 {
		t.Errorf("first backend defaults %+v", b0)
	}
	if b1.Name != "backend-1" || b1.API != "chat" || b1.MaxConcurrent != 8 {
		t.Errorf("second backend defaults %+v", b1)
	}
	if got := c.ClassifierRules()["default"].SoftDeny; len(got) != 1 || got[0] != "Deploying to production." {
		t.Errorf("rules %v", got)
	}

	bad := write(t, "classifier:\n  backends:\n    - {base_url: \"ftp://x\", model: m}\n")
	if _, err := Load(bad); err == nil || !strings.Contains(err.Error(), "classifier.backends[0].base_url") {
		t.Errorf("bad backend: %v", err)
	}
}

func TestDefaultClassifierRules(t *testing.T) {
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	if c.Classifier.Enabled() {
		t.Error("the embedded default must not call any model")
	}
	r := c.ClassifierRules()["default"]
	if len(r.HardDeny) == 0 || len(r.SoftDeny) == 0 || len(r.Allow) == 0 || len(r.Environment) == 0 {
		t.Fatalf("default rules incomplete: %+v", r)
	}
	all := strings.Join(append(append(r.HardDeny, r.SoftDeny...), r.Allow...), "\n")
	for _, topic := range []string{"curl ... | sh", "git push --force", "credentials", "deploy", "cron", ".claude/", "database"} {
		if !strings.Contains(all, topic) {
			t.Errorf("default rules do not cover %q", topic)
		}
	}
}

// A file without policies (empty, truncated, or server settings only) is
// refused: loading it, or hot-reloading it, would drop every rule.
func TestLoadRequiresPolicies(t *testing.T) {
	for name, body := range map[string]string{
		"empty":         "",
		"blank":         "\n\n",
		"comments only": "# nothing yet\n",
		"server only":   "server:\n  listen: 127.0.0.1:6000\n",
		"no policy":     "policies: {}\n",
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "toolgate.yaml")
			if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := Load(p); err == nil || !strings.Contains(err.Error(), p+": policies: none defined") {
				t.Fatalf("got %v", err)
			}
		})
	}
}

// TestDefaultDenyRules: the embedded policy's rm rules deny only what is
// never legitimate; an rm inside the project is left to the stages.
func TestDefaultDenyRules(t *testing.T) {
	c, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(engine.Config{Policies: c.EnginePolicies(), Home: "/home/dev"})
	if err != nil {
		t.Fatal(err)
	}
	project := t.TempDir()
	for _, tc := range []struct {
		cmd      string
		denyRule bool
	}{
		{"rm -rf /", true},
		{"rm -rf ~", true},
		{"rm -rf $HOME", true},
		{"rm -rf /etc", true},
		{"rm -rf /usr", true},
		{"rm -rf " + project + "/build && make", false},
		{"rm -rf /tmp/cache", false},
		{"rm -rf build", false},
	} {
		res, err := eng.Check(t.Context(), &engine.Request{WorkingDirectory: project, Tool: engine.ToolCall{Name: "Bash", Input: map[string]any{"command": tc.cmd}}})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Decision == engine.Deny && res.Source == engine.SourceRule; got != tc.denyRule {
			t.Errorf("%q: %s by %s (%s); denied by a rule: want %v", tc.cmd, res.Decision, res.Source, res.Reason, tc.denyRule)
		}
	}
}
