// Package engine decides whether an AI coding agent's tool call may run.
//
// It is pure Go: no gRPC, no proto. The same engine runs behind the gRPC
// server, inside the CLI, and in tests. A check passes through stages in
// order (deny rules, plan mode, ask rules, bypass mode, safe tools,
// accept-edits, shell analysis, allow rules, mode, classifier); the first
// stage that decides wins.
package engine

import "fmt"

// Decision is the verdict on a tool call. The zero value is not a verdict.
type Decision int

// Decisions.
const (
	DecisionUnspecified Decision = iota
	Allow
	Deny
	Ask
)

func (d Decision) String() string {
	switch d {
	case Allow:
		return "allow"
	case Deny:
		return "deny"
	case Ask:
		return "ask"
	}
	return "unspecified"
}

// Source is the stage that decided.
type Source int

// Sources, numbered like the API's DecisionSource.
const (
	SourceUnspecified Source = iota
	SourceSafeTool
	SourceAcceptEdits
	SourceRule
	SourceCommandAnalysis
	SourceMode
	SourceClassifier
	SourceCache
	SourceClassifierUnavailable
	SourceNoClassifier
	// SourceFileSystem: the check's local part did not finish within the
	// file-system deadline, or found every worker held by stalled calls;
	// it is answered Ask, never Allow (see fsUnanswered).
	SourceFileSystem
	// SourceUpstreamUnavailable: the upstream toolgate that classifies for
	// a local server was unreachable or failed; it fails closed, as a
	// failing classifier does.
	SourceUpstreamUnavailable
	// SourceApproval: an approver answered an unattended check's
	// question (Result.Approval says who), or a rule learned from such an
	// answer matched.
	SourceApproval
	// SourceApprovalTimeout: nobody answered before the approval's
	// deadline (the policy's outcome) or the call's own (Deny).
	SourceApprovalTimeout
	// SourceApprovalUnavailable: the question was to be queued for an
	// approver, but there is no approval queue or it failed; Deny.
	SourceApprovalUnavailable
)

var sourceNames = [...]string{
	SourceUnspecified:           "unspecified",
	SourceSafeTool:              "safe_tool",
	SourceAcceptEdits:           "accept_edits",
	SourceRule:                  "rule",
	SourceCommandAnalysis:       "command_analysis",
	SourceMode:                  "mode",
	SourceClassifier:            "classifier",
	SourceCache:                 "cache",
	SourceClassifierUnavailable: "classifier_unavailable",
	SourceNoClassifier:          "no_classifier",
	SourceFileSystem:            "file_system",
	SourceUpstreamUnavailable:   "upstream_unavailable",
	SourceApproval:              "approval",
	SourceApprovalTimeout:       "approval_timeout",
	SourceApprovalUnavailable:   "approval_unavailable",
}

// ParseSource is the Source a name from String names.
func ParseSource(name string) (Source, bool) {
	for i, n := range sourceNames {
		if n == name && i != int(SourceUnspecified) {
			return Source(i), true
		}
	}
	return SourceUnspecified, false
}

func (s Source) String() string {
	if s < 0 || int(s) >= len(sourceNames) {
		return fmt.Sprintf("source(%d)", int(s))
	}
	return sourceNames[s]
}

// Mode is the agent's permission mode. The zero value means auto.
type Mode int

// Modes.
const (
	// ModeUnspecified is treated as ModeAuto.
	ModeUnspecified Mode = iota
	// ModeAuto decides locally where it safely can and asks the classifier
	// for the rest.
	ModeAuto
	// ModeDefault asks the user for anything not allowed by a rule or a
	// read-only fast path, edits included.
	ModeDefault
	// ModeAcceptEdits is ModeDefault plus the accept-edits fast path.
	ModeAcceptEdits
	// ModePlan is read-only: safe tools run, everything else is denied.
	ModePlan
	// ModeBypass allows everything that no deny or ask rule catches.
	ModeBypass
)

var modeNames = [...]string{
	ModeUnspecified: "auto",
	ModeAuto:        "auto",
	ModeDefault:     "default",
	ModeAcceptEdits: "accept_edits",
	ModePlan:        "plan",
	ModeBypass:      "bypass",
}

func (m Mode) String() string {
	if m < 0 || int(m) >= len(modeNames) {
		return fmt.Sprintf("mode(%d)", int(m))
	}
	return modeNames[m]
}

// Role is who produced a transcript entry.
type Role int

// Roles.
const (
	RoleUnspecified Role = iota
	RoleUser
	RoleAssistant
	RoleToolResult
	RoleSystem
)

// ToolCall is the action an agent wants to take.
type ToolCall struct {
	// Name as the agent spells it.
	Name string
	// Input is the tool's arguments, decoded from JSON (map values are
	// string, float64, bool, nil, []any or map[string]any).
	Input map[string]any
}

// TranscriptEntry is one turn of the session.
type TranscriptEntry struct {
	Role     Role
	Text     string
	ToolCall *ToolCall
}

// RuleSet holds rule strings in the permission-rule syntax.
type RuleSet struct {
	Allow []string
	Ask   []string
	Deny  []string
}

// Request is one check.
type Request struct {
	RequestID             string
	SessionID             string
	Tool                  ToolCall
	WorkingDirectory      string
	AdditionalDirectories []string
	Mode                  Mode
	Transcript            []TranscriptEntry
	// Policy names a policy; empty means DefaultPolicy.
	Policy string
	// Rules add to the policy's rules; they never weaken them.
	Rules RuleSet
	// Files says whose files the paths name (see Files): no stage proves
	// anything from this machine's disk for a caller that does not share
	// it.
	Files Files
	// Unattended says nobody is at the agent's terminal to answer an Ask:
	// the policy's Unattended.OnAsk decides what an Ask becomes (see
	// unattendedStep).
	Unattended bool
}

// Result is the engine's answer to one check.
type Result struct {
	Decision Decision
	Source   Source
	Reason   string
	// MatchedRule is the rule text when Source is SourceRule.
	MatchedRule string
	// Kind is the canonical kind of the tool.
	Kind Kind
	// Policy is the name of the policy applied.
	Policy string
	// PolicyVersion is the content hash of the policy set applied
	// ("sha256:..."); empty when unknown.
	PolicyVersion string
	// Classifier describes the side-query when the classifier was asked.
	Classifier *ClassifierDetails
	// FilesUnseen says why no stage proved anything from the disk: the
	// caller's files are not the ones this server sees. "" when they are.
	FilesUnseen string
	// Approval describes the approval an unattended check's question
	// became; nil when there was none.
	Approval *ApprovalInfo
}
