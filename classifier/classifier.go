package classifier

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/openai/openai-go/v3/option"
	"go.uber.org/zap"
	"golang.org/x/sync/singleflight"

	"github.com/toolgate/toolgate/classifier/policy"
	"github.com/toolgate/toolgate/engine"
	"github.com/toolgate/toolgate/redact"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolgate/toolgate/internal/sessionblocks"
)

// maxReasonChars caps the reason shown to the agent.
const maxReasonChars = 300

// Classifier implements engine.Classifier.
type Classifier struct {
	cfg        Config
	log        *zap.Logger
	rules      map[string]*instructions // by policy name
	promptOpts PromptOptions
	backends   []*backend
	pool       *Pool
	cache      *lru.Cache[string, cached]
	flight     singleflight.Group
	sessions   *sessionblocks.Sessions
	dump       *dumper
	metrics    *Metrics // nil: none
	tracer     trace.Tracer
	keys       []string // the backends' API keys, masked in what the agent sees
}

var _ engine.Classifier = (*Classifier)(nil)

// Option adjusts a Classifier.
type Option func(*options)

type options struct {
	httpClient option.HTTPClient
	metrics    *Metrics
	tracer     trace.TracerProvider
}

// WithHTTPClient makes every backend use hc (tests, proxies).
func WithHTTPClient(hc option.HTTPClient) Option { return func(o *options) { o.httpClient = hc } }

// New builds a classifier. rules are the policies' natural-language rules
// by policy name; a policy without an entry gets none.
func New(cfg Config, rules map[string]Rules, log *zap.Logger, opts ...Option) (*Classifier, error) {
	cfg.WithBackendDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !cfg.Enabled() {
		return nil, errors.New("classifier: no backends configured")
	}
	if log == nil {
		log = zap.NewNop()
	}
	var o options
	for _, f := range opts {
		f(&o)
	}
	c := &Classifier{cfg: cfg, log: log, rules: make(map[string]*instructions, len(rules)), metrics: o.metrics, tracer: tracerOf(o.tracer)}
	for name, r := range rules {
		if err := r.Validate(); err != nil {
			return nil, fmt.Errorf("policies.%s.auto_mode: %w", name, err)
		}
		c.rules[name] = compileInstructions(r)
	}
	c.promptOpts = DefaultPromptOptions()
	c.promptOpts.MaxActionBytes = cfg.MaxActionBytes
	members := make([]MemberConfig, len(cfg.Backends))
	for i, b := range cfg.Backends {
		c.backends = append(c.backends, newBackend(b, cfg.TwoStage, cfg.MaxTokens, o.httpClient))
		members[i] = MemberConfig{Name: b.Name, Priority: b.Priority, MaxConcurrent: b.MaxConcurrent}
	}
	var err error
	c.pool, err = NewPool(members, PoolConfig{QueueTimeout: cfg.QueueTimeout, BreakerFailures: cfg.Breaker.Failures, BreakerCooldown: cfg.Breaker.Cooldown})
	if err != nil {
		return nil, fmt.Errorf("classifier.backends: %w", err)
	}
	if cfg.CacheOn() {
		if c.cache, err = lru.New[string, cached](cfg.Cache.Size); err != nil {
			return nil, err
		}
	}
	if c.sessions, err = sessionblocks.New(cfg.SessionBlockLimits); err != nil {
		return nil, fmt.Errorf("classifier.session_block_limits: %w", err)
	}
	for _, b := range cfg.Backends {
		if k := os.Getenv(b.APIKeyEnv); k != "" {
			c.keys = append(c.keys, k)
		}
	}
	if cfg.DumpFile != "" {
		if c.dump, err = openDump(cfg.DumpFile, c.keys, log, c.metrics.dumpFailed); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// cached is a cache entry. Expiry is checked on read rather than by the
// expirable LRU, whose purge goroutine cannot be stopped: a hot reload
// builds a new classifier and the old one must leave nothing running.
type cached struct {
	o       outcome
	expires time.Time
}

func (c *Classifier) cached(key string) (outcome, bool) {
	e, ok := c.cache.Get(key)
	if !ok {
		return outcome{}, false
	}
	if time.Now().After(e.expires) {
		c.cache.Remove(key)
		return outcome{}, false
	}
	return e.o, true
}

// Close releases the dump file, if any: what is queued for it is written
// first, within a bound.
func (c *Classifier) Close() error { return c.dump.close() }

// ReopenDump reopens the dump file, if any (SIGHUP: an admin's rotation);
// it waits for the file's writer at most a second.
func (c *Classifier) ReopenDump() error { return c.dump.reopen() }

// Pool exposes the backend pool (for metrics).
func (c *Classifier) Pool() *Pool { return c.pool }

// Classify asks the model whether the call should be blocked. A panic
// anywhere in it, or in the coalesced call it waits for, becomes an error
// (errInternal): the check fails closed and the process keeps running.
func (c *Classifier) Classify(ctx context.Context, in *engine.ClassifyInput) (v engine.Verdict, err error) {
	defer func() {
		if r := recover(); r != nil {
			perr := c.recovered("classify", r)
			v, err = engine.Verdict{}, &engine.ClassifierError{Err: perr, Reason: perr.Error()}
		}
	}()
	if in == nil || in.Request == nil {
		return engine.Verdict{}, &engine.ClassifierError{Err: errNoRequest, Reason: errNoRequest.Error()}
	}
	sess := c.sessions.Get(in.Request.SessionID)
	if reason, over := sess.Over(); over {
		return engine.Verdict{Decision: engine.Ask, Reason: reason}, nil
	}
	ins := c.rules[in.Policy]
	if ins == nil {
		ins = emptyInstructions()
	}
	p := buildPrompt(ins, in.Request, in.Kind, in.Notes, c.promptOpts)
	key := p.Key()
	if c.cache != nil {
		if o, ok := c.cached(key); ok {
			c.metrics.cacheHit()
			sess.Record(o.Block)
			v := c.verdict(o, 0, p)
			v.Cached, v.Details.Cached = true, true
			return v, nil
		}
	}
	start := time.Now()
	o, err := c.run(ctx, key, p)
	latency := time.Since(start)
	// A record not written is counted and reported (rate-limited) by the
	// dump itself.
	_ = c.dump.write(key, p, o, err, latency)
	if err != nil {
		if ctx.Err() != nil {
			return engine.Verdict{}, ctx.Err()
		}
		// The agent sees a cleaned, capped reason: upstream error text can
		// echo parts of the prompt, name internal hosts or quote a URL
		// with a key in it.
		return engine.Verdict{}, &engine.ClassifierError{Err: err, Reason: SanitizeReason(redact.String(err.Error(), c.keys...), maxReasonChars), Details: details(o, latency)}
	}
	if c.cache != nil {
		c.cache.Add(key, cached{o: o, expires: time.Now().Add(c.cfg.Cache.TTL)})
	}
	sess.Record(o.Block)
	return c.verdict(o, latency, p), nil
}

// verdict turns the model's answer into a decision. An allow of an input
// the model saw only in part becomes ask: what it did not see (the end of
// a long command, say) may be what matters.
func (c *Classifier) verdict(o outcome, latency time.Duration, p Prompt) engine.Verdict {
	inputCut := p.InputCut
	reason := SanitizeReason(o.Reason, maxReasonChars)
	switch {
	case reason == "" && o.Block:
		reason = "the classifier blocked this action"
	case reason == "":
		reason = "the classifier allowed this action"
	}
	d := engine.Allow
	switch {
	case o.Block:
		d = engine.Deny
	case inputCut:
		d = engine.Ask
		reason = "the classifier saw only the first part of this call's input and allowed that; asking, as the rest was not judged"
	}
	v := engine.Verdict{Decision: d, Reason: reason, Details: details(o, latency)}
	if k, ok := p.instructions().kind(o.Category); ok {
		v.Details.Category, v.Details.CategoryKind = o.Category, string(k)
	} else {
		v.Details.Category = policy.Unknown
	}
	c.metrics.decided(v.Details.Category, d)
	return v
}

func details(o outcome, latency time.Duration) *engine.ClassifierDetails {
	return &engine.ClassifierDetails{
		Backend: o.backend, Model: o.model, Stage: o.stage, LatencyMicro: latency.Microseconds(),
		InputTokens: o.tokens.in, OutputTokens: o.tokens.out, CachedInputTokens: o.tokens.cached,
	}
}

// run queries the pool, sharing one upstream call among identical prompts
// in flight. The shared call is detached from the first caller's
// cancellation and deadline (a joiner must not fail by another caller's
// short deadline); query bounds it by the classifier timeout, and each
// caller stops waiting at its own deadline.
func (c *Classifier) run(ctx context.Context, key string, p Prompt) (outcome, error) {
	if !c.cfg.CoalesceOn() {
		return c.safeQuery(ctx, p)
	}
	// The shared call runs on a goroutine of its own, where singleflight
	// re-panics what fn does not recover, out of any caller's reach: so
	// safeQuery recovers it, and every waiter gets the error.
	ch := c.flight.DoChan(key, func() (any, error) {
		return c.safeQuery(context.WithoutCancel(ctx), p)
	})
	select {
	case r := <-ch:
		o, _ := r.Val.(outcome)
		return o, r.Err
	case <-ctx.Done():
		return outcome{}, ctx.Err()
	}
}

// errInternal is what a panic in the classification path becomes.
var errInternal = errors.New("internal error in the classifier")

// errNoRequest answers a ClassifyInput without a request.
var errNoRequest = errors.New("the classifier got no request to judge")

// backendPanic carries a panic out of a backend call, where it was
// counted, to the recover in safeQuery.
type backendPanic struct {
	backend string
	value   any
	stack   []byte
}

// Error describes the panic should it ever escape.
func (p backendPanic) Error() string {
	return fmt.Sprintf("panic in a call to classifier backend %s: %v", p.backend, p.value)
}

// recovered turns a recovered panic into errInternal: it logs the panic
// with its stack and counts it unless a backend call already did.
func (c *Classifier) recovered(where string, r any) error {
	stack := debug.Stack()
	if bp, ok := r.(backendPanic); ok {
		where, r, stack = "backend "+bp.backend, bp.value, bp.stack
	} else {
		c.metrics.panicked()
	}
	c.log.Error("classifier panic recovered; the check fails closed",
		zap.String("where", where),
		zap.String("panic", redact.String(promptCutRunes(fmt.Sprint(r), 500), c.keys...)),
		zap.ByteString("stack", stack))
	return fmt.Errorf("%w (%s)", errInternal, where)
}

// safeQuery is query with its panics recovered into errInternal.
func (c *Classifier) safeQuery(ctx context.Context, p Prompt) (o outcome, err error) {
	defer func() {
		if r := recover(); r != nil {
			o, err = outcome{}, c.recovered("classification", r)
		}
	}()
	return c.query(ctx, p)
}

// query runs one classification under the classifier's own deadline. A
// panic in a backend call is counted under the backend and goes on up,
// through the pool (which frees the slot and counts a failure on the
// breaker) to safeQuery: the check fails closed, without failing over, as
// a panic is a bug on this side, not an answer from the backend.
func (c *Classifier) query(ctx context.Context, p Prompt) (outcome, error) {
	qctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	var mu sync.Mutex
	var last outcome
	var calls int
	var busy time.Duration // in backend calls; the rest of Do is queueing
	start := time.Now()
	_, err := c.pool.Do(qctx, func(actx context.Context, i int) error {
		name := c.backends[i].cfg.Name
		record := c.metrics.backendCall(name)
		actx, span := c.tracer.Start(actx, callSpanName, trace.WithAttributes(
			attribute.String("toolgate.classifier.backend", name), attribute.String("toolgate.classifier.model", c.backends[i].cfg.Model)))
		callStart := time.Now()
		o, err := outcome{}, errCallDidNotReturn
		defer func() {
			r := recover()
			if r != nil {
				err = errInternal
			}
			record(actx, o, err)
			endCallSpan(span, callOutcome(actx, o, err), err != nil)
			mu.Lock()
			calls++
			busy += time.Since(callStart)
			mu.Unlock()
			if r != nil {
				panic(backendPanic{backend: name, value: r, stack: debug.Stack()})
			}
		}()
		o, err = c.backends[i].classify(actx, p)
		mu.Lock()
		last = o
		mu.Unlock()
		if err != nil {
			return fmt.Errorf("backend %s: %w", name, err)
		}
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	c.metrics.poolResult(err, calls > 0, time.Since(start)-busy)
	if err != nil && ctx.Err() == nil && errors.Is(qctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("no verdict within the classifier deadline of %s: %w", c.cfg.Timeout, err)
	}
	return last, err
}
