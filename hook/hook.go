// Package hook converts between the hook protocols of AI coding agents and
// the toolgate permission API. Agents that only speak hooks run a command
// before each tool call, pass it a JSON document on stdin and read a decision
// from stdout; this package parses that input into a CheckRequest and renders
// a decision back in the agent's format. It does no I/O besides reading the
// hook input, the (bounded) tail of a transcript file, and writing the output.
//
// Supported agents:
//   - Claude Code, PreToolUse hook: ParseClaude, ClaudeRequest, ClaudeOutput.
//   - Gemini CLI, BeforeTool hook: ParseGemini, GeminiRequest, GeminiOutput.
//   - Codex, PreToolUse and PermissionRequest hooks: ParseCodex,
//     CodexRequest, CodexOutput, CodexPermissionOutput.
//
// Each is an Agent, found by its command-line name with AgentByName.
//
// Everything here fails closed: an unknown decision renders as deny.
package hook

import (
	"os"
	"path/filepath"
	"syscall"

	toolgatev1 "github.com/toolgate/toolgate/gen/toolgate/v1"
	"github.com/toolgate/toolgate/hook/hookout"
)

// Decisions as rendered to agents.
const (
	Allow = hookout.Allow
	Deny  = hookout.Deny
	Ask   = hookout.Ask
)

// Defaults for Options.
const (
	DefaultTranscriptEntries  = 20
	DefaultMaxTranscriptBytes = 2 << 20 // 2 MiB
	// MaxEntryText caps the text of one transcript entry (a long tool
	// output, say) so that a few huge entries cannot push the request over
	// the server's size limits. Longer text is cut and marked.
	MaxEntryText = 16 << 10
)

// Options for building requests. Zero values take the defaults.
type Options struct {
	// TranscriptEntries is how many of the last transcript entries to send
	// (default 20). A negative value sends none.
	TranscriptEntries int
	// MaxTranscriptBytes is how many bytes at most are read from the END of
	// the transcript file (default 2 MiB), so that a huge session file cannot
	// stall the hook.
	MaxTranscriptBytes int64
	// Getenv reads the hook's environment (os.Getenv in `toolgate hook`),
	// where an agent may say what its hook input does not: Claude Code's
	// CLAUDE_PROJECT_DIR. nil reads nothing.
	Getenv func(string) string
	// NoFiles reads no file the input names (transcript_path): set where
	// the input comes from another machine, whose paths name other files
	// here (the server's hook listener, for a caller not on its machine).
	NoFiles bool
	// Open opens a file the input names, for reading; nil opens it with
	// os.OpenFile, non-blocking (a FIFO would otherwise wait for a
	// writer). A server passes one that refuses a file on a file system
	// that may not answer (its handler must not hang on a caller's path).
	Open Opener
}

// Opener opens a file for reading.
type Opener func(path string) (*os.File, error)

// open is Options.Open or the default.
func (o Options) open(path string) (*os.File, error) {
	if o.Open != nil {
		return o.Open(path)
	}
	return openFile(path)
}

func openFile(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

// readable reports whether the file at path, named by the hook input, is
// to be read.
func (o Options) readable(path string) bool {
	return !o.NoFiles && filepath.IsAbs(path)
}

func (o Options) getenv(k string) string {
	if o.Getenv == nil {
		return ""
	}
	return o.Getenv(k)
}

func (o Options) entries() int {
	if o.TranscriptEntries == 0 {
		return DefaultTranscriptEntries
	}
	if o.TranscriptEntries < 0 {
		return 0
	}
	return o.TranscriptEntries
}

func (o Options) maxBytes() int64 {
	if o.MaxTranscriptBytes <= 0 {
		return DefaultMaxTranscriptBytes
	}
	return o.MaxTranscriptBytes
}

// DecisionOf maps a CheckResponse to "allow", "deny" or "ask".
// A nil response, DECISION_UNSPECIFIED or any unknown value gives "deny"
// (fail closed).
func DecisionOf(resp *toolgatev1.CheckResponse) string {
	switch resp.GetDecision() {
	case toolgatev1.Decision_DECISION_ALLOW:
		return Allow
	case toolgatev1.Decision_DECISION_ASK:
		return Ask
	default:
		return Deny
	}
}

// defaultDenyReason is what a deny without a reason says (hookout's).
const defaultDenyReason = "toolgate denied this tool call"
