package engine

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/engine/knowledge"
	"github.com/toolgate/toolgate/engine/pathcheck"
	"github.com/toolgate/toolgate/engine/rules"
)

// DefaultPolicy is the policy used when a request names none.
const DefaultPolicy = "default"

// PolicySpec is a policy as configured.
type PolicySpec struct {
	// Permissions are the deterministic rules.
	Permissions RuleSet
	// SafeTools are extra tool names that are read-only (for example an
	// MCP server's search tool). They may not name a built-in tool.
	SafeTools []string
	// ToolAliases add names to the tool vocabulary.
	ToolAliases map[string]Kind
	// ProtectedPaths add to the built-in protected-path patterns; they are
	// never removed.
	ProtectedPaths []string
	// ReadRoots add to the directories outside the project that may be
	// read locally (absolute, or ~/ for the agent user's home); see
	// knowledge.DefaultReadRoots.
	ReadRoots []string
	// DisableAcceptEdits turns the accept-edits fast path off.
	DisableAcceptEdits bool
	// RefuseClientAllowRules ignores the allow rules a request brings
	// (Request.Rules.Allow), with a note in the reason; its deny and ask
	// rules still apply. A policy served by a central toolgate sets it
	// unless it lets clients allow.
	RefuseClientAllowRules bool
	// RefuseClientBypass decides a request in bypass mode as in auto
	// mode, with a note in the reason: the mode is the client's word,
	// and under a policy that refuses client allow rules it would
	// otherwise allow what the policy does not. A policy served by a
	// central toolgate sets it unless it lets clients bypass.
	RefuseClientBypass bool
	// Unattended says what becomes of an unattended check's Ask.
	Unattended UnattendedSpec
}

// UnattendedSpec says what an Ask becomes for a check nobody can answer
// (Request.Unattended).
type UnattendedSpec struct {
	// OnAsk is Deny (the zero value means Deny) or Ask (the client is
	// left to deal with the question, as for an attended check).
	OnAsk Decision
	// Approval, when set, queues the question for an approver instead
	// (on_ask: approve); OnAsk is then ignored.
	Approval *ApprovalSpec
}

// policy is a compiled PolicySpec.
type policy struct {
	name        string
	rules       *rules.Set
	warnings    []string
	safe        map[string]bool
	vocab       *Vocabulary
	protected   *pathcheck.Patterns
	acceptEdits bool
	readRoots   knowledge.Roots
	// refuseClientAllow: the request's allow rules are ignored.
	refuseClientAllow bool
	// refuseClientBypass: bypass mode is decided as auto mode.
	refuseClientBypass bool
	// unattendedOnAsk is what an unattended check's Ask becomes: Deny or
	// Ask.
	unattendedOnAsk Decision
	// approval is set when unattended questions are queued for an
	// approver.
	approval *ApprovalSpec
}

func compilePolicy(name string, spec PolicySpec, home string) (*policy, error) {
	p := &policy{name: name, safe: map[string]bool{}, acceptEdits: !spec.DisableAcceptEdits, refuseClientAllow: spec.RefuseClientAllowRules,
		refuseClientBypass: spec.RefuseClientBypass}
	switch spec.Unattended.OnAsk {
	case DecisionUnspecified, Deny:
		p.unattendedOnAsk = Deny
	case Ask:
		p.unattendedOnAsk = Ask
	default:
		return nil, fmt.Errorf("unattended.on_ask: must be deny or ask, got %s", spec.Unattended.OnAsk)
	}
	if a := spec.Unattended.Approval; a != nil {
		c, err := a.compile()
		if err != nil {
			return nil, err
		}
		p.approval = &c
		// An unqueued question is denied, whatever on_ask said.
		p.unattendedOnAsk = Deny
	}
	set, warns, err := rules.Compile(spec.Permissions.Deny, spec.Permissions.Ask, spec.Permissions.Allow)
	if err != nil {
		return nil, fmt.Errorf("permissions.%w", err)
	}
	p.rules = set
	for _, w := range warns {
		p.warnings = append(p.warnings, fmt.Sprintf("policy %s: allow rule %s is not applied in auto mode: %s", name, w.Rule, w.Problem))
	}
	if p.vocab, err = NewVocabulary(spec.ToolAliases); err != nil {
		return nil, fmt.Errorf("tool_aliases: %w", err)
	}
	p.warnings = append(p.warnings, vetoWarnings(name, set, p.vocab)...)
	p.warnings = append(p.warnings, unknownToolWarnings(name, spec, p.vocab)...)
	for i, t := range spec.SafeTools {
		if t == "" {
			return nil, fmt.Errorf("safe_tools[%d]: empty name", i)
		}
		if k := p.vocab.Kind(t); k != KindUnknown && !k.IsSafe() {
			return nil, fmt.Errorf("safe_tools[%d]: %q is a %s tool and cannot be made safe", i, t, k)
		}
		p.safe[t] = true
	}
	// Compiled once here: a bad pattern fails at load, and checks do not
	// compile them again.
	if p.protected, err = pathcheck.CompilePatterns(slices.Concat(pathcheck.DefaultProtected, spec.ProtectedPaths)); err != nil {
		return nil, fmt.Errorf("protected_paths: %w", err)
	}
	for i, r := range spec.ReadRoots {
		if !filepath.IsAbs(r) && !strings.HasPrefix(r, "~/") {
			return nil, fmt.Errorf("read_roots[%d]: %q must be absolute or start with ~/", i, r)
		}
		if knowledge.SecretPath(r, home) || broadSearch(filepath.Clean(r), home) || filepath.Clean(r) == "/" {
			return nil, fmt.Errorf("read_roots[%d]: %q holds secrets or credential stores and cannot be a read root", i, r)
		}
	}
	p.readRoots = knowledge.CompileReadRoots(spec.ReadRoots, home)
	return p, nil
}

// unknownToolWarnings reports the rules whose tool is neither a kind
// (Bash, Read, Edit...), an MCP server's, a name in the vocabulary, nor
// one of the policy's safe tools. Such a rule matches only a tool of that
// exact name: Bsh(rm -rf /) loads and protects nothing. A warning, not an
// error: agents gain tools before toolgate learns their names.
func unknownToolWarnings(policy string, spec PolicySpec, v *Vocabulary) []string {
	var out []string
	for _, l := range []struct {
		name  string
		rules []string
	}{{"deny", spec.Permissions.Deny}, {"ask", spec.Permissions.Ask}, {"allow", spec.Permissions.Allow}} {
		for _, text := range l.rules {
			r, err := rules.Parse(text)
			if err != nil || v.Known(r.Tool) || strings.HasPrefix(r.Tool, "mcp__") || slices.Contains(spec.SafeTools, r.Tool) {
				continue
			}
			hint := ""
			if n := v.Nearest(r.Tool); n != "" {
				hint = fmt.Sprintf(" (did you mean %q?)", n)
			}
			out = append(out, fmt.Sprintf("policy %s: %s rule %s names the tool %q, which toolgate does not know%s: it matches only a tool called exactly that", policy, l.name, r.Text, r.Tool, hint))
		}
	}
	return out
}
