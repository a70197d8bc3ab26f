// Package hookout writes decisions in the agents' hook output formats. It
// is the part of the hook adapters that imports neither protobuf nor gRPC,
// so that toolgate-hook, which links it, starts in little more than a
// bare Go program's time; package hook builds on it.
//
// Everything here fails closed: an unknown decision renders as deny.
package hookout

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Decisions as rendered to agents.
const (
	Allow = "allow"
	Deny  = "deny"
	Ask   = "ask"
)

// The agents, by their command-line names, in the order they are listed
// to users.
const (
	Claude = "claude-code"
	Gemini = "gemini-cli"
	Codex  = "codex"
)

// AgentNames returns the supported agents' names, in the order they are
// listed to users.
func AgentNames() []string { return []string{Claude, Gemini, Codex} }

// Known reports whether agent is a supported agent's name.
func Known(agent string) bool {
	switch agent {
	case Claude, Gemini, Codex:
		return true
	}
	return false
}

// Call is what a decision is written for, as far as the hook input could
// be read: the check's tool name, and the hook event that asked (the
// input's hook_event_name). Either is "" when not known.
type Call struct {
	Tool  string
	Event string
}

// Peek reads the tool name and the event from a hook input, for answering
// it when it cannot be checked; what it cannot read is "".
func Peek(input []byte) Call {
	var in struct {
		Tool  string `json:"tool_name"`
		Event string `json:"hook_event_name"`
	}
	_ = json.Unmarshal(input, &in)
	return Call{Tool: in.Tool, Event: in.Event}
}

// Write writes decision and reason in agent's format for call. An unknown
// agent is an error; an unknown decision is written as a deny.
func Write(w io.Writer, agent string, call Call, decision, reason string) error {
	switch agent {
	case Claude:
		return ClaudeToolOutput(w, call.Tool, decision, reason)
	case Gemini:
		return GeminiOutput(w, decision, reason)
	case Codex:
		if call.Event == CodexPermissionRequest {
			return CodexPermissionOutput(w, decision, reason)
		}
		return CodexOutput(w, decision, reason)
	}
	return fmt.Errorf("unknown agent %q", agent)
}

// defaultDenyReason stands in for an empty reason on a deny: Codex ignores
// a deny without a reason (and runs the tool), and the other agents show
// the reason to the user and the model, who should learn who refused.
const defaultDenyReason = "toolgate denied this tool call"

func denyReason(reason string) string {
	if strings.TrimSpace(reason) == "" {
		return defaultDenyReason
	}
	return reason
}

// preToolUseOutput is the PreToolUse hook output that Claude Code and Codex
// share.
type preToolUseOutput struct {
	HookSpecificOutput preToolUseDecision `json:"hookSpecificOutput"`
}

type preToolUseDecision struct {
	HookEventName            string `json:"hookEventName"`
	PermissionDecision       string `json:"permissionDecision"`
	PermissionDecisionReason string `json:"permissionDecisionReason"`
}

func writePreToolUse(w io.Writer, decision, reason string) error {
	return writeJSON(w, preToolUseOutput{HookSpecificOutput: preToolUseDecision{
		HookEventName:            "PreToolUse",
		PermissionDecision:       decision,
		PermissionDecisionReason: reason,
	}})
}

// ClaudeOutput writes the PreToolUse hook output for decision ("allow",
// "deny" or "ask") and reason, as one JSON line. Any other decision is
// written as "deny" (fail closed) with the bad value named in the reason.
// A deny always carries a reason (see denyReason).
func ClaudeOutput(w io.Writer, decision, reason string) error {
	switch decision {
	case Allow, Ask:
	case Deny:
		reason = denyReason(reason)
	default:
		reason = fmt.Sprintf("toolgate: invalid decision %q: %s", decision, reason)
		decision = Deny
	}
	return writePreToolUse(w, decision, reason)
}

// ClaudeAsksUser reports whether the point of a Claude Code tool is a
// question to the user: its permission prompt is the question itself (the
// plan to approve, the choices to answer), so a hook's allow would skip
// what the user is there to say.
func ClaudeAsksUser(tool string) bool {
	return tool == "ExitPlanMode" || tool == "AskUserQuestion"
}

// ClaudeToolOutput is ClaudeOutput for a call of tool: for a tool that asks
// the user (ClaudeAsksUser) only a deny is written, and anything else
// writes nothing, which leaves the call to Claude Code's own prompt.
func ClaudeToolOutput(w io.Writer, tool, decision, reason string) error {
	if ClaudeAsksUser(tool) && decision != Deny {
		return nil
	}
	return ClaudeOutput(w, decision, reason)
}

// GeminiOutput writes the BeforeTool hook output: {"decision":"allow"} or
// {"decision":"deny","reason":...}. "ask" cannot be expressed in Gemini
// CLI's BeforeTool output and is written as a deny whose reason asks for
// user approval; any other unknown decision is written as a deny too.
func GeminiOutput(w io.Writer, decision, reason string) error {
	switch decision {
	case Allow:
		return writeJSON(w, geminiOutput{Decision: Allow, Reason: reason})
	case Deny:
		reason = denyReason(reason)
	case Ask:
		reason = "toolgate: this tool call needs the user's approval, which a Gemini CLI hook cannot request; ask the user to run it or to allow it: " + reason
	default:
		reason = fmt.Sprintf("toolgate: invalid decision %q: %s", decision, reason)
	}
	return writeJSON(w, geminiOutput{Decision: Deny, Reason: reason})
}

type geminiOutput struct {
	Decision string `json:"decision"`
	Reason   string `json:"reason,omitempty"`
}

// CodexOutput writes the Codex PreToolUse hook output: nothing for "allow"
// (Codex's own approval policy and sandbox still apply, and its
// PermissionRequest hook approves), a deny with the reason for "deny", and
// a deny asking for the user's approval for "ask", which a PreToolUse hook
// cannot express (Codex runs the call on an "ask"). Any other decision is
// written as a deny that names it.
func CodexOutput(w io.Writer, decision, reason string) error {
	switch decision {
	case Allow:
		return nil
	case Deny:
		reason = denyReason(reason)
	case Ask:
		reason = "toolgate: this tool call needs the user's approval, which a Codex PreToolUse hook cannot request; ask the user to run it or to allow it: " + reason
	default:
		reason = fmt.Sprintf("toolgate: invalid decision %q: %s", decision, reason)
	}
	return writePreToolUse(w, Deny, reason)
}

// CodexPermissionRequest is the hook event Codex runs when a call needs
// approval (its approval policy is not "never" and the call may not run
// without asking), before it asks the user or its reviewer.
const CodexPermissionRequest = "PermissionRequest"

// CodexPermissionOutput writes the Codex PermissionRequest hook output:
// an approval for "allow", a refusal with the reason for "deny", and
// nothing for "ask", which leaves the call to Codex's own approval flow
// (the user, or the reviewer Codex is configured with): the call was going
// to be asked about, and without a hook's verdict it still is. Any other
// decision is written as a refusal that names it.
func CodexPermissionOutput(w io.Writer, decision, reason string) error {
	d := permissionDecision{Behavior: Deny}
	switch decision {
	case Allow:
		d.Behavior = Allow
	case Ask:
		return nil
	case Deny:
		d.Message = denyReason(reason)
	default:
		d.Message = fmt.Sprintf("toolgate: invalid decision %q: %s", decision, reason)
	}
	return writeJSON(w, permissionOutput{HookSpecificOutput: permissionHookOutput{
		HookEventName: CodexPermissionRequest,
		Decision:      d,
	}})
}

// permissionOutput is Codex's PermissionRequest hook output. Codex refuses
// members it does not know, so only these are written.
type permissionOutput struct {
	HookSpecificOutput permissionHookOutput `json:"hookSpecificOutput"`
}

type permissionHookOutput struct {
	HookEventName string             `json:"hookEventName"`
	Decision      permissionDecision `json:"decision"`
}

type permissionDecision struct {
	Behavior string `json:"behavior"`
	Message  string `json:"message,omitempty"`
}

func writeJSON(w io.Writer, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	data = append(data, '\n')
	_, err = w.Write(data)
	return err
}
