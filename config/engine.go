package config

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/engine"
)

// Runtime is what an engine needs besides the config file: what the process
// that runs it supplies.
type Runtime struct {
	// Home is the agents' home directory, for "~" in rules; empty means
	// "~/" rules match at any depth.
	Home string
	// Classifier decides what the local stages leave open; nil means none.
	Classifier engine.Classifier
	// Approver takes unattended questions to approvers (nil: none).
	Approver engine.Approver
	// OnClassifierUnavailable is the decision when the classifier fails.
	OnClassifierUnavailable engine.Decision
	// OwnFiles are toolgate's files besides the config and the files it
	// imports (a TLS certificate, a client CA, the audit log, the
	// classifier's dump file): no agent may change them.
	// SecretFiles (a TLS key, the tokens) no agent may read or change.
	OwnFiles, SecretFiles []string
	// OwnPatterns are absolute globs, in their last component only, of
	// more of toolgate's files (the audit log's backups): guarded like
	// OwnFiles.
	OwnPatterns []string
	// Pool runs the checks' file-system work (see engine.Config.Pool);
	// nil runs it inline, for one-shot tools. A server passes one pool to
	// every engine it builds.
	Pool *engine.Pool
}

// NewEngine compiles the policies into an engine. It is the one place an
// engine.Config is made, so that serve, a reload, eval, validate and the
// benchmarks decide alike, and every engine keeps the agents off toolgate's
// own files.
// Errors name the file and the field. The warnings are the removals of
// built-in rules, the engine's (dangerous rules) and any own file no rule
// can name.
func (c *Config) NewEngine(rt Runtime) (*engine.Engine, []string, error) {
	own := slices.Concat(c.files, rt.OwnFiles, rt.SecretFiles)
	guard, warnings := selfProtection(own, rt.SecretFiles)
	policies := c.enginePolicies()
	for name, p := range policies {
		p.Permissions.Deny = append(slices.Clip(p.Permissions.Deny), guard...)
		policies[name] = p
	}
	_, version, err := c.Served()
	if err != nil {
		return nil, nil, err
	}
	eng, err := engine.New(engine.Config{
		Version:                 version,
		Policies:                policies,
		Classifier:              rt.Classifier,
		Approver:                rt.Approver,
		OnClassifierUnavailable: rt.OnClassifierUnavailable,
		Home:                    rt.Home,
		Guarded:                 absPaths(own),
		GuardedPatterns:         rt.OwnPatterns,
		Pool:                    rt.Pool,
		FS:                      c.fs,
	})
	if err != nil {
		name := c.name
		if name == "" {
			name = "(config)"
		}
		return nil, nil, inFile(name, err)
	}
	return eng, slices.Concat(c.layerWarnings(), warnings, eng.Warnings()), nil
}

// enginePolicies converts the policies to the engine's specs.
func (c *Config) enginePolicies() map[string]engine.PolicySpec {
	out := make(map[string]engine.PolicySpec, len(c.Policies))
	for name, p := range c.Policies {
		aliases := make(map[string]engine.Kind, len(p.ToolAliases))
		for k, v := range p.ToolAliases {
			aliases[k] = engine.Kind(v)
		}
		out[name] = engine.PolicySpec{
			Permissions:        engine.RuleSet{Allow: p.Permissions.Allow, Ask: p.Permissions.Ask, Deny: p.Permissions.Deny},
			SafeTools:          p.SafeTools,
			ToolAliases:        aliases,
			ProtectedPaths:     p.ProtectedPaths,
			ReadRoots:          p.ReadRoots,
			DisableAcceptEdits: p.AcceptEdits != nil && !*p.AcceptEdits,
			// A config file's policy lets clients allow unless it says
			// otherwise; a served one says so explicitly (Served).
			RefuseClientAllowRules: p.ClientAllowRules != nil && !*p.ClientAllowRules,
			// Likewise bypass mode; a served policy that does not say
			// refuses it (FromServed).
			RefuseClientBypass: p.ClientBypass != nil && !*p.ClientBypass,
			Unattended:         engine.UnattendedSpec{OnAsk: p.Unattended.onAsk(), Approval: p.Unattended.approval()},
		}
	}
	return out
}

// selfProtection are deny rules that keep the guarded agents away from
// toolgate's own files: no edits of any (hot reload would apply an edit of
// the config; a swapped certificate or token file would let others in),
// and no reads of the secrets. The engine's guarded files (Guarded) also
// keep shell commands from moving, linking or deleting them. A file whose
// name a rule pattern cannot spell is a warning.
func selfProtection(own, secret []string) (rules, warnings []string) {
	add := func(tool string, files []string) {
		for _, f := range files {
			if f == "" {
				continue
			}
			abs, err := filepath.Abs(f)
			if err != nil || strings.ContainsAny(abs, "*?[]{}\\()") {
				warnings = append(warnings, fmt.Sprintf("cannot protect toolgate's file %s from the agents by rule: its name has pattern characters", f))
				continue
			}
			rules = append(rules, tool+"(/"+abs+")")
			if real, err := filepath.EvalSymlinks(abs); err == nil && real != abs && !strings.ContainsAny(real, "*?[]{}\\()") {
				rules = append(rules, tool+"(/"+real+")")
			}
		}
	}
	add("Edit", own)
	add("Read", secret)
	return rules, warnings
}

// absPaths makes the non-empty paths absolute.
func absPaths(files []string) []string {
	var out []string
	for _, f := range files {
		if f == "" {
			continue
		}
		if abs, err := filepath.Abs(f); err == nil {
			out = append(out, abs)
		}
	}
	return out
}
