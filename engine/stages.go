package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/toolgate/toolgate/engine/pathcheck"
	"github.com/toolgate/toolgate/engine/rules"
)

// check is one request on its way through the stages: the request, its
// facts and what the stages consult.
type check struct {
	e   *Engine
	req *Request
	p   *policy
	set *rules.Set
	env rules.Env
	c   *call
	// vetoed says why a matching allow rule did not allow the call
	// (allowVeto), for the notes of the stages after it.
	vetoed string
	// trace, when not nil, records each stage's outcome (Explain).
	trace *Trace
}

// A stage decides a call from its facts, or passes (ok false). Stages
// only read the facts: none changes them for a later one.
type stage struct {
	name   string // as in the table of stages in docs/decisions.md
	decide func(ctx context.Context, k *check) (res Result, ok bool)
}

// stages are run in order; the first that decides wins. Explicit deny and
// ask rules come before the fast paths: a user's deny or ask is never
// overtaken by a heuristic allow. docs/decisions.md's table lists them in this
// order (TestStagesMatchDocs).
var stages = []stage{
	{"deny rules", denyRules},
	{"plan mode", planMode},
	{"ask rules", askRules},
	{"bypass mode", bypassMode},
	{"safe tools", safeTool},
	{"accept-edits", acceptEdits},
	{"shell analysis", shellAnalysis},
	{"allow rules", allowRules},
	{"default and accept-edits modes", modeAsks},
	{"classifier", func(ctx context.Context, k *check) (Result, bool) { return classify(ctx, k), true }},
}

// newCheck readies a call with its facts for the stages.
func newCheck(e *Engine, req *Request, p *policy, set *rules.Set, c *call) *check {
	// "/path" rules are anchored at the working directory (Root empty):
	// the policy's, the request's and imported Claude Code rules alike. An
	// anchor elsewhere (the config file's directory) would quietly stop a
	// project's deny rule from matching the project.
	return &check{e: e, req: req, p: p, set: set, c: c, env: rules.Env{Cwd: c.cwd, Home: e.home}}
}

// decideLocal runs the stages before the classifier; decided is false when
// none decides. Only a cancelled context leaves a decided call with a zero
// Result.
func (k *check) decideLocal(ctx context.Context) (res Result, decided bool) {
	for i := range stages[:len(stages)-1] {
		s := &stages[i]
		res, ok := s.decide(ctx, k)
		if k.trace != nil {
			k.trace.stage(k, s, res, ok)
		}
		if ok {
			return res, true
		}
	}
	return Result{}, false
}

func denyRules(_ context.Context, k *check) (Result, bool) {
	// The policy's rules first, so that a rule that says why (Bash(rm -rf
	// /)) is the one named; toolgate's own files, and wiping a root, deny
	// without one.
	m := k.set.Deny(k.c.rc, k.env)
	switch {
	case m.OK && !(k.c.guarded != "" && k.e.guarded.namedBy(m.Rule)):
		reason := "denied by rule " + m.Rule.Text
		if k.c.guarded != "" {
			reason += "; also: " + k.c.guarded
		}
		return Result{Decision: Deny, Source: SourceRule, MatchedRule: m.Rule.Text, Reason: reason}, true
	case k.c.guarded != "":
		return Result{Decision: Deny, Source: SourceRule, Reason: k.c.guarded}, true
	case k.c.wipe != "":
		return Result{Decision: Deny, Source: SourceRule, Reason: k.c.wipe}, true
	}
	return Result{}, false
}

// planMode denies whatever is not read-only: a safe tool or a read-only
// shell command, with every read proven.
func planMode(_ context.Context, k *check) (Result, bool) {
	if k.req.Mode != ModePlan || k.safeTool() || k.readOnlyCommand() {
		return Result{}, false
	}
	return Result{Decision: Deny, Source: SourceMode, Reason: "plan mode is read-only: " + planWhy(k.c)}, true
}

func askRules(_ context.Context, k *check) (Result, bool) {
	m := k.set.Ask(k.c.rc, k.env)
	return Result{Decision: Ask, Source: SourceRule, MatchedRule: m.Rule.Text, Reason: fmt.Sprintf("rule %s asks for approval", m.Rule.Text)}, m.OK
}

// bypassMode allows what no rule caught, but still asks before writes to
// protected paths or writes it could not check.
func bypassMode(_ context.Context, k *check) (Result, bool) {
	if k.req.Mode != ModeBypass {
		return Result{}, false
	}
	if k.c.edits.guarded() || k.c.writes.guarded() {
		return Result{Decision: Ask, Source: SourceMode, Reason: withNotes("bypass mode still asks before protected or unclear edits", k.notes())}, true
	}
	return Result{Decision: Allow, Source: SourceMode, Reason: "bypass mode allows what no deny or ask rule catches"}, true
}

func safeTool(_ context.Context, k *check) (Result, bool) {
	return Result{Decision: Allow, Source: SourceSafeTool, Reason: fmt.Sprintf("%s is a read-only tool", k.c.name)}, k.safeTool()
}

// acceptEdits allows an edit whose every target lies inside the working
// directory or an additional directory and is not protected, in the modes
// that accept edits, when the policy does.
func acceptEdits(_ context.Context, k *check) (Result, bool) {
	w := k.c.edits
	if !k.c.kind.IsEdit() || w.note() != "" || !k.acceptsEdits() {
		return Result{}, false
	}
	return Result{Decision: Allow, Source: SourceAcceptEdits, Reason: "edit inside the project: " + truncate(strings.Join(w.resolved, ", "), 300)}, true
}

func shellAnalysis(_ context.Context, k *check) (Result, bool) {
	return Result{Decision: Allow, Source: SourceCommandAnalysis, Reason: "read-only command"}, k.readOnlyCommand()
}

// allowRules speak about commands, not about the files they write or read
// or the programs their options run: a command that writes a protected
// file or outside the project, or an edit of a protected path, is not
// theirs to allow, nor a read a proof refused or an option that runs a
// program (allowVeto).
func allowRules(ctx context.Context, k *check) (Result, bool) {
	if k.c.edits.guarded() || k.c.writes.note() != "" {
		return Result{}, false
	}
	mode := k.req.Mode
	m := k.set.Allow(k.c.rc, k.env, mode == ModeAuto || mode == ModeUnspecified)
	if !m.OK {
		return Result{}, false
	}
	if why := k.allowVeto(ctx); why != "" {
		k.vetoed = fmt.Sprintf("allow rule %s does not cover it: %s", m.Rule.Text, truncate(why, 300))
		return Result{}, false
	}
	return Result{Decision: Allow, Source: SourceRule, MatchedRule: m.Rule.Text, Reason: fmt.Sprintf("allowed by rule %s", m.Rule.Text)}, true
}

func modeAsks(_ context.Context, k *check) (Result, bool) {
	mode := k.req.Mode
	if mode != ModeDefault && mode != ModeAcceptEdits {
		return Result{}, false
	}
	return Result{Decision: Ask, Source: SourceMode, Reason: withNotes(fmt.Sprintf("%s mode asks before %s", mode, k.c.name), k.notes())}, true
}

// classify asks the classifier, or the user when none is configured. It
// fails closed: a classifier that fails or gives no decision never allows.
// It always decides; a zero Result means the context ended.
func classify(ctx context.Context, k *check) Result {
	return k.e.classifyInput(ctx, &ClassifyInput{Request: k.req, Kind: k.c.kind, Policy: k.p.name, Notes: k.notes(), PolicyVersion: k.e.version})
}

// Classify runs the classifier stage alone on a call another toolgate's
// local stages left open (a central server answering a local one): in
// says what they found. It decides as the last stage of Check would, and
// fails closed the same way; it returns an error only for an unknown
// policy or a context that ended.
func (e *Engine) Classify(ctx context.Context, in *ClassifyInput) (Result, error) {
	if in == nil || in.Request == nil {
		return Result{}, fmt.Errorf("%w: no request to classify", ErrInvalidRequest)
	}
	name := in.Policy
	if name == "" {
		name = DefaultPolicy
	}
	if _, ok := e.policies[name]; !ok {
		return Result{}, fmt.Errorf("%w %q", ErrUnknownPolicy, name)
	}
	c := *in
	c.Policy = name
	res := e.classifyInput(ctx, &c)
	if res.Decision == DecisionUnspecified {
		return Result{}, ctx.Err()
	}
	res.Kind, res.Policy, res.PolicyVersion = in.Kind, name, e.version
	return res, nil
}

func (e *Engine) classifyInput(ctx context.Context, in *ClassifyInput) Result {
	if e.classifier == nil {
		return Result{Decision: Ask, Source: SourceNoClassifier, Reason: withNotes("no local stage decided and no classifier is configured", in.Notes)}
	}
	v, err := e.classifier.Classify(ctx, in)
	if err != nil {
		if ctx.Err() != nil {
			return Result{}
		}
		why := truncate(err.Error(), 300)
		var details *ClassifierDetails
		src := SourceClassifierUnavailable
		if ce, ok := errors.AsType[*ClassifierError](err); ok {
			details = ce.Details
			if ce.Reason != "" {
				why = ce.Reason
			}
			if ce.Source == SourceUpstreamUnavailable {
				src = ce.Source
			}
		}
		what := "classifier"
		if src == SourceUpstreamUnavailable {
			what = "the upstream toolgate"
		}
		return Result{Decision: e.onUnavailable, Source: src, Reason: what + " failed, so the call is not allowed: " + why, Classifier: details}
	}
	src := SourceClassifier
	if v.Cached {
		src = SourceCache
	}
	switch {
	case v.Source == SourceNoClassifier && v.Decision == Ask:
		// An upstream without a classifier: asked, as here without one.
		return Result{Decision: Ask, Source: SourceNoClassifier, Reason: v.Reason, Classifier: v.Details}
	case v.Source != SourceUnspecified && v.Source != SourceClassifier && v.Source != SourceCache:
		// Not a verdict a classifier gives: fail closed.
	case v.Decision == Allow || v.Decision == Deny || v.Decision == Ask:
		return Result{Decision: v.Decision, Source: src, Reason: v.Reason, Classifier: v.Details}
	}
	return Result{Decision: e.onUnavailable, Source: SourceClassifierUnavailable, Reason: "classifier failed, so the call is not allowed: it gave no decision", Classifier: v.Details}
}

// safeTool reports whether the call is a read-only tool (by kind or by the
// policy's list) whose every read is proven.
func (k *check) safeTool() bool {
	return (k.c.kind.IsSafe() || k.p.safe[k.c.name]) && k.c.unproven == ""
}

// readOnlyCommand reports whether the call is a shell command the shell
// analysis found read-only, whose every read is proven.
func (k *check) readOnlyCommand() bool {
	return k.c.shell != nil && k.c.shell.ReadOnly && k.c.unproven == ""
}

// acceptsEdits reports whether the mode and the policy accept edits.
func (k *check) acceptsEdits() bool { return k.modeAcceptsEdits() && k.p.acceptEdits }

func (k *check) modeAcceptsEdits() bool {
	m := k.req.Mode
	return m == ModeUnspecified || m == ModeAuto || m == ModeAcceptEdits
}

// notes say why no local stage allowed the call; they reach the
// classifier and the decision log.
func (k *check) notes() []string {
	c := k.c
	var notes []string
	if c.kind.IsEdit() {
		switch n := c.edits.note(); {
		case n != "":
			notes = append(notes, n)
		case !k.modeAcceptsEdits():
			notes = append(notes, fmt.Sprintf("%s mode does not accept edits", k.req.Mode))
		case !k.p.acceptEdits:
			notes = append(notes, "accept-edits is off in this policy")
		}
	}
	if n := c.writes.note(); n != "" {
		notes = append(notes, n)
	}
	switch {
	case c.shell != nil && (!c.shell.ReadOnly || c.unproven != ""):
		notes = append(notes, "command not known to be read-only: "+truncate(shellWhy(c), 200))
	case c.unproven != "":
		notes = append(notes, c.unproven)
	}
	if c.kind == KindUnknown {
		notes = append(notes, fmt.Sprintf("%s is not a known tool", c.name))
	}
	if k.vetoed != "" {
		notes = append(notes, k.vetoed)
	}
	if u := c.unseen(); u != "" {
		// Said once, first, rather than inside every refused look.
		out := []string{unseenNote + u}
		for _, n := range notes {
			if !strings.Contains(n, pathcheck.UnseenPrefix) {
				out = append(out, n)
			}
		}
		notes = out
	}
	return notes
}

// unseenNote begins the note of a check whose files this server does not
// see.
const unseenNote = "the agent's files are not visible to this server, so nothing was proven from its disk: "

// shellWhy is why a shell command is not read-only or not proven safe.
func shellWhy(c *call) string {
	if !c.shell.ReadOnly {
		return c.shell.Reason
	}
	return c.unproven
}

func withNotes(reason string, notes []string) string {
	if len(notes) == 0 {
		return reason
	}
	return reason + " (" + strings.Join(notes, "; ") + ")"
}

func planWhy(c *call) string {
	switch {
	case c.shell != nil:
		return "the command is not known to be read-only: " + truncate(shellWhy(c), 200)
	case c.unproven != "":
		return c.unproven
	}
	return fmt.Sprintf("%s is not a read-only tool", c.name)
}
