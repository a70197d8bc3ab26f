package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolgate/toolgate/engine/memo"
	"github.com/toolgate/toolgate/engine/rules"
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
	// Guarded are files no agent may write, move, link or delete by any
	// means, in any mode: toolgate's own config, the files it imports, its
	// TLS and token files, the files it writes (the audit log, the
	// classifier's dump). Absolute paths.
	Guarded []string
	// GuardedPatterns are more such files by glob, absolute paths whose
	// last component only may be a glob (an audit log's rotated backups,
	// named by the time of their rotation).
	GuardedPatterns []string
	// Pool runs the local part of checks (every stage before the
	// classifier: the file-system work) under FS's deadline. nil runs it
	// on the caller's goroutine, with no deadline: for one-shot tools
	// (eval, validate) and tests. A server must give one, shared by the
	// engines its reloads build, so that stalled file systems can hold
	// no more threads than the pool has workers.
	Pool *Pool
	// FS bounds the local part; its zero Timeout means the default.
	FS FSConfig
	// Version is the content hash of the policy set ("sha256:..."),
	// carried by every Result; empty when unknown.
	Version string
	// Approver takes the unattended questions a policy queues (on_ask:
	// approve) to an approver; nil means none, and they are denied.
	Approver Approver
}

// Engine runs the decision pipeline. It is immutable and safe for
// concurrent use.
type Engine struct {
	policies      map[string]*policy
	classifier    Classifier
	onUnavailable Decision
	home          string
	guarded       guardedFiles
	warnings      []string
	// analyses keeps shell analyses by command text (see analyze).
	analyses *memo.Table[string, *analysis]
	pool     *Pool // nil: inline
	// fsTimeout bounds a check's local part on the pool.
	fsTimeout time.Duration
	version   string
	approver  Approver
}

// New compiles the policies.
func New(cfg Config) (*Engine, error) {
	e := &Engine{policies: map[string]*policy{}, classifier: cfg.Classifier, onUnavailable: Deny, home: cfg.Home,
		analyses: memo.New[string, *analysis](maxAnalyses), pool: cfg.Pool, fsTimeout: cfg.FS.Timeout, version: cfg.Version, approver: cfg.Approver}
	if e.fsTimeout == 0 {
		e.fsTimeout = DefaultFSConfig().Timeout
	}
	var err error
	if e.guarded, err = newGuardedFiles(cfg.Guarded, cfg.GuardedPatterns); err != nil {
		return nil, err
	}
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

// Version is the content hash of the policy set the engine was built
// from; empty when unknown.
func (e *Engine) Version() string { return e.version }

// Policies returns the configured policy names, sorted.
func (e *Engine) Policies() []string {
	return slices.Sorted(maps.Keys(e.policies))
}

// Check decides one request. It returns an error only when it cannot
// decide: an invalid request (ErrInvalidRequest), an unknown policy
// (ErrUnknownPolicy), or a cancelled context.
func (e *Engine) Check(ctx context.Context, req *Request) (Result, error) {
	res, _, err := e.check(ctx, req, false, nil)
	return res, err
}

// CheckLocal is Check without the classifier stage: it reports decided
// false when no local stage decides, which a caller that answers local
// checks at once and hands the rest to workers (a stream) uses to send
// those to Check. A call it decides, Check decides the same way.
func (e *Engine) CheckLocal(ctx context.Context, req *Request) (res Result, decided bool, err error) {
	return e.check(ctx, req, true, nil)
}

// check decides req; tr, when not nil, is filled with why (Explain).
func (e *Engine) check(ctx context.Context, req *Request, localOnly bool, tr *Trace) (Result, bool, error) {
	if err := validate(req); err != nil {
		return Result{}, false, err
	}
	name := req.Policy
	if name == "" {
		name = DefaultPolicy
	}
	p, ok := e.policies[name]
	if !ok {
		return Result{}, false, fmt.Errorf("%w %q", ErrUnknownPolicy, name)
	}
	set := p.rules
	clientAllow := req.Rules.Allow
	var ignored int
	if p.refuseClientAllow && len(clientAllow) > 0 {
		// Clients add deny and ask rules only; their allow rules are
		// not even compiled, so that one the policy refuses cannot fail
		// the check either.
		ignored, clientAllow = len(clientAllow), nil
	}
	bypassRefused := p.refuseClientBypass && req.Mode == ModeBypass
	if bypassRefused {
		// Every stage after this one reads the mode from the request,
		// the classifier's included: a copy in auto mode.
		auto := *req
		auto.Mode = ModeAuto
		req = &auto
	}
	if len(clientAllow)+len(req.Rules.Ask)+len(req.Rules.Deny) > 0 {
		extra, _, err := rules.Compile(req.Rules.Deny, req.Rules.Ask, clientAllow)
		if err != nil {
			return Result{}, false, fmt.Errorf("%w: rules.%w", ErrInvalidRequest, err)
		}
		// Added after the policy's rules: they can add, never remove.
		set = set.Merge(extra)
	}
	l := localParts.Get().(*localPart)
	*l = localPart{e: e, ctx: ctx, req: req, p: p, set: set}
	if tr != nil {
		// The local part's own: a worker that outlives a failed run may
		// still write it, so it is handed over only after a run ended.
		l.trace = new(Trace)
	}
	if e.pool == nil {
		l.run()
	} else if err := e.pool.run(ctx, e.fsTimeout, &l.job, l); err != nil {
		// l is left to its worker, which may still write it: never reused.
		if ctxErr := ctx.Err(); ctxErr != nil {
			return Result{}, false, ctxErr
		}
		unfinished := e.fsUnanswered(err, p, req)
		if localOnly && tr == nil && p.queuesForApproval(req, unfinished) {
			// Waiting for an approver is a worker's job, not the
			// caller's that answers local checks at once.
			return Result{}, false, nil
		}
		res, step, err := e.unattended(ctx, p, req, unfinished, tr != nil)
		if err != nil {
			return Result{}, false, err
		}
		if tr != nil {
			tr.Unfinished = unfinished.Reason
			tr.finish(unfinished, false)
			tr.last(req, step)
		}
		return res, true, nil
	}
	c, k, res, decided := l.c, l.k, l.res, l.decided
	if tr != nil && l.trace != nil {
		*tr = *l.trace
	}
	*l = localPart{} // holds nothing of this check while pooled
	localParts.Put(l)
	if k == nil {
		return Result{}, false, ctx.Err()
	}
	if !decided {
		if localOnly {
			return Result{}, false, nil
		}
		// The classifier stage runs here, off the pool: it waits on the
		// network for seconds and touches no file.
		res = classify(ctx, k)
	}
	if res.Decision == DecisionUnspecified {
		// Only a cancelled context leaves the pipeline undecided.
		return Result{}, false, ctx.Err()
	}
	res.Kind, res.Policy, res.FilesUnseen, res.PolicyVersion = c.kind, p.name, c.unseen(), e.version
	if ignored > 0 {
		res.Reason += fmt.Sprintf(" (%d allow rule(s) the client sent were ignored: policy %s does not let clients allow, see client_allow_rules)", ignored, p.name)
	}
	if bypassRefused {
		res.Reason += fmt.Sprintf(" (decided as in auto mode: policy %s does not let clients use bypass mode, see client_bypass)", p.name)
	}
	if localOnly && tr == nil && p.queuesForApproval(req, res) {
		return Result{}, false, nil
	}
	// The stages' decision is the trace's last stage; the unattended step
	// comes after it.
	staged := res
	res, step, err := e.unattended(ctx, p, req, res, tr != nil)
	if err != nil {
		return Result{}, false, err
	}
	if tr != nil {
		tr.finish(staged, !decided)
		tr.last(req, step)
		if tr.Facts != nil {
			if ignored > 0 {
				tr.Facts.Notes = append(tr.Facts.Notes, fmt.Sprintf("%d allow rule(s) the request brought were ignored: policy %s does not let clients allow", ignored, p.name))
			}
			if bypassRefused {
				tr.Facts.Notes = append(tr.Facts.Notes, fmt.Sprintf("the request asked for bypass mode, which policy %s does not let clients use: decided as in auto mode", p.name))
			}
		}
	}
	return res, true, nil
}

// localPart is a check's local part: facts, then every stage but the
// classifier. It is where a check touches the file system, so it runs on
// the pool; it writes only its own fields, which the caller reads only
// after the pool's run returned nil. It and its job are reused
// (localParts) once the run returned nil; never after the caller gave up
// on it, as its worker may still be writing it.
type localPart struct {
	job localJob
	e   *Engine
	ctx context.Context
	req *Request
	p   *policy
	set *rules.Set
	// What run found: the facts, the check for the classifier stage (nil
	// when the facts were cut short), and the local stages' decision.
	c       *call
	k       *check
	res     Result
	decided bool
	// trace, when not nil, records the stages and facts (Explain).
	trace *Trace
}

func (l *localPart) run() {
	if hook := testHookLocal.Load(); hook != nil {
		(*hook)(l.req)
	}
	c := l.e.analyse(l.ctx, l.req, l.p)
	if c.subjects != nil {
		c.rc.MemoizeWith(c.subjects)
	} else {
		c.rc.Memoize()
	}
	l.c = c
	if l.ctx.Err() != nil && cutShort(c) {
		return // the facts were cut short: nothing is decided from them
	}
	l.k = newCheck(l.e, l.req, l.p, l.set, c)
	l.k.trace = l.trace
	l.res, l.decided = l.k.decideLocal(l.ctx)
	if l.trace != nil {
		l.trace.facts(l.k)
	}
}

// localParts are localParts whose runs ended: one is taken per check.
var localParts = sync.Pool{New: func() any { return new(localPart) }}

// testHookLocal, when set by a test, runs first in every check's local
// part: where a stalled system call would block.
// (Atomic: a stuck worker may read it as a test ends.)
var testHookLocal atomic.Pointer[func(*Request)]

// fsUnanswered answers a check whose local part did not run to its end:
// the file system did not answer in time, or every worker was busy. It
// asks, and does not go to the classifier: the facts were never found, so
// the deny rules, the guarded files and the protected paths were not
// applied (their patterns match resolved paths), and a classifier's allow
// could overtake a deny rule the user wrote. Failing closed is the user's
// question, with the reason.
func (e *Engine) fsUnanswered(err error, p *policy, req *Request) Result {
	var why string
	if errors.Is(err, errFSTimeout) {
		why = fmt.Sprintf("the file system did not answer within %s (engine.fs_timeout): a path of the call may lead onto a mount that hangs", e.fsTimeout)
	} else {
		why = "every file-system worker is busy or held by a file system that does not answer (engine.fs_workers)"
	}
	return Result{Decision: Ask, Source: SourceFileSystem, Kind: p.vocab.Kind(req.Tool.Name), Policy: p.name, PolicyVersion: e.version,
		Reason: why + "; the call's paths were not checked, so no rule or stage decided it"}
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
