package rules

import (
	"fmt"
	"strings"
)

// Probe is a command line's tail worth trying against allow rules: Text
// follows the fixed words a rule's command starts with ("--ext-diff=x"
// after "git diff"), and Why says what it does.
type Probe struct {
	Text, Why string
}

// ProbeWarnings warns about the allow rules over shell commands that
// match a probe: probes(prefix) gives the probes for the fixed words a
// rule's command starts with (its program and subcommand). The caller
// passes options that make a program run another, which allow rules do
// not allow (toolgate's engine judges each call): the warning tells the
// user that such calls go to the classifier although the rule matches
// them. Rules that match every command are left out: they are not applied
// in auto mode at all (Warnings).
func (s *Set) ProbeWarnings(probes func(prefix string) []Probe) []Warning {
	if s == nil {
		return nil
	}
	var out []Warning
	for i, r := range s.allow {
		m := r.m
		if m == nil || m.cmd == nil || m.any || !(m.fam == famBash || m.fam == famLiteral && shellToolNames[m.name]) {
			continue
		}
		if probe, why := m.cmd.probe(probes); probe != "" {
			out = append(out, Warning{Rule: r.Text, Problem: fmt.Sprintf("allow[%d]: it matches %q (%s); calls with options that run another program are not allowed by allow rules", i, probe, why)})
		}
	}
	return out
}

// probe returns the first command line built from probes that the pattern
// matches, and why it is worth a warning.
func (p *cmdPattern) probe(probes func(prefix string) []Probe) (string, string) {
	if len(p.parts) < 2 {
		return "", "" // an exact command: no other words to add
	}
	head := p.parts[0]
	words := strings.Fields(head)
	if !strings.HasSuffix(head, " ") && len(words) > 0 {
		words = words[:len(words)-1] // a word the '*' completes
	}
	for len(words) > 0 && isAssignment(words[0]) {
		words = words[1:]
	}
	if len(words) == 0 {
		return "", ""
	}
	sep := ""
	if !strings.HasSuffix(head, " ") {
		sep = " "
	}
	tail := strings.Join(p.parts[1:], "x")
	for _, pr := range probes(strings.Join(words, " ")) {
		line := head + sep + pr.Text + tail
		if p.match(line, false) {
			return line, pr.Why
		}
	}
	return "", ""
}

// Allows returns the set's allow rules, in order.
func (s *Set) Allows() []Rule {
	if s == nil {
		return nil
	}
	return append([]Rule(nil), s.allow...)
}
