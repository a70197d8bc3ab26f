package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/toolgate/toolgate/engine/knowledge"
	"github.com/toolgate/toolgate/engine/pathcheck"
	"github.com/toolgate/toolgate/engine/rules"
	"github.com/toolgate/toolgate/engine/shell"
)

// resourceNotFile is why a read of an MCP resource is not proven: the
// resource is not a file here, so no read proof speaks about it.
const resourceNotFile = "a resource that is not a plain file:// URI"

// maxCdDirs bounds the directories a line's cd commands may lead to that
// relative words are judged from.
const maxCdDirs = 8

// allowVeto says why an allow rule that matched the call may still not
// allow it, or "". A rule vouches for the commands, paths and URLs the
// user had in mind, not for what a proof refused: an unproven read (a
// secret, a file outside the read roots, a repository elsewhere), or a
// program the call's own words or configuration choose (git --ext-diff,
// npm --script-shell=PROG). Writes are kept from allow rules likewise
// (allowRules).
func (k *check) allowVeto(ctx context.Context) string {
	c := k.c
	if c.unproven == resourceNotFile && len(c.rc.Paths) == 0 {
		// An MCP server's own resource, which it serves as it serves its
		// tools' calls: a rule naming the tool may allow it.
		return ""
	}
	if c.unproven != "" {
		return c.unproven
	}
	a := c.shell
	if a == nil {
		return ""
	}
	for _, cmd := range a.Commands {
		if why := shell.RunsProgram(cmd); why != "" {
			return why
		}
	}
	if a.ReadOnly {
		return "" // its places were judged with its facts
	}
	rs := k.e.newReadScope(ctx, k.req, k.p, c)
	if why := k.e.judgeShellPlaces(rs, c.cwd, c.shellDir, a); why != "" {
		return why
	}
	return k.e.judgeOperands(rs, c.shellDir, a.Commands)
}

// judgeOperands judges every word of commands the shell analysis does not
// know as a read: what a program the table does not list does with its
// operands is not known, so each one that may name a file (operandPaths)
// must be readable locally. Relative words are judged from dir and from
// every directory a cd in the line leads to.
func (e *Engine) judgeOperands(rs *readScope, dir string, cmds []shell.Command) string {
	dirs := []string{dir}
	for _, cmd := range cmds {
		if len(cmd.Argv) == 0 {
			continue
		}
		args := cmd.Argv[1:]
		if name := cmd.Argv[0]; name == "cd" || name == "pushd" {
			to := "~" // cd alone goes home
			if len(args) > 0 {
				to = args[len(args)-1]
			}
			if to == "-" || strings.HasPrefix(to, "-") && len(args) == 1 {
				return "changes to a directory known only at run time, from which its relative words are not judged"
			}
			if len(dirs) >= maxCdDirs {
				return "changes directory too often for its relative words to be judged"
			}
			to = expandHome(to, e.home)
			var more []string
			for _, d := range dirs {
				// Where cd goes is listed and read from: a read itself.
				if why := rs.judge(d, to); why != "" {
					return "cd: " + why
				}
				if filepath.IsAbs(to) {
					more = append(more, to)
					break
				}
				more = append(more, d+"/"+to)
			}
			dirs = append(dirs, more...)
			continue
		}
		for _, w := range args {
			for _, o := range operandPaths(w) {
				v := o.path
				if v == "" || v == "/dev/null" {
					continue
				}
				for _, d := range dirs {
					if o.ifExists && !e.names(rs.proofs.Look(), d, v) {
						continue
					}
					if why := rs.judge(d, v); why != "" {
						return fmt.Sprintf("%s: %s", cmd.Argv[0], why)
					}
					if filepath.IsAbs(expandHome(v, e.home)) {
						break
					}
				}
			}
		}
	}
	return ""
}

// operandPath is a word, or a part of one, that may name a file.
type operandPath struct {
	path string
	// ifExists: one reading of the word among others, judged only where
	// it names something (a bundle's later letters: in -Isrc/include,
	// "/include" names nothing, and no program reads it).
	ifExists bool
}

// operandPaths are the paths the word w may name for a program whose
// options toolgate does not know: an operand, and its value after '='
// (curl -F name=@FILE); an option's value after '='; for a short-option
// word, what follows its first letter (-fFILE), and what follows each
// later letter of its leading run if it names something (-sK/etc/x);
// and in each of these the file after an '@' (curl -d@FILE, gcc @FILE).
func operandPaths(w string) []operandPath {
	var vs []operandPath
	if _, v, ok := strings.Cut(w, "="); ok {
		vs = append(vs, operandPath{path: v})
	}
	switch {
	case !strings.HasPrefix(w, "-"):
		vs = append(vs, operandPath{path: w})
	case !strings.HasPrefix(w, "--"):
		for i := 2; i < len(w); i++ {
			vs = append(vs, operandPath{w[i:], i > 2})
			if c := w[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
				break // the run of letters ended: the value began here or before
			}
		}
	}
	out := vs
	for _, v := range vs {
		for rest := v.path; ; {
			_, after, ok := strings.Cut(rest, "@")
			if !ok {
				break
			}
			out = append(out, operandPath{after, v.ifExists})
			rest = after
		}
	}
	return out
}

// names says whether the word v, from dir, names something on disk (a
// link too), or is a pattern, which may. It looks through the check's look
// lk: a check whose files this server does not see cannot tell, so every
// word counts as naming something.
func (e *Engine) names(lk *pathcheck.Look, dir, v string) bool {
	p := expandHome(v, e.home)
	if knowledge.HasMeta(p) {
		return true
	}
	if !filepath.IsAbs(p) {
		p = dir + "/" + p // not cleaned: the kernel resolves links before ..
	}
	_, err := lk.Lstat(p)
	return err == nil || !errors.Is(err, fs.ErrNotExist)
}

// vetoWarnings are the warnings about a policy's allow rules that match
// calls allowVeto keeps from them: rules over programs with options that
// run another program, and rules over reads, which allow nothing the read
// proofs do not (a read outside the read roots goes to the classifier
// whatever the rules; read_roots is how a policy widens them).
func vetoWarnings(policy string, set *rules.Set, vocab *Vocabulary) []string {
	var out []string
	for _, w := range set.ProbeWarnings(runProbes) {
		out = append(out, fmt.Sprintf("policy %s: allow rule %s does not allow every call it matches: %s", policy, w.Rule, w.Problem))
	}
	for i, r := range set.Allows() {
		// Without a path pattern (Read, ReadMcpResourceTool) a rule still
		// allows what is no file: an MCP server's resources.
		paths := r.HasSpecifier && r.Specifier != "*"
		if k := vocab.Kind(r.Tool); paths && (r.Tool == "Read" || k == KindRead || k == KindSearch) {
			out = append(out, fmt.Sprintf("policy %s: allow rule %s allows nothing: allow[%d]: reads and searches are allowed by the read proofs alone (inside the project or the read roots, and not secret-shaped); add directories to read_roots instead", policy, r.Text, i))
		}
	}
	return out
}

// runProbes are shell.RunOptions as probes for rules.
func runProbes(prefix string) []rules.Probe {
	var out []rules.Probe
	for _, o := range shell.RunOptions(prefix) {
		out = append(out, rules.Probe{Text: o.Spelling, Why: o.Why})
	}
	return out
}
