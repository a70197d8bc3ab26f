package app

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/server"
)

func TestDefaultConfig(t *testing.T) {
	c := loadConfig(t, "")
	if c.Server != server.DefaultConfig() {
		t.Errorf("embedded server settings %+v differ from server.DefaultConfig %+v", c.Server, server.DefaultConfig())
	}
	if c.Classifier.Enabled() {
		t.Error("the embedded default must not call any model")
	}
	r := c.ClassifierRules()[engine.DefaultPolicy]
	// The built-in policy's classifier rules are its categories.
	if len(r.Categories) == 0 || len(r.Environment) == 0 {
		t.Fatalf("default rules incomplete: %+v", r)
	}
}

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "toolgate.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// The sections the file leaves out, and their fields, keep their owners'
// defaults; backends get theirs.
func TestLoadConfig(t *testing.T) {
	t.Setenv("TOOLGATE_TEST_MODEL", "m1")
	c := loadConfig(t, writeConfig(t, `
server:
  listen: 0.0.0.0:6000
  shutdown_timeout: 3s
classifier:
  api: responses
  two_stage: true
  backends:
    - {name: main, base_url: "https://llm.example/v1", model: "${TOOLGATE_TEST_MODEL}", max_concurrent: 2}
    - {base_url: "http://127.0.0.1:8000/v1", model: local, api: chat}
policies:
  default:
    auto_mode:
      soft_deny: [Deploying to production.]
`))
	if c.Server.Listen != "0.0.0.0:6000" || c.Server.ShutdownTimeout != 3*time.Second {
		t.Errorf("server %+v", c.Server)
	}
	if c.Server.MaxToolInputBytes != server.DefaultConfig().MaxToolInputBytes {
		t.Errorf("unset field lost its default: %d", c.Server.MaxToolInputBytes)
	}
	cl := c.Classifier
	if !cl.Enabled() || !cl.TwoStage || cl.Timeout != 5*time.Second {
		t.Fatalf("classifier %+v", cl)
	}
	b0, b1 := cl.Backends[0], cl.Backends[1]
	if b0.Model != "m1" || b0.API != "responses" || b0.APIKeyEnv != "OPENAI_API_KEY" || b0.Timeout != cl.Timeout/2 || b0.MaxConcurrent != 2 {
		t.Errorf("first backend %+v", b0)
	}
	if b1.Name != "backend-1" || b1.API != "chat" || b1.MaxConcurrent != 8 {
		t.Errorf("second backend defaults %+v", b1)
	}
	// The file's classifier rules come after the built-in ones, which
	// stay: a file adds rules, it does not replace the built-in policy's.
	builtin, err := config.BuiltinPolicy()
	if err != nil {
		t.Fatal(err)
	}
	got := c.ClassifierRules()["default"]
	b := builtin.AutoMode
	if want := append(slices.Clone(b.SoftDeny), "Deploying to production."); !slices.Equal(got.SoftDeny, want) {
		t.Errorf("soft_deny %q, want %q", got.SoftDeny, want)
	}
	if !slices.Equal(got.HardDeny, b.HardDeny) || !slices.Equal(got.Allow, b.Allow) || !slices.Equal(got.Environment, b.Environment) || len(got.Categories) != len(b.Categories) {
		t.Errorf("the built-in classifier rules were not kept: %+v", got)
	}
}

// Each problem names the file, the line or the field; those of both
// sections are reported together, and a value from the environment is
// never shown.
func TestLoadConfigErrors(t *testing.T) {
	t.Setenv("TOOLGATE_TEST_URL", "ftp://svc:s3cr3t@llm.internal/v1")
	tests := []struct {
		name string
		body string
		want []string
	}{
		{"unknown server field", "server:\n  lisen: x\n", []string{`:2: server: unknown field "lisen" (did you mean "listen"?)`}},
		{"unknown classifier field", "classifier:\n  backend: []\n", []string{`:2: classifier: unknown field "backend" (did you mean "backends"?)`}},
		{"bad duration", "server:\n  shutdown_timeout: soon\n", []string{`:2: server.shutdown_timeout: want a duration (5s, 1m30s), got "soon"`}},
		{"number from the environment", "classifier:\n  max_tokens: ${MAX_TOKENS}\n", []string{`:2: classifier.max_tokens: want a whole number, got "${MAX_TOKENS}"`}},
		{"bad server value", "server:\n  max_stream_in_flight: 0\n", []string{"server.max_stream_in_flight"}},
		{"bad backend from the environment", "classifier:\n  backends:\n    - {model: m, base_url: \"${TOOLGATE_TEST_URL}\"}\n",
			[]string{"classifier.backends[0].base_url", "${TOOLGATE_TEST_URL}"}},
		{"both sections", "server:\n  max_stream_in_flight: 0\nclassifier:\n  timeout: 0s\n", []string{"server.max_stream_in_flight", "classifier.timeout"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeConfig(t, tt.body+"policies: {default: {}}\n")
			_, err := LoadConfig(p)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range append([]string{p}, tt.want...) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("error %q shows a variable's value", err)
			}
		})
	}
}

// The engine of a config protects the TLS and token files it names, the
// key and the tokens from reads too.
func TestNewEngineProtectsServerFiles(t *testing.T) {
	dir := t.TempDir()
	c := loadConfig(t, writeConfig(t, policyNoRules))
	c.Server.TLS = server.TLSConfig{CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key")}
	c.Server.TokenFile = filepath.Join(dir, "tokens")
	eng, _, err := c.NewEngine("", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		tool, file string
		want       engine.Decision
	}{
		{"Read", c.Server.TLS.KeyFile, engine.Deny},
		{"Read", c.Server.TokenFile, engine.Deny},
		{"Write", c.Server.TLS.CertFile, engine.Deny},
		{"Write", filepath.Join(dir, "other"), engine.Allow},
	} {
		res, err := eng.Check(t.Context(), &engine.Request{WorkingDirectory: dir, Mode: engine.ModeAcceptEdits,
			Tool: engine.ToolCall{Name: tt.tool, Input: map[string]any{"file_path": tt.file, "content": "x"}}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Decision != tt.want {
			t.Errorf("%s %s: %s by %s (%s), want %s", tt.tool, tt.file, res.Decision, res.Source, res.Reason, tt.want)
		}
	}
}

// The engine of a config keeps the agents, in bypass mode too, off the
// files the server writes: the audit log, its backups and the classifier's
// dump file; other files beside them stay the usual stages' business.
func TestNewEngineProtectsWrittenFiles(t *testing.T) {
	dir := t.TempDir()
	c := loadConfig(t, writeConfig(t, policyNoRules))
	c.Server.Audit.File = filepath.Join(dir, "logs", "audit.jsonl")
	c.Classifier.DumpFile = filepath.Join(dir, "logs", "dump.jsonl")
	eng, _, err := c.NewEngine("", nil)
	if err != nil {
		t.Fatal(err)
	}
	project := filepath.Join(dir, "project")
	for _, tt := range []struct {
		command string
		want    engine.Decision
	}{
		{"rm -f " + c.Server.Audit.File, engine.Deny},
		{"ln -sf /dev/null " + c.Server.Audit.File, engine.Deny},
		{"rm -f " + filepath.Join(dir, "logs", "audit-2026-01-02T03-04-05.000.jsonl.gz"), engine.Deny},
		{": > " + c.Classifier.DumpFile, engine.Deny},
		{"rm -rf " + filepath.Join(dir, "logs"), engine.Deny},
		{"rm -f " + filepath.Join(dir, "logs", "other.log"), engine.Allow},
		{"rm -rf build", engine.Allow},
	} {
		res, err := eng.Check(t.Context(), &engine.Request{WorkingDirectory: project, Mode: engine.ModeBypass,
			Tool: engine.ToolCall{Name: "Bash", Input: map[string]any{"command": tt.command}}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Decision != tt.want {
			t.Errorf("%s: %s by %s (%s), want %s", tt.command, res.Decision, res.Source, res.Reason, tt.want)
		}
	}
}

func TestExposureWarning(t *testing.T) {
	public := &net.TCPAddr{IP: net.IPv4(10, 0, 0, 5), Port: 50051}
	local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 50051}
	tls := server.TLSConfig{CertFile: "c", KeyFile: "k"}
	mtls := server.TLSConfig{CertFile: "c", KeyFile: "k", ClientCAFile: "ca"}
	tests := []struct {
		name  string
		addr  net.Addr
		tls   server.TLSConfig
		token string
		want  string
	}{
		{"loopback", local, server.TLSConfig{}, "", ""},
		{"public, nothing", public, server.TLSConfig{}, "", "authenticates no client"},
		{"public, TLS only", public, tls, "", "authenticates no client"},
		{"public, tokens in plaintext", public, server.TLSConfig{}, "/etc/t", "plaintext"},
		{"public, TLS and tokens", public, tls, "/etc/t", ""},
		{"public, mutual TLS", public, mtls, "", ""},
	}
	for _, tt := range tests {
		c := server.DefaultConfig()
		c.TLS, c.TokenFile = tt.tls, tt.token
		w := exposureWarning(tt.addr, c)
		if (tt.want == "") != (w == "") || !strings.Contains(w, tt.want) {
			t.Errorf("%s: %q, want %q", tt.name, w, tt.want)
		}
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://api.openai.com/v1":                 "https://api.openai.com/v1",
		"https://user:pw-secret@llm.internal/v1":    "https://llm.internal/v1",
		"https://ghp_tokensecret@llm.internal/v1":   "https://llm.internal/v1",
		"https://llm.internal/v1?api-key=qsecret#x": "https://llm.internal/v1",
		"http://[::1]:8080/v1":                      "http://[::1]:8080/v1",
		"://bad":                                    "(unparsable URL)",
	} {
		if got := redactURL(in); got != want {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
