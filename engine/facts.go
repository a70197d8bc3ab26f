package engine

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/toolgate/toolgate/engine/knowledge"
	"github.com/toolgate/toolgate/engine/pathcheck"
	"github.com/toolgate/toolgate/engine/rules"
	"github.com/toolgate/toolgate/engine/shell"
)

// call holds the facts about one request, found once for all stages:
// what it reads, writes and runs, after resolution. analyse builds it and
// decides nothing; the stages (stages.go) decide from it.
type call struct {
	name string
	kind Kind
	cwd  string
	rc   rules.Call // what rules see
	// unproven says why the call's reads are not proven safe (a target
	// outside the read roots, a secret-shaped name, a field that is not a
	// string); "" when they are. For a shell command it also covers where
	// it runs and which repository its git reads.
	unproven string
	shell    *shell.Analysis // shell kinds with a command, as the shell analysis found it
	subjects *rules.Subjects // the rule subjects of rc's Commands, Raw and Unparsed, when known
	shellDir string          // where the shell command runs
	edits    writeFacts      // edit kinds: the targets
	writes   writeFacts      // shell kinds: the files the command writes
	// guarded says why the call may change one of toolgate's own files,
	// and wipe why it deletes a root, home or top-level directory: both
	// are denied in every mode.
	guarded, wipe string
	// proofs are the paths this check proved free of links (see
	// pathcheck.Proofs); they die with the call.
	proofs pathcheck.Proofs
}

// unseen says why this server does not see the agent's files (see Files),
// when the check looked at the disk and found so: then its proofs are
// blind and every look failed.
func (c *call) unseen() string {
	if u := c.proofs.Blinded(); u != nil {
		return u.Why
	}
	return ""
}

// projectDirs are the directories edits are accepted in: the working
// directory and the additional ones, but those only that this check's
// proofs may reach (a client confined to its working directory, see
// filesView, has additional directories this server does not see: edits
// there count as outside the project).
func (c *call) projectDirs(req *Request) []string {
	dirs := []string{req.WorkingDirectory}
	for _, d := range req.AdditionalDirectories {
		if c.proofs.Sees(d) {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// writeFacts are the files a call writes, checked against the project and
// its protected paths.
type writeFacts struct {
	any       bool
	resolved  []string // the targets, resolved
	unclear   string   // why the targets could not be resolved or checked
	protected string   // a target that is a protected path
	outside   string   // targets outside the project
	broad     string   // the project directory is a home or above, or otherwise broad
	// hidden: an edit target's path has a dot-named component that is not
	// an inert dot-file (knowledge.InertHiddenGroups); accept-edits leaves
	// it to the classifier.
	hidden string
}

// guarded reports whether a write must be asked about even in bypass mode
// and kept from allow rules: a protected target, or targets that could not
// be checked for protection.
func (w writeFacts) guarded() bool { return w.unclear != "" || w.protected != "" }

// note says why the writes are not plainly inside the project, or "".
func (w writeFacts) note() string {
	for _, s := range []string{w.unclear, w.protected, w.outside, w.broad, w.hidden} {
		if s != "" {
			return s
		}
	}
	return ""
}

func (e *Engine) analyse(ctx context.Context, req *Request, p *policy) *call {
	c := &call{name: req.Tool.Name, kind: p.vocab.Kind(req.Tool.Name), cwd: req.WorkingDirectory}
	if req.Files.Remote {
		// Decided at the check's first look at the disk: most checks of a
		// session that need none (a rule, a metadata tool, echo) pay
		// nothing for it.
		c.proofs.Gate(func(pr *pathcheck.Proofs) (string, []string, string) { return filesView(req, pr) })
	}
	c.rc = rules.Call{Tool: c.name, Kind: string(c.kind)}
	switch {
	case c.kind.IsEdit():
		e.analyseEdit(req, p, c)
	case c.kind == KindRead || c.kind == KindSearch:
		e.analyseRead(ctx, req, p, c)
	case c.kind == KindShell:
		e.analyseShell(ctx, req, p, c)
	case c.kind == KindWebFetch:
		c.rc.URL, _ = req.Tool.Input["url"].(string)
	}
	c.guarded = e.guarded.write(c)
	if c.shell != nil {
		c.wipe = wipe(c.shell.Commands, e.home)
	}
	return c
}

// analyseEdit resolves the edit targets and checks them against the
// project and the protected paths. Protection is checked on every target
// before anything else, so that neither a mode, nor the policy switch, nor
// an earlier target outside the project lets an allow rule open a
// protected path.
func (e *Engine) analyseEdit(req *Request, p *policy, c *call) {
	raw, err := editTargets(c.kind, req.Tool.Input)
	for _, t := range raw {
		c.rc.Paths = append(c.rc.Paths, e.absPath(c.cwd, t))
	}
	w := &c.edits
	w.any = true
	switch {
	case err != nil:
		w.unclear = "edit targets unclear: " + err.Error()
		return
	case c.cwd == "":
		w.unclear = "no working directory given"
		return
	}
	// The first target first: proving it link-free proves the project
	// directory above it too, so the Checker's roots cost no system call.
	if len(raw) > 0 {
		_, _ = c.proofs.Resolve(c.cwd, raw[0])
	}
	chk, err := c.proofs.NewChecker(c.projectDirs(req), p.protected)
	if err != nil {
		w.unclear = "project directories unusable: " + err.Error()
		return
	}
	var outside []string
	for _, t := range raw {
		v, err := chk.Check(c.cwd, t)
		switch {
		case err != nil:
			w.unclear = fmt.Sprintf("edit target %q not resolvable: %v", truncate(t, 200), err)
			return
		case v.Protected != "":
			w.protected = fmt.Sprintf("edit target %s is a protected path (%s)", truncate(v.Resolved, 200), v.Protected)
			return
		case !v.Inside:
			outside = append(outside, fmt.Sprintf("edit target %s is outside the project", truncate(v.Resolved, 200)))
		case v.Hidden != "" && w.hidden == "":
			w.hidden = fmt.Sprintf("edit target %s is under %s, a hidden name that is not a known inert dot-file: "+
				"editors, hooks and agents load their configuration from such paths", truncate(v.Resolved, 200), truncate(v.Hidden, 100))
		}
		w.resolved = append(w.resolved, v.Resolved)
	}
	w.outside = strings.Join(outside, "; ")
	if r := e.broadRoot(chk); r != "" {
		w.broad = fmt.Sprintf("the project directory %s is a home directory or above; edits there are not accepted without asking", truncate(r, 200))
	}
}

// analyseRead judges the targets of a read or search tool.
func (e *Engine) analyseRead(ctx context.Context, req *Request, p *policy, c *call) {
	in := req.Tool.Input
	targets, ok := readTargets(in)
	if !ok {
		c.unproven = "a path field that is not a string"
	}
	if uri, present := in["uri"]; present {
		// An MCP resource read: a file:// URI is a read of that file;
		// any other resource is the MCP server's to serve, unknown here.
		s, _ := uri.(string)
		if p, ok := fileURIPath(s); ok {
			targets = append(targets, p)
		} else if c.unproven == "" {
			c.unproven = resourceNotFile
		}
	}
	if len(targets) == 0 && c.kind == KindSearch {
		// A search without a path searches the working directory, which
		// a request without one leaves unknown: "." cannot be placed.
		targets = []string{"."}
		if c.cwd != "" {
			targets[0] = c.cwd
		}
	}
	rs := e.newReadScope(ctx, req, p, c)
	content, hidden, follow := contentSearch(c.name)
	// Gemini CLI's read_many_files globs its paths and include patterns
	// with node-glob (dot files matched, case ignored, braces and extglob
	// read).
	manyFiles := c.name == "read_many_files"
	for _, t := range targets {
		c.rc.Paths = append(c.rc.Paths, e.absPath(c.cwd, t))
		if c.unproven != "" {
			continue
		}
		if manyFiles {
			c.unproven = rs.judgeNodeGlob(c.cwd, t)
			continue
		}
		if content && c.kind == KindSearch {
			w := treeWalk{hidden: hidden, follow: follow}
			if c.name == "grep_search" || c.name == "search_file_content" {
				// Gemini CLI's search reads hidden files (its git grep and
				// grep fallbacks do) but not a repository's .git: ripgrep
				// is told to exclude **/.git/**, and the fallbacks skip it,
				// unless no_ignore drops the excludes (then .git is read).
				switch v, has := in["no_ignore"]; {
				case !has || v == false:
					w.skipDirs = []string{".git"}
				case v != true:
					c.unproven = "a no_ignore field that is not a boolean"
					continue
				}
			}
			if c.name == "Grep" {
				// A whitelist searches the hidden files it matches.
				if whitelist, names := grepWhitelist(in); whitelist {
					w.hidden, w.names = true, names
				}
			}
			c.unproven = rs.walkTree(c.cwd, t, w)
		} else {
			c.unproven = rs.judge(c.cwd, t)
		}
	}
	if c.unproven == "" {
		if pat, isStr := in["pattern"].(string); isStr && c.kind == KindSearch && !content {
			// A Glob pattern may climb out of its path or be absolute:
			// the directory it lists is a read too.
			base := c.cwd
			if len(targets) > 0 {
				base = expandHome(targets[0], e.home)
				if !filepath.IsAbs(base) {
					base = c.cwd + "/" + base
				}
			}
			c.unproven = rs.judge(base, literalDir(pat))
		}
	}
	if c.unproven == "" && c.kind == KindRead {
		// read_many_files reads what its include patterns pick, below the
		// working directory or wherever they point.
		includes, _ := in["include"].([]any)
		if s, ok := in["include"].(string); ok {
			includes = []any{s}
		}
		for _, v := range includes {
			if pat, _ := v.(string); c.unproven == "" && pat != "" { // not a string: sensitiveFilter says so
				c.unproven = rs.judgeNodeGlob(c.cwd, pat)
			}
		}
	}
	if c.unproven == "" {
		if f := sensitiveFilter(in, e.home); f != "" {
			c.unproven = "a file filter that can pick secret files: " + f
		}
	}
}

// analyseShell parses a shell command and judges what it reads, where it
// runs and what it writes. The shell analysis's own verdict is kept as it
// is; what the engine finds about places goes to c.unproven.
func (e *Engine) analyseShell(ctx context.Context, req *Request, p *policy, c *call) {
	in := req.Tool.Input
	cmd, ok, raw := shellCommand(in)
	c.rc.Raw = strings.Join(raw, "\n")
	if !ok {
		// Ambiguous or malformed: never allowed, but deny and ask rules
		// see every candidate's commands and reads.
		c.rc.Unparsed = true
		c.unproven = "the command field is ambiguous or malformed"
		for _, r := range raw {
			a := shell.AnalyzeContext(ctx, r)
			for _, sc := range a.Commands {
				c.rc.Commands = append(c.rc.Commands, rules.Command{Env: sc.Env, Text: sc.Text})
			}
			for _, p := range a.Reads {
				c.rc.ShellReads = append(c.rc.ShellReads, e.absPath(c.cwd, p))
			}
			for _, w := range a.Writes {
				c.rc.ShellWrites = append(c.rc.ShellWrites, e.absPath(c.cwd, w))
			}
		}
		return
	}
	a := e.analyze(ctx, cmd)
	c.shell, c.subjects = &a.Analysis, a.subjects
	c.rc.Unparsed = a.ParseErr != nil
	for _, sc := range a.Commands {
		c.rc.Commands = append(c.rc.Commands, rules.Command{Env: sc.Env, Text: sc.Text})
	}
	// The command runs where its tool says, which may not be the project:
	// relative paths are judged from there, and a directory outside the
	// project is never read-only locally.
	dir := c.cwd
	rs := e.newReadScope(ctx, req, p, c)
	if wd, present, okWD := shellWorkdir(in); present {
		// Resolved the kernel's way: a workdir through a link or with ..
		// after one is where the link leads.
		resolved, err := c.proofs.Resolve(orRoot(c.cwd), expandHome(wd, e.home))
		switch {
		case !okWD:
			c.unproven = "the working directory field is not a string"
		case c.cwd == "":
			c.unproven = "runs in " + truncate(wd, 200) + ", and the request names no project"
		case err != nil || !rs.inProject(resolved):
			c.unproven = "runs in " + truncate(wd, 200) + ", outside the project"
		default:
			dir = resolved
		}
	}
	for _, r := range a.Reads {
		c.rc.ShellReads = append(c.rc.ShellReads, e.absPath(dir, r))
	}
	// Judging places is work: only a command that is read-only otherwise
	// needs it here (an allow rule's stage judges the others it matches).
	if a.ReadOnly && c.unproven == "" {
		c.unproven = e.judgeShellPlaces(rs, c.cwd, dir, &a.Analysis)
	}
	for _, w := range a.Writes {
		c.rc.ShellWrites = append(c.rc.ShellWrites, e.absPath(dir, w))
	}
	c.shellDir = dir
	if len(a.Writes) > 0 {
		c.writes = e.shellWrites(req, p, c, dir, a.Writes)
	}
}

// shellWrites checks the files a shell command writes: protected (or not
// resolvable) targets must be asked about even in bypass mode, and targets
// outside the project keep allow rules out.
func (e *Engine) shellWrites(req *Request, p *policy, c *call, dir string, writes []string) writeFacts {
	w := writeFacts{any: true}
	if req.WorkingDirectory == "" {
		w.unclear = "the command writes files and no working directory was given"
		return w
	}
	if len(writes) > 0 {
		_, _ = c.proofs.Resolve(dir, writes[0]) // proves the project directory too, as for edits
	}
	chk, err := c.proofs.NewChecker(c.projectDirs(req), p.protected)
	if err != nil {
		w.unclear = "project directories unusable: " + err.Error()
		return w
	}
	for _, t := range writes {
		v, err := chk.Check(dir, t)
		switch {
		case err != nil:
			w.unclear = fmt.Sprintf("the command writes %s, which cannot be resolved", truncate(t, 200))
			return w
		case v.Protected != "":
			w.protected = fmt.Sprintf("the command writes %s, a protected path (%s)", truncate(v.Resolved, 200), v.Protected)
			return w
		case !v.Inside && w.outside == "":
			w.outside = fmt.Sprintf("the command writes %s, outside the project", truncate(v.Resolved, 200))
		}
		w.resolved = append(w.resolved, v.Resolved)
	}
	if r := e.broadRoot(chk); r != "" {
		// Inside a project that is home or above is nowhere in particular.
		w.broad = fmt.Sprintf("the project directory %s is a home directory or above", truncate(r, 200))
	}
	return w
}

// nodeGlobMeta are the characters node-glob gives a meaning to.
const nodeGlobMeta = "*?[]{}()!@+"

// judgeNodeGlob judges a path or pattern that node-glob expands (dot
// files matched, case ignored, braces and extglob read): a plain path is
// a read; a pattern in extglob syntax, or one that may pick a
// secret-shaped name, is refused; any other pattern is a recursive read
// of the directory before its first wildcard, hidden files included.
func (rs *readScope) judgeNodeGlob(dir, pat string) string {
	i := strings.IndexAny(pat, nodeGlobMeta)
	switch {
	case i < 0:
		return rs.judge(dir, pat)
	case strings.ContainsAny(pat, "()"):
		return "a pattern in glob syntax toolgate does not match exactly: " + truncate(pat, 200)
	case knowledge.NamePicksSecret(pat):
		return "a pattern that can pick secret files: " + truncate(pat, 200)
	}
	root := "."
	if j := strings.LastIndexByte(pat[:i], '/'); j == 0 {
		root = "/"
	} else if j > 0 {
		root = pat[:j]
	}
	return rs.judgeTree(dir, root, true, false)
}

// fileURIPath returns the file a file:// URI names, decoded as an MCP
// server would decode it (%2E%2E is ..), or false for any other URI or
// one with a host, query or fragment, whose meaning is the server's.
func fileURIPath(s string) (string, bool) {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "file" || u.Opaque != "" || (u.Host != "" && u.Host != "localhost") ||
		u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || !strings.HasPrefix(u.Path, "/") || strings.ContainsRune(u.Path, 0) {
		return "", false
	}
	return u.Path, true
}

// broadRoot returns the first project directory that is a home directory,
// one above it, a credential store or a store's ancestor (as given or
// resolved), or "": everything under it would count as inside the
// project, shell startup files and keys included.
func (e *Engine) broadRoot(chk *pathcheck.Checker) string {
	lexical, resolved := chk.Roots()
	for i := range lexical {
		for j, r := range []string{lexical[i], resolved[i]} {
			if j == 1 && r == lexical[i] {
				break // no link on the way: the same checks again
			}
			if broadSearch(r, e.home) || knowledge.IsCredentialPathLiteral(r, e.home) || knowledge.BroadRoot(r, e.home) != "" {
				return lexical[i]
			}
		}
	}
	return ""
}

// absPath makes a path absolute and clean for rule matching, expanding a
// leading ~ or $HOME when the home directory is known. Containment checks
// do not use it: they resolve symlinks.
func (e *Engine) absPath(cwd, p string) string {
	if e.home != "" {
		for _, pre := range []string{"~", "$HOME", "${HOME}"} {
			if rest, ok := strings.CutPrefix(p, pre); ok && (rest == "" || rest[0] == '/') {
				p = e.home + rest
				break
			}
		}
	}
	if !filepath.IsAbs(p) && cwd != "" {
		p = filepath.Join(cwd, p)
	}
	return filepath.Clean(p)
}
