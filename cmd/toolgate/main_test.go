package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/toolgate/toolgate/app"
)

// startServe runs "toolgate serve" in-process on a free loopback port.
func startServe(t *testing.T, args ...string) string {
	t.Helper()
	addr, _ := startServeLogs(t, args...)
	return addr
}

// startServeLogs is startServe that also returns what the server has
// logged so far.
func startServeLogs(t *testing.T, args ...string) (string, func() string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	var buf bytes.Buffer
	logs := &syncWriter{w: &buf}
	go func() {
		done <- serve(ctx, append([]string{"--listen", "127.0.0.1:0", "--metrics-listen", "off"}, args...), logs, &bytes.Buffer{}, ready)
	}()
	var addr net.Addr
	select {
	case addr = <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("serve exited: %v", err)
	case <-time.After(10 * time.Second):
		cancel()
		t.Fatal("serve did not start")
	}
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Error("serve did not stop after its context ended")
		}
	})
	read := func() string {
		logs.mu.Lock()
		defer logs.mu.Unlock()
		return buf.String()
	}
	// ready comes once the server listens; the serving line, which names
	// the metrics address, right after.
	waitFor(t, "the serving line", func() bool { return strings.Contains(read(), `"msg":"serving"`) })
	return addr.String(), read
}

func TestServeAndCheck(t *testing.T) {
	addr := startServe(t)
	project := t.TempDir()
	tests := []struct {
		name     string
		args     []string
		code     int
		decision string
		source   string
	}{
		{"safe tool", []string{"--tool", "Read", "--input", `{"file_path":"/usr/include/stdio.h"}`}, exitAllow, "DECISION_ALLOW", "DECISION_SOURCE_SAFE_TOOL"},
		{"edit in project", []string{"--tool", "Write", "--input", `{"file_path":"a.txt","content":"x"}`, "--cwd", project}, exitAllow, "DECISION_ALLOW", "DECISION_SOURCE_ACCEPT_EDITS"},
		{"default deny rule", []string{"--tool", "Bash", "--input", `{"command":"rm -rf /"}`}, exitDeny, "DECISION_DENY", "DECISION_SOURCE_RULE"},
		{"flag deny rule", []string{"--tool", "Grep", "--deny", "Grep"}, exitDeny, "DECISION_DENY", "DECISION_SOURCE_RULE"},
		{"no classifier asks", []string{"--tool", "Bash", "--input", `{"command":"make"}`}, exitAsk, "DECISION_ASK", "DECISION_SOURCE_NO_CLASSIFIER"},
		{"plan mode", []string{"--tool", "Bash", "--input", `{"command":"make install"}`, "--mode", "plan"}, exitDeny, "DECISION_DENY", "DECISION_SOURCE_MODE"},
		{"read-only command", []string{"--tool", "Bash", "--input", `{"command":"ls -la"}`}, exitAllow, "DECISION_ALLOW", "DECISION_SOURCE_COMMAND_ANALYSIS"},
		{"credential read denied", []string{"--tool", "Read", "--input", `{"file_path":"/home/u/.ssh/id_rsa"}`}, exitDeny, "DECISION_DENY", "DECISION_SOURCE_RULE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(t.Context(), append([]string{"check", "--addr", addr}, tt.args...), &out, &errOut)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stdout %s stderr %s", code, tt.code, out.String(), errOut.String())
			}
			var resp map[string]any
			if err := json.Unmarshal(out.Bytes(), &resp); err != nil {
				t.Fatalf("output is not JSON: %v\n%s", err, out.String())
			}
			if resp["decision"] != tt.decision || resp["source"] != tt.source || resp["requestId"] == "" {
				t.Fatalf("got %v", resp)
			}
		})
	}
}

func TestCheckErrors(t *testing.T) {
	addr := startServe(t)
	dead := deadAddr(t)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no tool", []string{"check", "--addr", addr}, "--tool is required"},
		{"bad json", []string{"check", "--addr", addr, "--tool", "Read", "--input", "[1]"}, "not a JSON object"},
		{"bad mode", []string{"check", "--addr", addr, "--tool", "Read", "--mode", "yolo"}, "--mode"},
		{"server refuses", []string{"check", "--addr", addr, "--tool", "Read", "--policy", "nope"}, "InvalidArgument"},
		{"server down", []string{"check", "--addr", dead, "--tool", "Read", "--timeout", "2s"}, "Unavailable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := run(t.Context(), tt.args, &out, &errOut); code != exitError {
				t.Fatalf("exit %d, want %d", code, exitError)
			}
			if !strings.Contains(errOut.String(), tt.want) {
				t.Fatalf("stderr %q does not contain %q", errOut.String(), tt.want)
			}
		})
	}
}

func TestServeBadConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(path, []byte("policies:\n  default:\n    permissions:\n      deny: [\"Bash(rm\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run(t.Context(), []string{"serve", "--config", path, "--listen", "127.0.0.1:0"}, &out, &errOut); code == 0 {
		t.Fatal("serve accepted a bad config")
	}
	for _, want := range []string{path, "policies.default.permissions.deny[0]", "missing closing parenthesis"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("error %q does not name %q", errOut.String(), want)
		}
	}
}

func TestVersionAndUsage(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(t.Context(), []string{"version"}, &out, &errOut); code != 0 || !strings.HasPrefix(out.String(), "toolgate ") {
		t.Fatalf("version: %d %q", code, out.String())
	}
	out.Reset()
	if code := run(t.Context(), []string{"frobnicate"}, &out, &errOut); code == 0 || !strings.Contains(errOut.String(), "unknown command") {
		t.Fatalf("unknown command: %d %q", code, errOut.String())
	}
}

func TestValidate(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(good, []byte("policies:\n  default:\n    permissions:\n      deny: [\"Bash(rm -rf /)\"]\n      allow: [\"Bash(python3:*)\"]\n  strict: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("policies:\n  default:\n    permissions:\n      ask: [\"Edit(\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run(t.Context(), []string{"validate", good}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "default, strict") ||
		!strings.Contains(out.String(), "warning: policy default: allow rule Bash(python3:*) is not applied in auto mode") {
		t.Fatalf("good: exit %d, %q %q", code, out.String(), errOut.String())
	}
	out.Reset()
	if code := run(t.Context(), []string{"validate", good, bad}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "policies.default.permissions.ask[0]") {
		t.Fatalf("bad: exit %d, %q", code, errOut.String())
	}
}

// TestValidateUnknownTool: validate warns about a rule naming a tool
// toolgate does not know, with the nearest known name, and still passes
// the file (exit 0): it loads, and serve logs the same warning.
func TestValidateUnknownTool(t *testing.T) {
	path := filepath.Join(t.TempDir(), "toolgate.yaml")
	if err := os.WriteFile(path, []byte("policies:\n  default:\n    permissions:\n      deny: [\"Bsh(rm -rf /)\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"validate", path}, &out, &errOut)
	want := path + `: warning: policy default: deny rule Bsh(rm -rf /) names the tool "Bsh", which toolgate does not know (did you mean "Bash"?)`
	if code != 0 || !strings.Contains(out.String(), want) || !strings.Contains(out.String(), path+": ok") {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 0 and %q", code, out.String(), errOut.String(), want)
	}
}

// TestServeUnknownToolWarning: the server logs the same warning at start
// (before it listens, so it is in the log once the server is ready).
func TestServeUnknownToolWarning(t *testing.T) {
	path := filepath.Join(t.TempDir(), "toolgate.yaml")
	if err := os.WriteFile(path, []byte("policies:\n  default:\n    permissions:\n      deny: [\"Bsh(rm -rf /)\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, logs := startServeLogs(t, "--config", path, "--watch=false")
	if got := logs(); !strings.Contains(got, `names the tool \"Bsh\", which toolgate does not know (did you mean \"Bash\"?)`) {
		t.Errorf("serve logged no warning about Bsh:\n%s", got)
	}
}

// TestValidateYAMLErrors: validate names the file, line and YAML path, in
// the file's words.
func TestValidateYAMLErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "toolgate.yaml")
	if err := os.WriteFile(path, []byte("policies:\n  default:\n    permisions:\n      deny: [\"Bash(rm -rf /)\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"validate", path}, &out, &errOut)
	want := path + `:3: policies.default: unknown field "permisions" (did you mean "permissions"?)` + "\n"
	if code != 1 || errOut.String() != want {
		t.Errorf("exit %d, stderr %q; want exit 1 and %q", code, errOut.String(), want)
	}
}

func TestEval(t *testing.T) {
	dir := t.TempDir()
	clean := filepath.Join(dir, "clean.jsonl")
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(clean, []byte(`{"id":"a","tool":"Read","input":{"file_path":"/p/x"},"cwd":"/p","expect":"allow","local":true}
{"id":"b","tool":"Read","input":{"file_path":"/home/u/.ssh/id_rsa"},"cwd":"/p","expect":"deny"}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(`{"id":"c","tool":"Grep","input":{"pattern":"x","path":"/p"},"cwd":"/p","expect":"not_allow","note":"labelled harmful on purpose"}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run(t.Context(), []string{"eval", "--json", clean}, &out, &errOut); code != 0 {
		t.Fatalf("clean corpus: exit %d, %s", code, errOut.String())
	}
	var rep struct {
		FalseAllows int     `json:"false_allows"`
		LocalRate   float64 `json:"local_rate"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || rep.FalseAllows != 0 || rep.LocalRate != 1 {
		t.Fatalf("json report %+v %v", rep, err)
	}
	out.Reset()
	if code := run(t.Context(), []string{"eval", clean, bad}, &out, &errOut); code != 1 || !strings.Contains(out.String(), "FALSE ALLOW c") {
		t.Fatalf("false allow: exit %d, %s", code, out.String())
	}
	if code := run(t.Context(), []string{"eval", filepath.Join(dir, "missing.jsonl")}, &out, &errOut); code != 2 {
		t.Fatalf("missing corpus: exit %d", code)
	}
}

func TestConfigCommands(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(t.Context(), []string{"config", "defaults"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "auto_mode:") {
		t.Fatalf("defaults: exit %d", code)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "in.yaml")
	if err := os.WriteFile(src, []byte(`classifier:
  backends:
    - {name: main, base_url: "https://bob:hunter2@llm.example/v1", model: m}
policies:
  default:
    permissions: {deny: ["Bash(make deploy)"]}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if code := run(t.Context(), []string{"config", "show", "--config", src}, &out, &errOut); code != 0 {
		t.Fatalf("show: exit %d: %s", code, errOut.String())
	}
	if strings.Contains(out.String(), "hunter2") {
		t.Fatalf("show printed a password:\n%s", out.String())
	}
	// The effective config: the defaults of what the file leaves out.
	for _, want := range []string{"shutdown_timeout: 10s", "max_concurrent: 8", "api_key_env: OPENAI_API_KEY"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("show lacks the default %q:\n%s", want, out.String())
		}
	}
	// What show prints is a valid config that means the same thing.
	shown := filepath.Join(dir, "shown.yaml")
	if err := os.WriteFile(shown, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	again, err := app.LoadConfig(shown)
	if err != nil {
		t.Fatalf("show output does not load: %v\n%s", err, out.String())
	}
	orig, err := app.LoadConfig(src)
	if err != nil {
		t.Fatal(err)
	}
	orig.Classifier.Backends[0].BaseURL = again.Classifier.Backends[0].BaseURL
	// Compared as YAML: empty and absent lists mean the same.
	a, _ := yaml.Marshal(orig)
	b, _ := yaml.Marshal(again)
	if string(a) != string(b) {
		t.Fatalf("round trip changed the config:\n%s\n%s", a, b)
	}
	if deny := again.File.Policies["default"].Permissions.Deny; !slices.Contains(deny, "Bash(make deploy)") || !slices.Contains(deny, "Bash(curl * | sh)") || again.Classifier.Backends[0].Model != "m" {
		t.Fatalf("round trip lost settings: %+v", again)
	}
}
