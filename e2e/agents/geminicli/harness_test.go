package geminicli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolgate/toolgate/e2e/agents/agenttest"
)

// geminiVersion is the Gemini CLI release the test runs.
const geminiVersion = "0.61.0"

const geminiPackage = "@google/gemini-cli"

// hookLogEnv makes the test binary act as the hook wrapper (see
// TestMain): it appends each hook call to the file it names.
const hookLogEnv = "TOOLGATE_E2E_GEMINI_HOOK_LOG"

// tools are the programs the test runs: the pinned Gemini CLI and a
// toolgate binary.
type tools struct {
	node      string // node binary
	geminiJS  string // the CLI's entry point
	toolgate  string
	wrapper   string // this test binary, the hook wrapper
	recordDir string // testdata/recorded when TOOLGATE_RECORD=1
}

// setupTools finds or installs the pinned Gemini CLI under
// $TOOLGATE_AGENTS_DIR/gemini-cli and finds or builds toolgate. It skips
// the test when TOOLGATE_AGENTS_DIR is unset.
func setupTools(ctx context.Context, t *testing.T) *tools {
	t.Helper()
	agents := os.Getenv("TOOLGATE_AGENTS_DIR")
	if agents == "" {
		t.Skip("the real agent CLIs are installed and run by make e2e-agents (TOOLGATE_AGENTS_DIR)")
	}
	agents, err := filepath.Abs(agents)
	if err != nil {
		t.Fatal(err)
	}
	tl := &tools{}
	if tl.node, err = exec.LookPath("node"); err != nil {
		t.Fatalf("node is needed to run Gemini CLI: %v", err)
	}
	prefix := filepath.Join(agents, "gemini-cli")
	pkgDir := filepath.Join(prefix, "node_modules", filepath.FromSlash(geminiPackage))
	if installedVersion(pkgDir) == "" {
		t.Logf("installing %s@%s into %s", geminiPackage, geminiVersion, prefix)
		if err := os.MkdirAll(prefix, 0o755); err != nil {
			t.Fatal(err)
		}
		ictx, cancel := context.WithTimeout(ctx, 100*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ictx, "npm", "install", "--prefix", prefix, "--no-audit", "--no-fund",
			"--save-exact", geminiPackage+"@"+geminiVersion)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm install %s@%s: %v\n%s", geminiPackage, geminiVersion, err, agenttest.Tail(out, 4000))
		}
	}
	if v := installedVersion(pkgDir); v != geminiVersion {
		t.Fatalf("%s in %s is version %q, want %s (make e2e-agents installs the pinned version)", geminiPackage, prefix, v, geminiVersion)
	}
	var pkg struct {
		Bin map[string]string `json:"bin"`
	}
	if b, err := os.ReadFile(filepath.Join(pkgDir, "package.json")); err == nil {
		_ = json.Unmarshal(b, &pkg)
	}
	bin := pkg.Bin["gemini"]
	if bin == "" {
		bin = "bundle/gemini.js"
	}
	tl.geminiJS = filepath.Join(pkgDir, filepath.FromSlash(bin))
	if _, err := os.Stat(tl.geminiJS); err != nil {
		t.Fatalf("Gemini CLI entry point: %v", err)
	}

	tl.toolgate = agenttest.ToolgateBinary(ctx, t)
	if tl.wrapper, err = os.Executable(); err != nil {
		t.Fatal(err)
	}
	if os.Getenv("TOOLGATE_RECORD") == "1" {
		tl.recordDir, err = filepath.Abs(filepath.Join("testdata", "recorded"))
		if err != nil {
			t.Fatal(err)
		}
	}
	return tl
}

func installedVersion(pkgDir string) string {
	b, err := os.ReadFile(filepath.Join(pkgDir, "package.json"))
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

// hookCall is one recorded hook run: what Gemini CLI sent on stdin and
// what the hook command answered.
type hookCall struct {
	Input  json.RawMessage `json:"input"`
	Stdout string          `json:"stdout"`
	Stderr string          `json:"stderr"`
	Exit   int             `json:"exit"`
}

// runHookWrapper is the hook wrapper: it reads the hook input, runs argv
// with it on stdin, appends input and answer to the file log names, and
// answers with argv's output and exit code. When the call cannot be
// recorded it blocks the tool call (exit 2), as a failing hook must.
func runHookWrapper(log string, argv []string) int {
	in, err := io.ReadAll(os.Stdin)
	if err != nil || len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "hook wrapper: no input or no command:", err)
		return 2
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(in), &stdout, &stderr
	code := 0
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			fmt.Fprintln(os.Stderr, "hook wrapper:", err)
			return 2
		}
		code = ee.ExitCode()
	}
	rec := hookCall{Input: in, Stdout: stdout.String(), Stderr: stderr.String(), Exit: code}
	if !json.Valid(in) {
		rec.Input, _ = json.Marshal(string(in))
	}
	line, err := json.Marshal(rec)
	if err == nil {
		var f *os.File
		if f, err = os.OpenFile(log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err == nil {
			_, err = f.Write(append(line, '\n'))
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "hook wrapper: recording:", err)
		return 2
	}
	os.Stdout.Write(stdout.Bytes())
	os.Stderr.Write(stderr.Bytes())
	return code
}

func readHookCalls(path string) ([]hookCall, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var calls []hookCall
	for _, line := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var c hookCall
		if err := json.Unmarshal(line, &c); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		calls = append(calls, c)
	}
	return calls, nil
}

func countLines(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return bytes.Count(b, []byte("\n"))
}

// cliResult is what a Gemini CLI run printed.
type cliResult struct {
	stdout, stderr []byte
	err            error
	elapsed        time.Duration
}

// tail shows the start of stdout (the JSON output's response or error
// come first, its statistics after) and the tail of stderr.
func (r *cliResult) tail() string {
	out := r.stdout
	if len(out) > 2000 {
		out = append(out[:2000:2000], "…"...)
	}
	return fmt.Sprintf("Gemini CLI: exit %v after %v\n--- stdout (head) ---\n%s\n--- stderr (tail) ---\n%s",
		r.err, r.elapsed.Round(time.Millisecond), out, agenttest.Tail(r.stderr, 4000))
}

// runGemini runs the CLI headless in its own process group and kills the
// group when ctx ends or the CLI exits (the MCP server and any shell
// command it left behind).
func runGemini(ctx context.Context, tl *tools, dir string, env, args []string) *cliResult {
	cmd := exec.CommandContext(ctx, tl.node, append([]string{tl.geminiJS}, args...)...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdin = nil
	var stdout, stderr agenttest.SyncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	err := cmd.Start()
	if err == nil {
		err = cmd.Wait()
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // stragglers of our own group
	}
	return &cliResult{stdout: stdout.Bytes(), stderr: stderr.Bytes(), err: err, elapsed: time.Since(start)}
}

// placeholders maps temp paths and run-specific values to stable names
// for the recorded hook inputs.
type placeholders struct {
	pairs [][2]string // literal → placeholder, longest first
}

var (
	timestampRE  = regexp.MustCompile(`"timestamp":"[^"]*"`)
	transcriptRE = regexp.MustCompile(`/chats/session-[^"/]*\.json(l?)"`)
)

// normalize rewrites a recorded hook input: temp paths to $CWD, $OUTSIDE,
// $HOME and $TMP, the fake API's port to $FAKE_PORT, the session id,
// timestamp and transcript file name to placeholders; it is indented.
func (p *placeholders) normalize(in json.RawMessage) ([]byte, error) {
	var head struct {
		SessionID string `json:"session_id"`
	}
	if err := json.Unmarshal(in, &head); err != nil {
		return nil, err
	}
	s := string(in)
	if head.SessionID != "" {
		s = strings.ReplaceAll(s, head.SessionID, "$SESSION_ID")
	}
	for _, kv := range p.pairs {
		s = strings.ReplaceAll(s, kv[0], kv[1])
	}
	s = timestampRE.ReplaceAllString(s, `"timestamp":"$$TIMESTAMP"`)
	s = transcriptRE.ReplaceAllString(s, `/chats/session-$$ID.json$1"`)
	var out bytes.Buffer
	if err := json.Indent(&out, []byte(s), "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

func TestPinnedVersion(t *testing.T) {
	agenttest.CheckPin(t, "gemini-cli", geminiPackage, geminiVersion)
}
