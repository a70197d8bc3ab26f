package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/toolgate/toolgate/fakellm"
	"github.com/toolgate/toolgate/internal/hookcli"
	"github.com/toolgate/toolgate/internal/hookhttp"
)

var update = flag.Bool("update", false, "rewrite golden files")

// hookServer names the server a recorded hook input is sent to.
type hookServer int

const (
	// serverLocal runs with the default policy and no classifier: every
	// decision is local and its reason deterministic.
	serverLocal hookServer = iota
	// serverClassifier has a fake classifier that reads the transcript
	// (classifierVerdict).
	serverClassifier
	// serverDown is a loopback address nothing listens on.
	serverDown
)

// hookGoldenCases lists every recorded input under testdata/hook: AGENT/NAME
// is fed from NAME.json to "toolgate hook AGENT" and its stdout compared with
// NAME.golden. Inputs were written from each agent's documentation and
// sources (see the notes in hook/claude.go, hook/gemini.go, hook/codex.go);
// "$TESTDATA" in them stands for the absolute path of testdata/hook, so that
// transcript_path can point at the recorded transcripts next to them.
var hookGoldenCases = []struct {
	file   string
	server hookServer
	args   []string
}{
	{"claude-code/allow-read", serverLocal, nil},
	{"claude-code/allow-edit-accept-edits", serverLocal, nil},
	{"claude-code/deny-rule", serverLocal, nil},
	{"claude-code/ask-default-mode", serverLocal, nil},
	{"claude-code/auto-classifier-transcript", serverClassifier, nil},
	// Tools whose point is a question to the user get no allow, which
	// would skip the question: the golden files are empty.
	// --mode decides in that mode whatever the agent reports, except plan.
	{"claude-code/allow-edit-mode-auto", serverLocal, []string{"--mode", "auto"}},
	{"claude-code/plan-stays-plan", serverLocal, []string{"--mode", "auto"}},
	{"claude-code/no-decision-exit-plan-mode", serverLocal, nil},
	{"claude-code/no-decision-ask-user-question", serverLocal, nil},
	// Recorded from Claude Code 2.1.330 by e2e/agents/claudecode, paths
	// renamed.
	{"claude-code/real-ask-user-question", serverLocal, nil},
	{"claude-code/real-background-bash", serverLocal, nil},
	{"claude-code/real-curl-pipe-sh", serverLocal, nil},
	{"claude-code/real-exit-plan-mode", serverLocal, nil},
	{"claude-code/real-git-status-nested-repo", serverLocal, nil},
	{"claude-code/real-read-background-output", serverLocal, nil},
	{"claude-code/real-read-in-project", serverLocal, nil},
	{"claude-code/real-rm-outside", serverLocal, nil},
	{"claude-code/real-write-in-project", serverLocal, nil},
	{"claude-code/real-write-outside", serverLocal, nil},
	// The hook's cwd follows cd: the project comes from the session
	// (CLAUDE_PROJECT_DIR, here the transcript), and cwd is where the
	// call runs.
	{"claude-code/allow-relative-read-after-cd", serverLocal, nil},
	{"claude-code/server-down", serverDown, nil},
	{"claude-code/server-down-on-error-ask", serverDown, []string{"--on-error", "ask"}},
	{"claude-code/bad-input-truncated", serverLocal, nil},
	{"claude-code/bad-input-post-tool-use", serverLocal, nil},
	// Unattended (--unattended, or $TOOLGATE_UNATTENDED: see
	// hookGoldenEnv): an ask nobody can answer is denied, saying so;
	// the flag, given, wins over the environment.
	{"claude-code/unattended-ask", serverLocal, []string{"--unattended"}},
	{"claude-code/unattended-env", serverLocal, nil},
	{"claude-code/unattended-env-flag-false", serverLocal, []string{"--unattended=false"}},

	{"gemini-cli/allow-read-file", serverLocal, nil},
	{"gemini-cli/deny-rule", serverLocal, nil},
	{"gemini-cli/ask-as-deny", serverLocal, nil},
	{"gemini-cli/server-down", serverDown, nil},
	{"gemini-cli/server-down-on-error-ask", serverDown, []string{"--on-error", "ask"}},
	{"gemini-cli/bad-input-tool-input-not-object", serverLocal, nil},
	{"gemini-cli/unattended-ask", serverLocal, []string{"--unattended"}},
	// Recorded from Gemini CLI 0.61 by e2e/agents/geminicli, paths renamed.
	{"gemini-cli/real-curl-pipe-sh", serverLocal, nil},
	{"gemini-cli/real-grep-search-include-pattern", serverLocal, nil},
	{"gemini-cli/real-grep-search-project", serverLocal, nil},
	{"gemini-cli/real-grep-search-subdir", serverLocal, nil},
	{"gemini-cli/real-list-background-processes", serverLocal, nil},
	{"gemini-cli/real-mcp-write-note", serverLocal, nil},
	{"gemini-cli/real-read-file-in-project", serverLocal, nil},
	{"gemini-cli/real-replace-in-project", serverLocal, nil},
	{"gemini-cli/real-search-file-content-alias", serverLocal, nil},
	{"gemini-cli/real-shell-in-project", serverLocal, nil},
	{"gemini-cli/real-shell-rm-outside", serverLocal, nil},
	{"gemini-cli/real-update-topic", serverLocal, nil},
	{"gemini-cli/real-write-file-in-project", serverLocal, nil},
	{"gemini-cli/real-write-file-outside", serverLocal, nil},

	// A Codex allow prints nothing: its golden file is empty.
	{"codex/allow-read-only", serverLocal, nil},
	{"codex/allow-patch-in-project", serverLocal, nil},
	// Where a command runs is the workdir of its call in the rollout,
	// and the project the cwd of its turn there; without them both are
	// unknown.
	{"codex/ask-other-repository", serverLocal, nil},
	{"codex/ask-workdir-outside", serverLocal, nil},
	{"codex/ask-no-rollout", serverLocal, nil},
	{"codex/ask-call-not-in-rollout", serverLocal, nil},
	{"codex/deny-rule", serverLocal, nil},
	{"codex/ask-as-deny", serverLocal, nil},
	{"codex/classifier-transcript", serverClassifier, nil},
	{"codex/server-down", serverDown, nil},
	{"codex/server-down-on-error-ask", serverDown, []string{"--on-error", "ask"}},
	{"codex/bad-input-mcp-arguments-not-json", serverLocal, nil},
	{"codex/unattended-ask", serverLocal, []string{"--unattended"}},
	// Recorded from Codex 0.169 by e2e/agents/codex, paths renamed, with
	// the rollout it wrote.
	{"codex/real-cat-readme", serverLocal, nil},
	{"codex/real-cat-in-subdir", serverLocal, nil},
	{"codex/real-cat-kube-config", serverLocal, nil},
	{"codex/real-curl-pipe-sh", serverLocal, nil},
	{"codex/real-git-status-other-repo", serverLocal, nil},
	{"codex/real-git-status-other-repo-relative", serverLocal, nil},
	{"codex/real-patch-in-project", serverLocal, nil},
	{"codex/real-patch-outside", serverLocal, nil},
	{"codex/real-rm-r-outside", serverLocal, nil},
	{"codex/real-rm-rf-outside", serverLocal, nil},
	// PermissionRequest inputs recorded from Codex 0.171 (driven through
	// its app-server with approval policy on-request) by
	// e2e/agents/codex, paths renamed, with the rollout it wrote: an
	// allow approves, a deny refuses, an ask prints nothing (Codex asks
	// the user). The call is found in the rollout by its command.
	{"codex/real-permission-sort-readme", serverLocal, nil},
	{"codex/real-permission-sort-in-subdir", serverLocal, nil},
	{"codex/real-permission-rm-r-outside", serverLocal, nil},
	{"codex/real-permission-curl-pipe-sh", serverLocal, nil},
	// Failing closed answers the PermissionRequest in its own format: a
	// refusal, or with --on-error ask nothing, which leaves the call to
	// the user.
	{"codex/permission-server-down", serverDown, nil},
	{"codex/permission-server-down-on-error-ask", serverDown, []string{"--on-error", "ask"}},
}

// classifierVerdict decides from what the classifier was sent: only the
// transcript carries the user's words, so a verdict that depends on them
// shows that the hook read and forwarded the transcript. Text an agent
// injects on its own (Codex's AGENTS.md) must never pass for the user's.
func classifierVerdict(r *fakellm.Request) fakellm.Reply {
	switch {
	case strings.Contains(r.User, "pre-approved by the user"):
		return fakellm.Reply{Reason: "AGENTS.md text reached the classifier as the user's words"}
	case strings.Contains(r.User, "do not deploy anything today"):
		return fakellm.Reply{Block: true, Reason: "the user said not to deploy today"}
	case strings.Contains(r.User, "please run the database migration"):
		return fakellm.Reply{Reason: "the user asked for this migration"}
	}
	return fakellm.Reply{Block: true, Reason: "nothing in the transcript asks for this"}
}

// runHookCmd runs "toolgate hook ARGS..." with input on stdin.
func runHookCmd(t *testing.T, input []byte, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	stdin = bytes.NewReader(input)
	defer func() { stdin = nil }()
	var out, errOut bytes.Buffer
	code = run(t.Context(), append([]string{"hook"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

// recordedHome is the agent user's home of the recorded hook inputs and
// their transcripts; its project directory is recordedHome/project.
const recordedHome = "/home/dev"

// runHookBinary runs toolgate-hook's command (hookcli with the HTTP
// transport) in this process, with input on stdin.
func runHookBinary(t *testing.T, input []byte, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = hookcli.Run(t.Context(), "toolgate-hook", hookhttp.DefaultAddr, args, bytes.NewReader(input), &out, &errOut, os.Getenv, hookhttp.Decide)
	return code, out.String(), errOut.String()
}

// hookGoldenEnv are the environment variables a golden case runs with,
// by its file; every other case runs with them empty.
var hookGoldenEnv = map[string]map[string]string{
	"claude-code/unattended-env":            {"TOOLGATE_UNATTENDED": "1"},
	"claude-code/unattended-env-flag-false": {"TOOLGATE_UNATTENDED": "true"},
}

// TestHookGolden runs every recorded input through toolgate hook (gRPC)
// and through toolgate-hook (the server's hook listener, on a Unix
// socket): both must print the golden output, byte for byte.
func TestHookGolden(t *testing.T) {
	recorded, err := filepath.Abs(filepath.Join("testdata", "hook"))
	if err != nil {
		t.Fatal(err)
	}
	checkCasesCoverFiles(t, recorded)
	// The server proves nothing from a working directory it cannot see, so
	// the recorded home and project are made real: the inputs and
	// transcripts are copied with the home (and Claude Code's slug of it,
	// in its temporary files' names) under a temporary directory, and the
	// answers are compared with it named as recorded.
	tmp := t.TempDir()
	if err := os.MkdirAll(filepath.Join(tmp, recordedHome, "project"), 0o755); err != nil {
		t.Fatal(err)
	}
	slug := func(p string) string { return strings.ReplaceAll(p, "/", "-") }
	toReal := strings.NewReplacer(recordedHome, tmp+recordedHome, slug(recordedHome), slug(tmp+recordedHome))
	toRecorded := strings.NewReplacer(tmp+recordedHome, recordedHome, slug(tmp+recordedHome), slug(recordedHome))
	root := filepath.Join(tmp, "hook")
	if err := os.CopyFS(root, os.DirFS(recorded)); err != nil {
		t.Fatal(err)
	}
	if err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, ".golden") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(p, []byte(toReal.Replace(string(b))), 0o644)
	}); err != nil {
		t.Fatal(err)
	}
	// The Claude Code inputs take their project from the transcript; one
	// from the environment (a test run inside Claude Code) must not count.
	t.Setenv("CLAUDE_PROJECT_DIR", "")
	// Nor one from the environment of the test run.
	t.Setenv("TOOLGATE_UNATTENDED", "")

	localHook, classifiedHook := filepath.Join(tmp, "local.sock"), filepath.Join(tmp, "classified.sock")
	local := startServe(t, "--hook-unix-socket", localHook)
	fake := fakellm.Start(t, classifierVerdict)
	classified := startServe(t, "--classifier-url", fake.URL(), "--classifier-model", "m", "--hook-unix-socket", classifiedHook)
	// The refused address is random, so it is written as DEAD_ADDR in the
	// golden files; the rest of the reason is toolgate's own (rpcFailure).
	dead := deadAddr(t)

	transports := []struct {
		name  string
		run   func(*testing.T, []byte, ...string) (int, string, string)
		addrs map[hookServer]string
	}{
		{"toolgate hook", runHookCmd, map[hookServer]string{serverLocal: local, serverClassifier: classified, serverDown: dead}},
		{"toolgate-hook", runHookBinary, map[hookServer]string{serverLocal: "unix:" + localHook, serverClassifier: "unix:" + classifiedHook, serverDown: dead}},
	}
	for _, tr := range transports {
		for _, tc := range hookGoldenCases {
			t.Run(tr.name+"/"+tc.file, func(t *testing.T) {
				agent := filepath.Dir(tc.file)
				input, err := os.ReadFile(filepath.Join(root, tc.file+".json"))
				if err != nil {
					t.Fatal(err)
				}
				input = bytes.ReplaceAll(input, []byte("$TESTDATA"), []byte(root))
				for k, v := range hookGoldenEnv[tc.file] {
					t.Setenv(k, v)
				}
				args := append([]string{agent, "--addr", tr.addrs[tc.server], "--timeout", "20s"}, tc.args...)
				code, stdout, stderr := tr.run(t, input, args...)
				if code != 0 || stderr != "" {
					t.Fatalf("exit %d, stderr %q", code, stderr)
				}
				got := []byte(toRecorded.Replace(strings.ReplaceAll(stdout, dead, "DEAD_ADDR")))
				golden := filepath.Join(recorded, tc.file+".golden")
				if *update && tr.name == "toolgate hook" {
					if err := os.WriteFile(golden, got, 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run with -update to create it)", err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("stdout differs from %s\ngot:  %s\nwant: %s", golden, got, want)
				}
			})
		}
	}
}

// checkCasesCoverFiles fails when a recorded input has no case, so that
// none is silently left out.
func checkCasesCoverFiles(t *testing.T, root string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "*", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, tc := range hookGoldenCases {
		listed = append(listed, tc.file)
	}
	for _, f := range files {
		rel, _ := filepath.Rel(root, strings.TrimSuffix(f, ".json"))
		if !slices.Contains(listed, filepath.ToSlash(rel)) {
			t.Errorf("%s has no entry in hookGoldenCases", f)
		}
	}
	if len(files) != len(listed) {
		t.Errorf("%d recorded inputs, %d cases", len(files), len(listed))
	}
}

func TestHookUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no agent", nil, 2, "usage: PROG claude-code|gemini-cli|codex"},
		{"unknown agent", []string{"cursor"}, 2, `unknown agent "cursor" (known: claude-code, gemini-cli, codex)`},
		{"bad on-error", []string{"codex", "--on-error", "allow"}, 2, "--on-error must be deny or ask"},
		{"bad mode", []string{"codex", "--mode", "yolo"}, 2, `--mode "yolo": want auto, default, accept_edits, plan or bypass`},
		{"bad flag", []string{"codex", "--no-such-flag"}, 2, "flag provided but not defined: -no-such-flag"},
		{"bad unattended", []string{"codex", "--unattended=maybe"}, 2, `invalid boolean value "maybe" for -unattended`},
		// An agent takes exit 0 with nothing printed as "go ahead".
		// So -h prints the usage and every flag on stderr, and blocks.
		{"help", []string{"codex", "-h"}, 2, "Usage: PROG claude-code|gemini-cli|codex"},
		{"help flags", []string{"codex", "--help"}, 2, "-on-error string"},
		{"help without agent", []string{"-h"}, 2, "Usage: PROG claude-code|gemini-cli|codex"},
		{"help without agent lists flags", []string{"--help"}, 2, "-token-file string"},
	}
	// toolgate-hook takes the same arguments and refuses the same ones.
	for _, prog := range []struct {
		name, flags string
		run         func(*testing.T, []byte, ...string) (int, string, string)
	}{
		{"toolgate hook", "hook", runHookCmd},
		{"toolgate-hook", "toolgate-hook", runHookBinary},
	} {
		for _, tc := range tests {
			t.Run(prog.name+"/"+tc.name, func(t *testing.T) {
				want := strings.NewReplacer("PROG", prog.name, "FLAGS", prog.flags).Replace(tc.want)
				code, stdout, stderr := prog.run(t, []byte(`{}`), tc.args...)
				if code != tc.code || stdout != "" || !strings.Contains(stderr, want) {
					t.Errorf("exit %d, stdout %q, stderr %q; want exit %d and %q", code, stdout, stderr, tc.code, want)
				}
			})
		}
	}
}

// TestHookSlowInput: an agent that never closes stdin, or a transcript_path
// that blocks on read (a FIFO), gets the on-error decision when --timeout
// passes, instead of a hook that hangs (Codex runs the call when its hook
// times out).
func TestHookSlowInput(t *testing.T) {
	r, w := io.Pipe()
	t.Cleanup(func() { w.Close() })
	go func() { _, _ = w.Write([]byte(`{"session_id":"s",`)) }() // and nothing more
	stdin = r
	defer func() { stdin = nil }()
	var out, errOut bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(t.Context(), []string{"hook", "claude-code", "--addr", "127.0.0.1:1", "--timeout", "300ms"}, &out, &errOut)
	}()
	select {
	case code := <-done:
		if code != 0 || !strings.Contains(out.String(), `"permissionDecision":"deny"`) || !strings.Contains(out.String(), "reading the hook input") {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
		}
	case <-time.After(10 * time.Second):
		w.Close() // let the read end
		<-done
		t.Fatal("the hook waited for stdin past its 300ms timeout")
	}

	fifo := filepath.Join(t.TempDir(), "transcript.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("cannot make a FIFO here: %v", err)
	}
	in := `{"session_id":"s","transcript_path":"` + fifo + `","cwd":"/p","hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{"file_path":"/p/x"}}`
	code, stdout, stderr := runHookCmd(t, []byte(in), "claude-code", "--addr", "127.0.0.1:1", "--timeout", "300ms")
	if code != 0 || !strings.Contains(stdout, `"permissionDecision":"deny"`) {
		t.Fatalf("FIFO transcript: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// TestHookRPCFailure: a failed Check is worded by toolgate, with the
// server's message only where toolgate's server wrote it; grpc-go's
// transport text never reaches the agent.
func TestHookRPCFailure(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{status.Error(codes.Unavailable, "connection error: desc = \"transport: Error while dialing\""), "server A is unreachable (Unavailable)"},
		{status.Error(codes.DeadlineExceeded, "context deadline exceeded"), "server A did not answer within --timeout (DeadlineExceeded)"},
		{status.Error(codes.Canceled, "context canceled"), "server A was not asked: the call was cancelled (Canceled)"},
		{status.Error(codes.InvalidArgument, "tool.name is required"), "server A rejected the request (InvalidArgument): tool.name is required"},
		{status.Error(codes.Unauthenticated, "unknown bearer token"), "server A refused the credentials (Unauthenticated): unknown bearer token"},
		{status.Error(codes.PermissionDenied, "proxy says no"), "server A refused the call (PermissionDenied)"},
		{status.Error(codes.ResourceExhausted, "grpc: received message larger than max"), "server A refused the request as over a limit (ResourceExhausted)"},
		{status.Error(codes.Unimplemented, "unknown service toolgate.v1.PermissionService"), "server A does not serve toolgate's Check (Unimplemented)"},
		{status.Error(codes.Internal, "internal error"), "server A failed to decide (Internal)"},
		{io.ErrUnexpectedEOF, "server A failed to decide (Unknown)"},
	}
	for _, tc := range tests {
		if got := rpcFailure("A", tc.err); got != tc.want {
			t.Errorf("rpcFailure(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// TestMain lets a test run this binary as toolgate itself (runAsToolgate),
// with real standard descriptors.
func TestMain(m *testing.M) {
	if os.Getenv("TOOLGATE_TEST_RUN_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// runAsToolgate runs the test binary as "toolgate ARGS..." with stdin
// input; setup sets its stdout. It returns how it ended and its stderr.
func runAsToolgate(t *testing.T, input []byte, setup func(*exec.Cmd), args ...string) (*os.ProcessState, string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], args...)
	cmd.Env = append(os.Environ(), "TOOLGATE_TEST_RUN_MAIN=1")
	cmd.Stdin = bytes.NewReader(input)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	setup(cmd)
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return cmd.ProcessState, stderr.String()
}

// TestHookUnwritableStdout: a hook whose decision cannot reach its agent
// (a pipe nobody reads, a stdout closed when it started) exits 2 with the
// reason on stderr, which all three agents read as a block (Codex only
// with a reason on stderr); never killed by SIGPIPE or exiting 0, which
// they read as "go ahead".
func TestHookUnwritableStdout(t *testing.T) {
	addr := startServe(t)
	root, err := filepath.Abs(filepath.Join("testdata", "hook"))
	if err != nil {
		t.Fatal(err)
	}
	stdouts := []struct {
		name  string
		setup func(t *testing.T, cmd *exec.Cmd)
		want  string
	}{
		{"pipe without a reader", func(t *testing.T, cmd *exec.Cmd) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			r.Close()
			t.Cleanup(func() { w.Close() })
			cmd.Stdout = w
		}, "could not print the decision"},
		// exec gives a nil Stdout /dev/null, as Go does to a stdout closed at start.
		{"dev null", func(*testing.T, *exec.Cmd) {}, "cannot read the decision"},
		{"closed", func(t *testing.T, cmd *exec.Cmd) {
			sh, err := exec.LookPath("sh")
			if err != nil {
				t.Skip("no sh")
			}
			cmd.Args = append([]string{sh, "-c", `exec "$0" "$@" >&-`}, cmd.Args...)
			cmd.Path = sh
		}, "cannot read the decision"},
	}
	for _, agent := range []string{"claude-code", "gemini-cli", "codex"} {
		input, err := os.ReadFile(filepath.Join(root, agent, "deny-rule.json"))
		if err != nil {
			t.Fatal(err)
		}
		input = bytes.ReplaceAll(input, []byte("$TESTDATA"), []byte(root))
		for _, so := range stdouts {
			t.Run(agent+"/"+so.name, func(t *testing.T) {
				st, stderr := runAsToolgate(t, input, func(cmd *exec.Cmd) { so.setup(t, cmd) }, "hook", agent, "--addr", addr, "--timeout", "20s")
				if st.ExitCode() != exitHookBlock || !strings.Contains(stderr, so.want) {
					t.Errorf("ended %v, stderr %q; want exit %d and %q", st, stderr, exitHookBlock, so.want)
				}
			})
		}
	}
}

// TestHookUnattendedEnvInvalid: a $TOOLGATE_UNATTENDED that is not a
// boolean blocks the call with the reason, in both hook commands: a CI job
// that meant to mark itself must not run as attended unnoticed.
func TestHookUnattendedEnvInvalid(t *testing.T) {
	t.Setenv("TOOLGATE_UNATTENDED", "maybe")
	for name, run := range map[string]func(*testing.T, []byte, ...string) (int, string, string){"toolgate hook": runHookCmd, "toolgate-hook": runHookBinary} {
		code, stdout, stderr := run(t, []byte(`{}`), "claude-code")
		if want := name + `: $TOOLGATE_UNATTENDED "maybe": want 1 or 0 (true or false)`; code != 2 || stdout != "" || !strings.Contains(stderr, want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 2 and %q", name, code, stdout, stderr, want)
		}
	}
}
