package claudecode

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/e2e/agents/agenttest"
)

// claudeVersion is the Claude Code release the test is written against.
const claudeVersion = "2.1.332"

// recordEnv, set in a hook's environment, turns the test binary into the
// recording hook wrapper (see TestMain).
const recordEnv = "TOOLGATE_E2E_HOOK_RECORD"

// TestMain doubles as the hook wrapper: Claude Code runs the test binary
// with recordEnv naming a file and the real hook command as arguments.
func TestMain(m *testing.M) {
	if path := os.Getenv(recordEnv); path != "" {
		os.Exit(wrapHook(path, os.Args[1:]))
	}
	os.Exit(m.Run())
}

// hookRecord is one hook run: what Claude Code sent, what the hook
// printed and its exit code.
type hookRecord struct {
	Input  json.RawMessage `json:"input"`
	Stdout string          `json:"stdout"`
	Stderr string          `json:"stderr,omitempty"`
	Exit   int             `json:"exit"`
	// ProjectDir is CLAUDE_PROJECT_DIR in the hook's environment
	// ("<unset>" when it is not set), which the adapter takes for the
	// project.
	ProjectDir string `json:"project_dir"`
}

// wrapHook runs the hook command args with the stdin it got, passes its
// stdout, stderr and exit code through, and appends a hookRecord to path
// in one write.
func wrapHook(path string, args []string) int {
	in, err := io.ReadAll(io.LimitReader(os.Stdin, 16<<20))
	rec := hookRecord{Input: json.RawMessage(in), Exit: 2, ProjectDir: "<unset>"}
	if dir, ok := os.LookupEnv("CLAUDE_PROJECT_DIR"); ok {
		rec.ProjectDir = dir
	}
	if !json.Valid(in) {
		rec.Input, _ = json.Marshal(string(in))
	}
	var stdout, stderr bytes.Buffer
	switch {
	case err != nil:
		rec.Stderr = "hook wrapper: reading stdin: " + err.Error()
	case len(args) == 0:
		rec.Stderr = "hook wrapper: no hook command"
	default:
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.Stdin = bytes.NewReader(in)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		cancel()
		var exit *exec.ExitError
		switch {
		case err == nil:
			rec.Exit = 0
		case errors.As(err, &exit) && exit.ExitCode() >= 0:
			rec.Exit = exit.ExitCode()
		default:
			stderr.WriteString("hook wrapper: " + err.Error())
		}
		rec.Stdout, rec.Stderr = stdout.String(), stderr.String()
	}
	line, _ := json.Marshal(rec)
	if f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
		_, _ = f.Write(append(line, '\n'))
		_ = f.Close()
	}
	os.Stdout.WriteString(rec.Stdout)
	os.Stderr.WriteString(rec.Stderr)
	return rec.Exit
}

// recordHTTP serves, on loopback, a pass-through to the HTTP hook at
// target that appends a hookRecord of every post to path, as wrapHook
// does for a command hook, and returns its URL. Method, path, query,
// headers, body and the answer pass unchanged.
func recordHTTP(t *testing.T, target, path string) string {
	t.Helper()
	to, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
		rec := hookRecord{Input: json.RawMessage(in), Exit: 2, ProjectDir: "<http hook>"}
		if !json.Valid(in) {
			rec.Input, _ = json.Marshal(string(in))
		}
		status := http.StatusBadGateway
		var body []byte
		if err == nil {
			u := *to
			u.RawQuery = r.URL.RawQuery
			req, _ := http.NewRequestWithContext(r.Context(), r.Method, u.String(), bytes.NewReader(in))
			req.Header = r.Header.Clone()
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				body, err = io.ReadAll(resp.Body)
				resp.Body.Close()
				status = resp.StatusCode
			}
			if err != nil {
				rec.Stderr = "recording pass-through: " + err.Error()
			}
		}
		if status == http.StatusOK {
			rec.Exit = 0
		}
		rec.Stdout = string(body)
		line, _ := json.Marshal(rec)
		mu.Lock()
		if f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
			_, _ = f.Write(append(line, '\n'))
			_ = f.Close()
		}
		mu.Unlock()
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + to.Path
}

// hookListenerAddr is the address of srv's hook listener, from its log.
func hookListenerAddr(ctx context.Context, t *testing.T, srv *agenttest.Server) string {
	t.Helper()
	for {
		for _, line := range bytes.Split(srv.Log.Bytes(), []byte("\n")) {
			var l struct {
				Msg  string `json:"msg"`
				Addr string `json:"addr"`
			}
			if json.Unmarshal(line, &l) == nil && l.Msg == "serving hooks over HTTP" && l.Addr != "" {
				return l.Addr
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no hook listener in toolgate's log:\n%s", srv.Log.Tail(3000))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// readHookRecords reads the records wrapHook appended to path.
func readHookRecords(t *testing.T, path string) []hookRecord {
	t.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var recs []hookRecord
	for line := range bytes.Lines(data) {
		var r hookRecord
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("hook record %q: %v", line, err)
		}
		recs = append(recs, r)
	}
	return recs
}

// hookInput is the part of a PreToolUse input the test reads.
type hookInput struct {
	SessionID      string         `json:"session_id"`
	PromptID       string         `json:"prompt_id"`
	TranscriptPath string         `json:"transcript_path"`
	Cwd            string         `json:"cwd"`
	PermissionMode string         `json:"permission_mode"`
	HookEventName  string         `json:"hook_event_name"`
	ToolName       string         `json:"tool_name"`
	ToolInput      map[string]any `json:"tool_input"`
	ToolUseID      string         `json:"tool_use_id"`
}

// decision is what a hook record told Claude Code: the
// permissionDecision it printed, "" when it printed nothing, or
// "exit N" when it exited with an error.
func (r hookRecord) decision() string {
	if r.Exit != 0 {
		return fmt.Sprintf("exit %d", r.Exit)
	}
	if strings.TrimSpace(r.Stdout) == "" {
		return ""
	}
	var out struct {
		HookSpecificOutput struct {
			PermissionDecision string `json:"permissionDecision"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil {
		return "unparsable: " + r.Stdout
	}
	return out.HookSpecificOutput.PermissionDecision
}

// reason is the permissionDecisionReason the hook printed.
func (r hookRecord) reason() string {
	var out struct {
		HookSpecificOutput struct {
			Reason string `json:"permissionDecisionReason"`
		} `json:"hookSpecificOutput"`
	}
	_ = json.Unmarshal([]byte(r.Stdout), &out)
	return out.HookSpecificOutput.Reason
}

// claudeBinary returns the Claude Code CLI under the npm prefix dir,
// installing the pinned version there first when it is missing. The
// native binary is the platform package's; node_modules/.bin/claude points
// at a copy of it once the package's postinstall has run.
func claudeBinary(ctx context.Context, t *testing.T, dir string) string {
	t.Helper()
	platform := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	candidates := []string{
		filepath.Join(dir, "node_modules", "@anthropic-ai", "claude-code-"+runtime.GOOS+"-"+platform, "claude"),
		filepath.Join(dir, "node_modules", ".bin", "claude"),
	}
	find := func() string {
		for _, c := range candidates {
			if fi, err := os.Stat(c); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
				return c
			}
		}
		return ""
	}
	bin := find()
	if bin == "" {
		t.Logf("installing @anthropic-ai/claude-code@%s into %s", claudeVersion, dir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		ictx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ictx, "npm", "install", "--prefix", dir, "--no-audit", "--no-fund",
			"@anthropic-ai/claude-code@"+claudeVersion)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm install: %v\n%s", err, agenttest.Tail(out, 3000))
		}
		if bin = find(); bin == "" {
			t.Fatalf("npm installed no Claude Code binary for %s/%s under %s", runtime.GOOS, runtime.GOARCH, dir)
		}
	}
	vctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(vctx, bin, "--version")
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s --version: %v", bin, err)
	}
	if !strings.HasPrefix(strings.TrimSpace(string(out)), claudeVersion+" ") {
		t.Fatalf("%s is %q; this test is written for Claude Code %s (reinstall it: npm install --prefix %s @anthropic-ai/claude-code@%s)",
			bin, strings.TrimSpace(string(out)), claudeVersion, dir, claudeVersion)
	}
	return bin
}

// cliRun is one finished run of the CLI.
type cliRun struct {
	stdout, stderr []byte
	err            error
	// asked lists the tool_use_ids the CLI asked the SDK host (the user)
	// about, in host mode, with the request as the CLI sent it.
	asked map[string]json.RawMessage
}

func (r *cliRun) tails() string {
	return fmt.Sprintf("CLI exit: %v\n--- stdout (tail) ---\n%s\n--- stderr (tail) ---\n%s", r.err, agenttest.Tail(r.stdout, 3000), agenttest.Tail(r.stderr, 3000))
}

// claudeCommand prepares the CLI with a process group of its own, which a
// cancelled ctx kills as a whole (background shells included).
func claudeCommand(ctx context.Context, bin, dir string, env, args []string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// runPrint runs "claude -p PROMPT ... --output-format json".
func runPrint(ctx context.Context, bin, dir string, env []string, prompt string, args ...string) *cliRun {
	args = append([]string{"-p", prompt, "--output-format", "json"}, args...)
	cmd := claudeCommand(ctx, bin, dir, env, args)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Stdin = nil
	err := cmd.Run()
	return &cliRun{stdout: stdout.Bytes(), stderr: stderr.Bytes(), err: err}
}

// runHost runs the CLI as an SDK host would: stream-json in and out, with
// permission prompts sent to the host (--permission-prompt-tool stdio).
// The host sends prompt, denies every can_use_tool request (it is the user
// saying no) and closes stdin at the result.
func runHost(ctx context.Context, bin, dir string, env []string, prompt string, args ...string) *cliRun {
	args = append([]string{"-p", "--input-format", "stream-json", "--output-format", "stream-json",
		"--verbose", "--permission-prompt-tool", "stdio"}, args...)
	cmd := claudeCommand(ctx, bin, dir, env, args)
	run := &cliRun{asked: map[string]json.RawMessage{}}
	var stdout, stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		run.err = err
		return run
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		run.err = err
		return run
	}
	if err := cmd.Start(); err != nil {
		run.err = err
		return run
	}
	send := func(v any) {
		line, _ := json.Marshal(v)
		_, _ = stdin.Write(append(line, '\n'))
	}
	send(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": prompt}})
	sc := bufio.NewScanner(io.TeeReader(out, &stdout))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var msg struct {
			Type      string `json:"type"`
			RequestID string `json:"request_id"`
			Request   struct {
				Subtype   string `json:"subtype"`
				ToolName  string `json:"tool_name"`
				ToolUseID string `json:"tool_use_id"`
			} `json:"request"`
		}
		if json.Unmarshal(sc.Bytes(), &msg) != nil {
			continue
		}
		switch msg.Type {
		case "control_request":
			resp := map[string]any{}
			if msg.Request.Subtype == "can_use_tool" {
				var raw struct {
					Request json.RawMessage `json:"request"`
				}
				_ = json.Unmarshal(sc.Bytes(), &raw)
				run.asked[msg.Request.ToolUseID] = raw.Request
				resp = map[string]any{"behavior": "deny", "message": "the e2e user says no to " + msg.Request.ToolName}
			}
			send(map[string]any{"type": "control_response", "response": map[string]any{
				"subtype": "success", "request_id": msg.RequestID, "response": resp,
			}})
		case "result":
			_ = stdin.Close()
		}
	}
	_ = stdin.Close()
	_, _ = io.Copy(io.Discard, out)
	run.err = cmd.Wait()
	run.stdout, run.stderr = stdout.Bytes(), stderr.Bytes()
	return run
}

func TestPinnedVersion(t *testing.T) {
	agenttest.CheckPin(t, "claude-code", "@anthropic-ai/claude-code", claudeVersion)
}
