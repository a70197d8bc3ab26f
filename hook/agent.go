package hook

import (
	"io"

	toolgatev1 "github.com/toolgate/toolgate/gen/toolgate/v1"
	"github.com/toolgate/toolgate/hook/hookout"
)

// Agent is one agent's hook protocol: how its hook input becomes a check,
// and how a decision is written back. `toolgate hook NAME` looks the agent
// up with AgentByName; a new agent is a type implementing Agent and a line
// in agents.
type Agent interface {
	// Name is the agent as named on the command line ("claude-code").
	Name() string
	// Request reads the hook input from r (ParseClaude, ParseGemini,
	// ParseCodex) and builds its check.
	Request(r io.Reader, opt Options) (*toolgatev1.CheckRequest, error)
	// Output writes decision ("allow", "deny" or "ask") and reason in the
	// agent's format for call (the check's tool name and the hook event;
	// each "" when the input could not be read). An unknown decision is
	// written as a deny (fail closed).
	Output(w io.Writer, call hookout.Call, decision, reason string) error
}

// agents are the supported agents, in the order they are listed to users.
var agents = []Agent{claudeAgent{}, geminiAgent{}, codexAgent{}}

// Agents returns the supported agents, in the order they are listed to
// users.
func Agents() []Agent { return append([]Agent(nil), agents...) }

// AgentNames returns the supported agents' names, in the order of Agents.
func AgentNames() []string {
	names := make([]string, len(agents))
	for i, a := range agents {
		names[i] = a.Name()
	}
	return names
}

// AgentByName returns the agent called name, if any.
func AgentByName(name string) (Agent, bool) {
	for _, a := range agents {
		if a.Name() == name {
			return a, true
		}
	}
	return nil, false
}

// claudeAgent is Claude Code's PreToolUse hook. The tool decides how a
// decision is written (ClaudeToolOutput).
type claudeAgent struct{}

var _ Agent = claudeAgent{}

func (claudeAgent) Name() string { return hookout.Claude }

func (claudeAgent) Request(r io.Reader, opt Options) (*toolgatev1.CheckRequest, error) {
	in, err := ParseClaude(r)
	if err != nil {
		return nil, err
	}
	return ClaudeRequest(in, opt)
}

func (claudeAgent) Output(w io.Writer, call hookout.Call, decision, reason string) error {
	return hookout.Write(w, hookout.Claude, call, decision, reason)
}

// geminiAgent is Gemini CLI's BeforeTool hook.
type geminiAgent struct{}

var _ Agent = geminiAgent{}

func (geminiAgent) Name() string { return hookout.Gemini }

func (geminiAgent) Request(r io.Reader, opt Options) (*toolgatev1.CheckRequest, error) {
	in, err := ParseGemini(r)
	if err != nil {
		return nil, err
	}
	return GeminiRequest(in, opt)
}

func (geminiAgent) Output(w io.Writer, call hookout.Call, decision, reason string) error {
	return hookout.Write(w, hookout.Gemini, call, decision, reason)
}

// codexAgent is Codex's PreToolUse and PermissionRequest hooks; the
// event decides how a decision is written.
type codexAgent struct{}

var _ Agent = codexAgent{}

func (codexAgent) Name() string { return hookout.Codex }

func (codexAgent) Request(r io.Reader, opt Options) (*toolgatev1.CheckRequest, error) {
	in, err := ParseCodex(r)
	if err != nil {
		return nil, err
	}
	return CodexRequest(in, opt)
}

func (codexAgent) Output(w io.Writer, call hookout.Call, decision, reason string) error {
	return hookout.Write(w, hookout.Codex, call, decision, reason)
}
