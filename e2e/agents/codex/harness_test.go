//go:build unix

package codex

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/e2e/agents/agenttest"
)

// codexVersion is the pinned @openai/codex release.
const codexVersion = "0.171.0"

const skipReason = "the real agent CLIs are installed and run by make e2e-agents (TOOLGATE_AGENTS_DIR)"

// codexBinary returns the native Codex binary under
// $TOOLGATE_AGENTS_DIR/codex, installing the pinned release there with npm
// when it is missing. Another version there fails the test: replacing it
// would leave make e2e-agents' copy of the lock file describing something
// else.
func codexBinary(ctx context.Context, t *testing.T) string {
	t.Helper()
	agents := os.Getenv("TOOLGATE_AGENTS_DIR")
	if agents == "" {
		t.Skip(skipReason)
	}
	agents, err := filepath.Abs(agents)
	if err != nil {
		t.Fatal(err)
	}
	prefix := filepath.Join(agents, "codex")
	pkg, triple, ok := codexPlatform()
	if !ok {
		t.Skipf("no @openai/codex build for %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	bin := filepath.Join(prefix, "node_modules", "@openai", pkg, "vendor", triple, "bin", "codex")
	if v := installedVersion(prefix); v != "" && v != codexVersion {
		t.Fatalf("%s holds @openai/codex %s; the test is written for %s (make e2e-agents installs the pinned version)", prefix, v, codexVersion)
	}
	if !isFile(bin) {
		npm, err := exec.LookPath("npm")
		if err != nil {
			t.Fatalf("@openai/codex@%s is not in %s and npm is not on PATH to install it: %v", codexVersion, prefix, err)
		}
		if err := os.MkdirAll(prefix, 0o755); err != nil {
			t.Fatal(err)
		}
		ictx, cancel := context.WithTimeout(ctx, 90*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ictx, npm, "install", "--prefix", prefix, "--no-audit", "--no-fund", "@openai/codex@"+codexVersion)
		t.Logf("installing: %s", strings.Join(cmd.Args, " "))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm install: %v\n%s", err, agenttest.Tail(out, 4000))
		}
	}
	out, err := exec.CommandContext(ctx, bin, "--version").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "codex-cli "+codexVersion {
		t.Fatalf("%s --version: %v: %q, want codex-cli %s", bin, err, out, codexVersion)
	}
	return bin
}

// codexPlatform names the npm platform package and target triple that
// hold the native binary for this machine.
func codexPlatform() (pkg, triple string, ok bool) {
	switch runtime.GOOS + "/" + runtime.GOARCH {
	case "linux/amd64":
		return "codex-linux-x64", "x86_64-unknown-linux-musl", true
	case "linux/arm64":
		return "codex-linux-arm64", "aarch64-unknown-linux-musl", true
	case "darwin/amd64":
		return "codex-darwin-x64", "x86_64-apple-darwin", true
	case "darwin/arm64":
		return "codex-darwin-arm64", "aarch64-apple-darwin", true
	}
	return "", "", false
}

func installedVersion(prefix string) string {
	b, err := os.ReadFile(filepath.Join(prefix, "node_modules", "@openai", "codex", "package.json"))
	if err != nil {
		return ""
	}
	var p struct {
		Version string `json:"version"`
	}
	if json.Unmarshal(b, &p) != nil {
		return ""
	}
	return p.Version
}

// env is one Codex session's world: a git project (the session's cwd), a
// Codex home, a directory outside the project with a victim file, and
// another git repository whose core.fsmonitor runs a script.
type env struct {
	root    string // temporary root of all of them
	project string
	home    string // HOME; Codex's home is home/.codex
	outside string
	other   string // another git repository, with a hostile core.fsmonitor
	other2  string // one more, reached by a relative workdir
	record  string // hook inputs, appended by the hook wrapper
	// hookHashes are Codex's keys for the configured hooks
	// ("<hooks.json>:pre_tool_use:0:0") and their trust hashes, as
	// computed here.
	hookHashes map[string]string
	fake       *fakeModel
	binDir     string // holds toolgate
	addr       string // toolgate's address, "" without a server

	stdout, stderr agenttest.SyncBuffer // the CLI's
}

const readme = "e2e project README: the model read this line\n"

// docsNotes is docs/notes.txt in the project.
const docsNotes = "e2e project docs: read from the docs workdir\n"

// kubeToken is in a kubeconfig outside the project.
const kubeToken = "token: e2e-kube-token-not-for-the-model"

func newEnv(t *testing.T) *env {
	t.Helper()
	root := t.TempDir()
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	e := &env{
		root:    root,
		project: filepath.Join(root, "project"),
		home:    filepath.Join(root, "home"),
		outside: filepath.Join(root, "outside"),
		other:   filepath.Join(root, "other"),
		other2:  filepath.Join(root, "other2"),
		record:  filepath.Join(root, "hook-inputs.jsonl"),
	}
	for _, d := range []string{e.project, filepath.Join(e.home, ".codex"), e.outside, e.other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(e.project, "README.md"), readme, 0o644)
	write(t, filepath.Join(e.project, "main.go"), "package main\n\nfunc main() {}\n", 0o644)
	if err := os.MkdirAll(filepath.Join(e.project, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(e.project, "docs", "notes.txt"), docsNotes, 0o644)
	if err := os.MkdirAll(e.kube(), 0o700); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(e.kube(), "config"), "apiVersion: v1\nusers:\n- name: e2e\n  user:\n    "+kubeToken+"\n", 0o600)
	write(t, e.victim(), "precious data outside the project\n", 0o644)
	if err := os.Mkdir(e.victimDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(e.victimDir(), "data"), "more precious data\n", 0o644)
	git(t, e.project, "init", "-q")
	hostileRepo(t, e.other, e.fsmonitorMarker())
	hostileRepo(t, e.other2, e.fsmonitorMarker2())
	return e
}

// hostileRepo makes a git repository whose .git/config runs a script, as
// core.fsmonitor, on any git status there: the script creates marker.
func hostileRepo(t *testing.T, dir, marker string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "init", "-q")
	write(t, filepath.Join(dir, "notes.txt"), "another repository\n", 0o644)
	fsmonitor := filepath.Join(dir, ".git", "fsmonitor-hook")
	write(t, fsmonitor, "#!/bin/sh\ntouch '"+marker+"'\n", 0o755)
	git(t, dir, "config", "core.fsmonitor", fsmonitor)
}

func (e *env) victim() string          { return filepath.Join(e.outside, "victim") }
func (e *env) victimDir() string       { return filepath.Join(e.outside, "victim-dir") }
func (e *env) curlMarker() string      { return filepath.Join(e.outside, "curl-marker") }
func (e *env) fsmonitorMarker() string { return filepath.Join(e.outside, "fsmonitor-marker") }
func (e *env) fsmonitorMarker2() string {
	return filepath.Join(e.outside, "fsmonitor-marker-2")
}
func (e *env) codexHome() string { return filepath.Join(e.home, ".codex") }
func (e *env) kube() string      { return filepath.Join(e.outside, ".kube") }

// hookSetup is what Codex is configured with: its approval policy and
// the command of each hook, by Codex's event name ("PreToolUse",
// "PermissionRequest").
type hookSetup struct {
	approval string // approval_policy: "never" or "on-request"
	sandbox  string // sandbox_mode; "" is "danger-full-access"
	hooks    map[string]string
}

func (s hookSetup) sandboxMode() string {
	if s.sandbox == "" {
		return "danger-full-access"
	}
	return s.sandbox
}

// codexEvents are Codex's hook events as hooks.json names them and as its
// trust keys spell them.
var codexEvents = []struct{ name, key string }{
	{"PreToolUse", "pre_tool_use"},
	{"PermissionRequest", "permission_request"},
}

// configure writes Codex's config.toml and hooks.json, with each hook's
// trust hash so that Codex runs it without asking.
func (e *env) configure(t *testing.T, setup hookSetup) {
	t.Helper()
	hooksPath := filepath.Join(e.codexHome(), "hooks.json")
	byEvent := map[string]any{}
	e.hookHashes = map[string]string{}
	var state strings.Builder
	for _, ev := range codexEvents {
		command, ok := setup.hooks[ev.name]
		if !ok {
			continue
		}
		byEvent[ev.name] = []any{map[string]any{
			"matcher": "*",
			"hooks":   []any{map[string]any{"type": "command", "command": command}},
		}}
		key := hooksPath + ":" + ev.key + ":0:0"
		hash := hookTrustHash(ev.key, "*", command)
		e.hookHashes[key] = hash
		fmt.Fprintf(&state, "\n[hooks.state.%s]\ntrusted_hash = %s\n", tomlString(key), tomlString(hash))
	}
	if len(byEvent) != len(setup.hooks) {
		t.Fatalf("unknown hook event in %v", setup.hooks)
	}
	b, err := json.MarshalIndent(map[string]any{"hooks": byEvent}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	write(t, hooksPath, string(b)+"\n", 0o644)

	config := fmt.Sprintf(`model = "gpt-5.5"
model_provider = "fake"
approval_policy = %s
sandbox_mode = %s
check_for_update_on_startup = false

# Nothing but loopback: no analytics, no curated-plugin sync from GitHub.
[analytics]
enabled = false

[features]
plugins = false
remote_plugin = false
apps = false

[model_providers.fake]
name = "fake"
base_url = %s
wire_api = "responses"
env_key = "FAKE_KEY"
request_max_retries = 0
stream_max_retries = 0
%s`, tomlString(setup.approval), tomlString(setup.sandboxMode()), tomlString(e.fake.url()+"/v1"), state.String())
	write(t, filepath.Join(e.codexHome(), "config.toml"), config, 0o644)
}

// hookTrustHash is Codex's trust hash of a command hook (codex-rs
// config fingerprint of the hook's normalized identity): SHA-256 of the
// canonical JSON (keys sorted, compact, no HTML escaping) of
// {event_name, matcher, hooks: [{type, command, timeout, async}]}, with
// Codex's defaults timeout 600 and async false.
func hookTrustHash(event, matcher, command string) string {
	identity := map[string]any{
		"event_name": event,
		"matcher":    matcher,
		"hooks": []any{map[string]any{
			"type": "command", "command": command, "timeout": 600, "async": false,
		}},
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(identity); err != nil { // maps encode with sorted keys
		panic(err)
	}
	sum := sha256.Sum256(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// environ is the whole environment of Codex and so of its hooks and
// commands: nothing of the caller's but PATH and a few basics.
func (e *env) environ() []string {
	env := []string{
		"PATH=" + e.binDir + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + e.home,
		"CODEX_HOME=" + e.codexHome(),
		"FAKE_KEY=e2e-not-a-key",
		"TOOLGATE_E2E_HOOK_RECORD=" + e.record,
		"LANG=C.UTF-8",
		"NO_COLOR=1",
		"TERM=dumb",
	}
	if e.addr != "" {
		env = append(env, "TOOLGATE_ADDR="+e.addr)
	}
	for _, k := range []string{"USER", "LOGNAME", "TMPDIR"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// command makes a Codex command whose process group is killed when ctx
// ends.
func (e *env) command(ctx context.Context, bin string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = e.project
	cmd.Env = e.environ()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// runCodex runs `codex exec --json PROMPT < /dev/null` in the project.
func (e *env) runCodex(ctx context.Context, bin string) error {
	cmd := e.command(ctx, bin, "exec", "--json", "Run the scripted toolgate e2e steps.")
	cmd.Stdout, cmd.Stderr = &e.stdout, &e.stderr
	err := cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // leftovers of the group, if any
	}
	if ctx.Err() != nil {
		return fmt.Errorf("codex exec: %w (%v)", context.Cause(ctx), err)
	}
	return err
}

// hookState is a hook's current hash and trust status as Codex sees them.
type hookState struct{ hash, status string }

// hookStatus asks `codex app-server` (hooks/list) for every hook's current
// hash and trust status, by key.
func (e *env) hookStatus(ctx context.Context, bin string) (map[string]hookState, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := e.command(ctx, bin, "app-server")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr agenttest.SyncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	defer func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second): // it did not exit on EOF
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}()
	msgs := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"toolgate-e2e","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"initialized"}`,
		fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"hooks/list","params":{"cwds":[%q]}}`, e.project),
	}
	if _, err := io.WriteString(stdin, strings.Join(msgs, "\n")+"\n"); err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var m struct {
			ID     *int `json:"id"`
			Result struct {
				Data []struct {
					Hooks []struct {
						Key         string `json:"key"`
						CurrentHash string `json:"currentHash"`
						TrustStatus string `json:"trustStatus"`
					} `json:"hooks"`
				} `json:"data"`
			} `json:"result"`
			Error json.RawMessage `json:"error"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil || m.ID == nil || *m.ID != 2 {
			continue
		}
		if len(m.Error) > 0 {
			return nil, fmt.Errorf("hooks/list: %s", m.Error)
		}
		states := map[string]hookState{}
		for _, d := range m.Result.Data {
			for _, h := range d.Hooks {
				states[h.Key] = hookState{h.CurrentHash, h.TrustStatus}
			}
		}
		return states, nil
	}
	return nil, fmt.Errorf("app-server gave no hooks/list answer (%v); stderr:\n%s", sc.Err(), stderr.Tail(2000))
}

// hookInputs reads the hook inputs the wrapper recorded (JSON values one
// after the other), in order.
func (e *env) hookInputs() ([]json.RawMessage, error) {
	b, err := os.ReadFile(e.record)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	var out []json.RawMessage
	for {
		var v json.RawMessage
		if err := dec.Decode(&v); err == io.EOF {
			return out, nil
		} else if err != nil {
			return out, fmt.Errorf("%s: %w", e.record, err)
		}
		out = append(out, v)
	}
}

func write(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
}

func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// toolgateDir is a directory holding the toolgate under test as
// "toolgate", for PATH: Codex trusts the hook by a hash of its command,
// which names the binary as "toolgate hook codex".
func toolgateDir(ctx context.Context, t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Symlink(agenttest.ToolgateBinary(ctx, t), filepath.Join(dir, "toolgate")); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestPinnedVersion(t *testing.T) {
	agenttest.CheckPin(t, "codex", "@openai/codex", codexVersion)
}

// checkTrusted fails the test unless Codex trusts every configured hook
// with the hash the test computed: an untrusted hook is skipped silently.
func (e *env) checkTrusted(ctx context.Context, t *testing.T, codex string) {
	t.Helper()
	states, err := e.hookStatus(ctx, codex)
	if err != nil {
		t.Fatalf("codex app-server hooks/list: %v", err)
	}
	for key, want := range e.hookHashes {
		if got := states[key]; got.hash != want || got.status != "trusted" {
			t.Fatalf("Codex reports hook %s as %q with hash %q; the test computed %s and wrote it to config.toml: Codex would skip the hook (hooks/list: %v)", key, got.status, got.hash, want, states)
		}
	}
}

// approvalRequest is an approval Codex asked its client (the user) for.
type approvalRequest struct {
	Method string          // "item/commandExecution/requestApproval", ...
	Params json.RawMessage // its params
}

// runAppServer runs one turn through `codex app-server`, as an IDE drives
// Codex: unlike `codex exec`, which never asks for approval, it honours
// config.toml's approval_policy, and asks its client (here, the test,
// standing in for the user) to approve what needs approval. Every such
// request is declined and returned, in order.
func (e *env) runAppServer(ctx context.Context, bin, prompt string) ([]approvalRequest, error) {
	cmd := e.command(ctx, bin, "app-server")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = &e.stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	defer func() {
		stdin.Close()
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	}()
	send := func(v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		_, err = stdin.Write(append(b, '\n'))
		return err
	}
	request := func(id int, method string, params any) error {
		return send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	}
	if err := request(1, "initialize", map[string]any{"clientInfo": map[string]any{"name": "toolgate-e2e", "version": "1"}}); err != nil {
		return nil, err
	}
	if err := send(map[string]any{"jsonrpc": "2.0", "method": "initialized"}); err != nil {
		return nil, err
	}
	if err := request(2, "thread/start", map[string]any{"cwd": e.project}); err != nil {
		return nil, err
	}
	var asked []approvalRequest
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		e.stdout.Write(append(sc.Bytes(), '\n'))
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Result struct {
				Thread struct {
					ID string `json:"id"`
				} `json:"thread"`
			} `json:"result"`
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			return asked, fmt.Errorf("app-server: %v: %s", err, sc.Bytes())
		}
		switch {
		case len(m.Error) > 0:
			return asked, fmt.Errorf("app-server: %s", m.Error)
		case m.Method == "" && string(m.ID) == "2": // thread/start's answer
			if err := request(3, "turn/start", map[string]any{
				"threadId": m.Result.Thread.ID,
				"input":    []any{map[string]any{"type": "text", "text": prompt}},
			}); err != nil {
				return asked, err
			}
		case m.Method != "" && len(m.ID) > 0: // a request to the client
			asked = append(asked, approvalRequest{m.Method, m.Params})
			if err := send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{"decision": "decline"}}); err != nil {
				return asked, err
			}
		case m.Method == "turn/completed":
			return asked, nil
		}
	}
	if ctx.Err() != nil {
		return asked, fmt.Errorf("app-server: %w", context.Cause(ctx))
	}
	return asked, fmt.Errorf("app-server ended before the turn completed: %v", sc.Err())
}
