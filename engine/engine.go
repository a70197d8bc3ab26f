package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/toolgate/toolgate/engine/knowledge"
	"github.com/toolgate/toolgate/engine/pathcheck"
	"github.com/toolgate/toolgate/engine/rules"
	"github.com/toolgate/toolgate/engine/shell"
)

// Errors the engine returns when it cannot decide. A deny is never an error.
var (
	// ErrInvalidRequest wraps every problem with the request itself.
	ErrInvalidRequest = errors.New("invalid request")
	// ErrUnknownPolicy is returned for a policy name that is not configured.
	ErrUnknownPolicy = errors.New("unknown policy")
)

// Config configures an Engine.
type Config struct {
	// Policies by name. DefaultPolicy is added (empty) when absent.
	Policies map[string]PolicySpec
	// Classifier decides what the local stages leave open; nil means none
	// is configured and such calls are answered ASK.
	Classifier Classifier
	// OnClassifierUnavailable is the decision when the classifier fails:
	// Deny (the default, also for DecisionUnspecified) or Ask.
	OnClassifierUnavailable Decision
	// Home is the agent user's home directory, for "~" in rules and paths;
	// empty means rules with "~/" match the path at any depth.
	Home string
	// Root anchors "/path" rule patterns (the policy file's directory);
	// empty means the working directory.
	Root string
}

// Engine runs the decision pipeline. It is immutable and safe for
// concurrent use.
type Engine struct {
	policies      map[string]*policy
	classifier    Classifier
	onUnavailable Decision
	home, root    string
	warnings      []string
}

// New compiles the policies.
func New(cfg Config) (*Engine, error) {
	e := &Engine{policies: map[string]*policy{}, classifier: cfg.Classifier, onUnavailable: Deny, home: cfg.Home, root: cfg.Root}
	switch cfg.OnClassifierUnavailable {
	case DecisionUnspecified, Deny:
	case Ask:
		e.onUnavailable = Ask
	default:
		return nil, fmt.Errorf("on_unavailable: must be deny or ask, got %s", cfg.OnClassifierUnavailable)
	}
	specs := cfg.Policies
	if _, ok := specs[DefaultPolicy]; !ok {
		specs = map[string]PolicySpec{DefaultPolicy: {}}
		maps.Copy(specs, cfg.Policies)
	}
	for name, spec := range specs {
		if name == "" {
			return nil, errors.New("policies: empty policy name")
		}
		p, err := compilePolicy(name, spec, e.home)
		if err != nil {
			return nil, fmt.Errorf("policies.%s.%w", name, err)
		}
		e.policies[name] = p
		e.warnings = append(e.warnings, p.warnings...)
	}
	slices.Sort(e.warnings)
	return e, nil
}

// Warnings lists rules that loaded but are not applied where they would be
// dangerous (allow rules that hand out arbitrary code execution).
func (e *Engine) Warnings() []string { return slices.Clone(e.warnings) }

// Policies returns the configured policy names, sorted.
func (e *Engine) Policies() []string {
	return slices.Sorted(maps.Keys(e.policies))
}

// call is a request analysed once for all stages.
type call struct {
	name        string
	kind        Kind
	cwd         string
	rawTargets  []string // edit targets as given, for containment
	targetsErr  error
	shell       *shell.Analysis // shell kinds with a command
	shellDir    string          // where the shell command runs
	shellWrites []string        // files the shell command writes, as written
	sensitive   string          // a read target that holds secrets, if any
	rc          rules.Call      // what rules see
}

func (e *Engine) analyse(ctx context.Context, req *Request, p *policy) *call {
	vocab := p.vocab
	c := &call{name: req.Tool.Name, kind: vocab.Kind(req.Tool.Name), cwd: req.WorkingDirectory}
	c.rc = rules.Call{Tool: c.name, Kind: string(c.kind)}
	in := req.Tool.Input
	switch {
	case c.kind.IsEdit():
		c.rawTargets, c.targetsErr = editTargets(c.kind, in)
		for _, t := range c.rawTargets {
			c.rc.Paths = append(c.rc.Paths, e.absPath(c.cwd, t))
		}
	case c.kind == KindRead || c.kind == KindSearch:
		targets, ok := readTargets(in)
		if !ok {
			c.sensitive = "a path field that is not a string"
		}
		if uri, present := in["uri"]; present {
			// An MCP resource read: a file:// URI is a read of that file;
			// any other resource is the MCP server's to serve, unknown here.
			s, isStr := uri.(string)
			if rest, isFile := strings.CutPrefix(s, "file://"); isStr && isFile && strings.HasPrefix(rest, "/") {
				targets = append(targets, rest)
			} else if c.sensitive == "" {
				c.sensitive = "a resource that is not a file:// URI"
			}
		}
		if len(targets) == 0 && c.kind == KindSearch && c.cwd != "" {
			// A search without a path searches the working directory.
			targets = []string{c.cwd}
		}
		rs := e.newReadScope(ctx, req, p)
		content, hidden, follow := contentSearch(c.name)
		for _, t := range targets {
			c.rc.Paths = append(c.rc.Paths, e.absPath(c.cwd, t))
			if c.sensitive != "" {
				continue
			}
			if content && c.kind == KindSearch {
				c.sensitive = rs.judgeTree(c.cwd, t, hidden, follow)
			} else {
				c.sensitive = rs.judge(c.cwd, t)
			}
		}
		if c.sensitive == "" {
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
				c.sensitive = rs.judge(base, literalDir(pat))
			}
		}
		if c.sensitive == "" {
			if f := sensitiveFilter(in, e.home); f != "" {
				c.sensitive = "a file filter that can pick secret files: " + f
			}
		}
	case c.kind == KindShell:
		cmd, ok, raw := shellCommand(in)
		c.rc.Raw = strings.Join(raw, "\n")
		if !ok {
			// Ambiguous or malformed: never allowed, but deny and ask rules
			// see every candidate's commands and reads.
			c.rc.Unparsed = true
			for _, r := range raw {
				a := shell.Analyze(r)
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
			break
		}
		a := shell.Analyze(cmd)
		c.shell = &a
		c.rc.Unparsed = a.ParseErr != nil
		for _, sc := range a.Commands {
			c.rc.Commands = append(c.rc.Commands, rules.Command{Env: sc.Env, Text: sc.Text})
		}
		// The command runs where its tool says, which may not be the
		// project: relative paths are judged from there, and a directory
		// outside the project is never read-only locally.
		dir := c.cwd
		rs := e.newReadScope(ctx, req, p)
		if wd, present, okWD := shellWorkdir(in); present {
			// Resolved the kernel's way: a workdir through a link or with
			// .. after one is where the link leads.
			resolved, err := pathcheck.Resolve(orRoot(c.cwd), expandHome(wd, e.home))
			switch {
			case !okWD:
				a.ReadOnly, a.Reason = false, "the working directory field is not a string"
			case err != nil || c.cwd == "" || !rs.inProject(resolved):
				a.ReadOnly, a.Reason = false, "runs in "+truncate(wd, 200)+", outside the project"
			default:
				dir = resolved
			}
		}
		if a.ReadOnly && c.cwd != "" && broadSearch(filepath.Clean(c.cwd), e.home) {
			a.ReadOnly, a.Reason = false, "the working directory is a home directory or above, where relative reads reach credential stores"
		}
		for _, r := range a.Reads {
			c.rc.ShellReads = append(c.rc.ShellReads, e.absPath(dir, r))
			if a.ReadOnly {
				if why := rs.judge(dir, r); why != "" {
					a.ReadOnly, a.Reason = false, why
				}
			}
		}
		for _, t := range a.Trees {
			if a.ReadOnly {
				if why := rs.judgeTree(dir, t.Path, t.Hidden, t.Follow); why != "" {
					a.ReadOnly, a.Reason = false, why
				}
			}
		}
		if a.ReadOnly {
			if why := exposure(a.Commands); why != "" {
				a.ReadOnly, a.Reason = false, why
			} else if dir != c.cwd && runsGit(a.Commands) {
				a.ReadOnly, a.Reason = false, gitElsewhere
			}
		}
		for _, w := range a.Writes {
			c.rc.ShellWrites = append(c.rc.ShellWrites, e.absPath(dir, w))
		}
		c.shellWrites = a.Writes
		c.shellDir = dir
	case c.kind == KindWebFetch:
		c.rc.URL, _ = in["url"].(string)
	}
	return c
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

// Check decides one request. It returns an error only when it cannot
// decide: an invalid request (ErrInvalidRequest), an unknown policy
// (ErrUnknownPolicy), or a cancelled context.
func (e *Engine) Check(ctx context.Context, req *Request) (Result, error) {
	if err := validate(req); err != nil {
		return Result{}, err
	}
	name := req.Policy
	if name == "" {
		name = DefaultPolicy
	}
	p, ok := e.policies[name]
	if !ok {
		return Result{}, fmt.Errorf("%w %q", ErrUnknownPolicy, name)
	}
	set := p.rules
	if len(req.Rules.Allow)+len(req.Rules.Ask)+len(req.Rules.Deny) > 0 {
		extra, _, err := rules.Compile(req.Rules.Deny, req.Rules.Ask, req.Rules.Allow)
		if err != nil {
			return Result{}, fmt.Errorf("%w: rules.%w", ErrInvalidRequest, err)
		}
		// Added after the policy's rules: they can add, never remove.
		set = set.Merge(extra)
	}
	c := e.analyse(ctx, req, p)
	res := e.decide(ctx, req, p, set, c)
	if res.Decision == DecisionUnspecified {
		// Only a cancelled context leaves the pipeline undecided.
		return Result{}, ctx.Err()
	}
	res.Kind, res.Policy = c.kind, p.name
	return res, nil
}

func validate(req *Request) error {
	if req.Tool.Name == "" {
		return fmt.Errorf("%w: tool.name is required", ErrInvalidRequest)
	}
	if req.WorkingDirectory != "" && !filepath.IsAbs(req.WorkingDirectory) {
		return fmt.Errorf("%w: working_directory %q is not absolute", ErrInvalidRequest, req.WorkingDirectory)
	}
	for i, d := range req.AdditionalDirectories {
		if !filepath.IsAbs(d) {
			return fmt.Errorf("%w: additional_directories[%d] %q is not absolute", ErrInvalidRequest, i, d)
		}
	}
	if req.Mode < ModeUnspecified || req.Mode > ModeBypass {
		return fmt.Errorf("%w: unknown mode %d", ErrInvalidRequest, int(req.Mode))
	}
	return nil
}

// decide runs the stages. Explicit deny and ask rules come before the
// fast paths: a user's deny or ask must never be overtaken by a heuristic
// allow.
func (e *Engine) decide(ctx context.Context, req *Request, p *policy, set *rules.Set, c *call) Result {
	env := rules.Env{Cwd: c.cwd, Root: e.root, Home: e.home}
	if m := set.Deny(c.rc, env); m.OK {
		return Result{Decision: Deny, Source: SourceRule, MatchedRule: m.Rule.Text, Reason: fmt.Sprintf("denied by rule %s", m.Rule.Text)}
	}
	mode := req.Mode
	safe := (c.kind.isSafe() || p.safe[c.name]) && c.sensitive == ""
	readOnlyShell := c.shell != nil && c.shell.ReadOnly
	if mode == ModePlan && !safe && !readOnlyShell {
		return Result{Decision: Deny, Source: SourceMode, Reason: fmt.Sprintf("plan mode is read-only: %s", planWhy(c))}
	}
	if m := set.Ask(c.rc, env); m.OK {
		return Result{Decision: Ask, Source: SourceRule, MatchedRule: m.Rule.Text, Reason: fmt.Sprintf("rule %s asks for approval", m.Rule.Text)}
	}

	var notes []string
	protected := false
	if c.kind.IsEdit() {
		res, note, prot := e.acceptEdits(req, p, c)
		if res.Decision != DecisionUnspecified && mode != ModeBypass {
			return res
		}
		if note != "" {
			notes = append(notes, note)
		}
		protected = prot
	}
	writesOutside := false
	if c.shell != nil && len(c.shellWrites) > 0 {
		prot, outside, note := e.shellWrites(req, p, c)
		if note != "" {
			notes = append(notes, note)
		}
		protected = protected || prot
		writesOutside = outside
	}
	if mode == ModeBypass {
		if protected {
			return Result{Decision: Ask, Source: SourceMode, Reason: withNotes("bypass mode still asks before protected or unclear edits", notes)}
		}
		return Result{Decision: Allow, Source: SourceMode, Reason: "bypass mode allows what no deny or ask rule catches"}
	}
	if safe {
		return Result{Decision: Allow, Source: SourceSafeTool, Reason: fmt.Sprintf("%s is a read-only tool", c.name)}
	}
	if c.sensitive != "" {
		notes = append(notes, c.sensitive)
	}
	if readOnlyShell {
		return Result{Decision: Allow, Source: SourceCommandAnalysis, Reason: "read-only command"}
	}
	if c.shell != nil {
		notes = append(notes, "command not known to be read-only: "+truncate(c.shell.Reason, 200))
	}
	// Allow rules speak about commands, not about the files they write: a
	// command that writes a protected file or outside the project is not
	// theirs to allow.
	if !protected && !writesOutside {
		if m := set.Allow(c.rc, env, mode == ModeAuto || mode == ModeUnspecified); m.OK {
			return Result{Decision: Allow, Source: SourceRule, MatchedRule: m.Rule.Text, Reason: fmt.Sprintf("allowed by rule %s", m.Rule.Text)}
		}
	}
	if c.kind == KindUnknown {
		notes = append(notes, fmt.Sprintf("%s is not a known tool", c.name))
	}
	if mode == ModeDefault || mode == ModeAcceptEdits {
		return Result{Decision: Ask, Source: SourceMode, Reason: withNotes(fmt.Sprintf("%s mode asks before %s", mode, c.name), notes)}
	}
	if e.classifier == nil {
		return Result{Decision: Ask, Source: SourceNoClassifier, Reason: withNotes("no local stage decided and no classifier is configured", notes)}
	}
	v, err := e.classifier.Classify(ctx, &ClassifyInput{Request: req, Kind: c.kind, Policy: p.name, Notes: notes})
	if err != nil {
		if ctx.Err() != nil {
			return Result{}
		}
		// Fail closed: a broken classifier never allows.
		why := truncate(err.Error(), 300)
		var details *ClassifierDetails
		if ce, ok := errors.AsType[*ClassifierError](err); ok {
			details = ce.Details
			if ce.Reason != "" {
				why = ce.Reason
			}
		}
		return Result{Decision: e.onUnavailable, Source: SourceClassifierUnavailable, Reason: "classifier failed, so the call is not allowed: " + why, Classifier: details}
	}
	src := SourceClassifier
	if v.Cached {
		src = SourceCache
	}
	switch v.Decision {
	case Allow, Deny, Ask:
		return Result{Decision: v.Decision, Source: src, Reason: v.Reason, Classifier: v.Details}
	}
	return Result{Decision: e.onUnavailable, Source: SourceClassifierUnavailable, Reason: "classifier failed, so the call is not allowed: it gave no decision", Classifier: v.Details}
}

// acceptEdits allows an edit whose every target lies inside the working
// directory or an additional directory and is not protected. When it does
// not decide it returns a note saying why, and whether allow rules must stay
// out too: a target is protected, or the targets could not be checked for
// protection. Protection is checked on every target before the mode and the
// policy switch are consulted, so that neither a mode without accept-edits,
// nor accept-edits turned off, nor an earlier target outside the project
// lets an allow rule open a protected path.
func (e *Engine) acceptEdits(req *Request, p *policy, c *call) (Result, string, bool) {
	switch {
	case c.targetsErr != nil:
		return Result{}, "edit targets unclear: " + c.targetsErr.Error(), true
	case c.cwd == "":
		return Result{}, "no working directory given", true
	}
	roots := append([]string{c.cwd}, req.AdditionalDirectories...)
	chk, err := pathcheck.NewWithPatterns(roots, p.protected)
	if err != nil {
		return Result{}, "project directories unusable: " + err.Error(), true
	}
	var outside []string
	resolved := make([]string, 0, len(c.rawTargets))
	for _, t := range c.rawTargets {
		v, err := chk.Check(c.cwd, t)
		switch {
		case err != nil:
			return Result{}, fmt.Sprintf("edit target %q not resolvable: %v", truncate(t, 200), err), true
		case v.Protected != "":
			return Result{}, fmt.Sprintf("edit target %s is a protected path (%s)", truncate(v.Resolved, 200), v.Protected), true
		case !v.Inside:
			outside = append(outside, fmt.Sprintf("edit target %s is outside the project", truncate(v.Resolved, 200)))
		}
		resolved = append(resolved, v.Resolved)
	}
	// Checked after the targets, so that a protected one still counts as
	// protected (bypass mode asks, allow rules stay out).
	broad := e.broadRoot(chk)
	switch {
	case len(outside) > 0:
		return Result{}, strings.Join(outside, "; "), false
	case broad != "":
		return Result{}, fmt.Sprintf("the project directory %s is a home directory or above; edits there are not accepted without asking", truncate(broad, 200)), false
	case req.Mode != ModeUnspecified && req.Mode != ModeAuto && req.Mode != ModeAcceptEdits:
		return Result{}, fmt.Sprintf("%s mode does not accept edits", req.Mode), false
	case !p.acceptEdits:
		return Result{}, "accept-edits is off in this policy", false
	}
	return Result{Decision: Allow, Source: SourceAcceptEdits, Reason: "edit inside the project: " + truncate(strings.Join(resolved, ", "), 300)}, "", false
}

// shellWrites checks the files a shell command writes: protected (or not
// resolvable) targets must be asked about even in bypass mode, and targets
// outside the project keep allow rules out.
func (e *Engine) shellWrites(req *Request, p *policy, c *call) (protected, outside bool, note string) {
	if c.cwd == "" {
		return true, true, "the command writes files and no working directory was given"
	}
	chk, err := pathcheck.NewWithPatterns(append([]string{c.cwd}, req.AdditionalDirectories...), p.protected)
	if err != nil {
		return true, true, "project directories unusable: " + err.Error()
	}
	for _, w := range c.shellWrites {
		v, err := chk.Check(c.shellDir, w)
		switch {
		case err != nil:
			return true, true, fmt.Sprintf("the command writes %s, which cannot be resolved", truncate(w, 200))
		case !v.Inside:
			outside, note = true, fmt.Sprintf("the command writes %s, outside the project", truncate(v.Resolved, 200))
		case v.Protected != "":
			return true, true, fmt.Sprintf("the command writes %s, a protected path (%s)", truncate(v.Resolved, 200), v.Protected)
		}
	}
	if r := e.broadRoot(chk); r != "" && !outside {
		// Inside a project that is home or above is nowhere in particular.
		return false, true, fmt.Sprintf("the project directory %s is a home directory or above", truncate(r, 200))
	}
	return false, outside, note
}

func withNotes(reason string, notes []string) string {
	if len(notes) == 0 {
		return reason
	}
	return reason + " (" + strings.Join(notes, "; ") + ")"
}

func planWhy(c *call) string {
	switch {
	case c.sensitive != "":
		return c.sensitive
	case c.shell != nil:
		return "the command is not known to be read-only: " + truncate(c.shell.Reason, 200)
	}
	return fmt.Sprintf("%s is not a read-only tool", c.name)
}
