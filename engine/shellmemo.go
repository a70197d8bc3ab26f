package engine

import (
	"context"

	"github.com/toolgate/toolgate/engine/rules"
	"github.com/toolgate/toolgate/engine/shell"
)

// Bounds of the shell analysis memo: agents repeat their commands (git
// status, the test command), and a short command's analysis is worth
// keeping; a long one, or one whose analysis is large (hundreds of
// commands in a line), is analysed each time. So the memo holds at most
// maxAnalyses × maxAnalysisBytes, about 8 MiB however hostile the lines
// (10 MiB measured at worst: the estimate leaves out slices' spare room).
const (
	maxAnalyses      = 1024
	maxAnalysisKey   = 1024
	maxAnalysisBytes = 8 << 10
)

// analysis is what a command line's text alone determines: the shell
// analysis, and the subjects Bash rules match the line against.
type analysis struct {
	shell.Analysis
	subjects *rules.Subjects
}

// analyze is shell.AnalyzeContext, remembered by command text with the
// rule subjects of the call it makes (rules.Call's Commands, Raw and
// Unparsed, as analyseShell sets them). It is safe to remember: both are
// pure functions of the text (they read no file, no environment and no
// clock; what a command's paths are on disk is judged afresh by every
// check). An analysis that ctx cut short is not kept, since it depends on
// the check's deadline. Analyses are shared: nothing may change one.
func (e *Engine) analyze(ctx context.Context, cmd string) *analysis {
	if len(cmd) <= maxAnalysisKey {
		if a, ok := e.analyses.Get(cmd); ok {
			return a
		}
	}
	a := &analysis{Analysis: shell.AnalyzeContext(ctx, cmd)}
	if len(cmd) > maxAnalysisKey {
		// Never kept: the subjects are left to the rules, which build
		// them only if a Bash deny or ask rule asks.
		return a
	}
	rc := rules.Call{Raw: cmd, Unparsed: a.ParseErr != nil}
	for _, sc := range a.Commands {
		rc.Commands = append(rc.Commands, rules.Command{Env: sc.Env, Text: sc.Text})
	}
	a.subjects = rules.ShellSubjects(&rc)
	if ctx.Err() == nil && a.bytes(cmd) <= maxAnalysisBytes {
		e.analyses.Put(cmd, a)
	}
	return a
}

// bytes estimates the memory a kept analysis of cmd holds, its key
// included; strings that share the key's memory are counted again, which
// only errs on the safe side.
func (a *analysis) bytes(cmd string) int {
	const word = 16 // a string or slice header, roughly
	strs := func(ss []string) int {
		n := word
		for _, s := range ss {
			n += word + len(s)
		}
		return n
	}
	n := len(cmd) + a.subjects.Bytes() + len(a.Reason) + strs(a.Reads) + strs(a.Writes)
	for _, c := range a.Commands {
		n += 4*word + len(c.Text) + strs(c.Env) + strs(c.Argv)
	}
	for _, t := range a.Trees {
		n += 4*word + len(t.Path) + strs(t.SkipDirs) + strs(t.Names)
	}
	for _, g := range a.Git {
		n += 4*word + strs(g.Names) + strs(g.Pathspecs)
	}
	for _, t := range a.Toolchains {
		n += 3*word + len(t.Family) + len(t.Program) + len(t.Dir)
	}
	return n
}
