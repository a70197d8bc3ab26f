package classifier

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sony/gobreaker/v2"
)

// Errors the pool returns. They are wrapped with %w, so callers test them
// with errors.Is.
var (
	// ErrSaturated means the queue time passed with no free capacity on any
	// backend the breakers let through.
	ErrSaturated = errors.New("all classifier backends are busy")
	// ErrNoBackend means no backend can take the call: every breaker is open,
	// or every usable backend was tried in this call and failed.
	ErrNoBackend = errors.New("no classifier backend is available")
	// ErrRequestRefused, wrapped by fn's error, means the backend answered
	// but refused this request (HTTP 400, 413, 422...): it counts as a
	// healthy answer for the breaker and is not failed over.
	ErrRequestRefused = errors.New("the classifier backend refused the request")
	// ErrUnusableAnswer, wrapped by fn's error, means the backend answered
	// well-formed, but in a way this request cannot use (an allow in a
	// category the policy does not allow in): the model's judgement, not
	// the backend's health, so as with ErrRequestRefused it counts as a
	// healthy answer for the breaker and is not failed over.
	ErrUnusableAnswer = errors.New("the classifier's answer cannot be used")
)

// Defaults for the zero values of PoolConfig.
const (
	defaultPoolQueueTimeout    = time.Second
	defaultPoolBreakerFailures = 5
	defaultPoolBreakerCooldown = 10 * time.Second
)

// The breaker outcomes the pool reports that are not a backend's own error.
var (
	// errPoolCallerGone is reported for calls that ended because the caller's
	// ctx ended; the breaker excludes it so it counts neither way.
	errPoolCallerGone = errors.New("classifier pool: caller's context ended")
	// errPoolFnPanicked is reported when fn panicked or exited its goroutine,
	// so a half-open probe cannot stay "in flight" forever.
	errPoolFnPanicked = errors.New("classifier pool: backend call panicked")
)

// MemberConfig describes one backend to the pool.
type MemberConfig struct {
	// Name identifies the backend in errors and States; unique and non-empty.
	Name string
	// Priority orders backends: higher is tried first.
	Priority int
	// MaxConcurrent caps the calls in flight on this backend; must be > 0.
	MaxConcurrent int
}

// PoolConfig tunes waiting and the breakers. Zero fields take the defaults;
// negative ones are rejected.
type PoolConfig struct {
	// QueueTimeout is the longest one Do call waits for free capacity, in
	// total (default 1s).
	QueueTimeout time.Duration
	// BreakerFailures is the number of consecutive failures that opens a
	// backend's breaker (default 5).
	BreakerFailures int
	// BreakerCooldown is how long a breaker stays open before it lets one
	// probe through (default 10s).
	BreakerCooldown time.Duration
}

// poolMember is one backend's state inside the pool.
type poolMember struct {
	cfg MemberConfig
	// breaker is two-step because a call needs a slot and a breaker ticket
	// together (both taken under Pool.mu) while the outcome comes later.
	breaker *gobreaker.TwoStepCircuitBreaker[struct{}]
	// inFlight counts the slots taken; guarded by Pool.mu.
	inFlight int
	// openedAt is when the breaker last opened (UnixNano), so waiters know
	// when it will let a probe through; written from the breaker's callback.
	openedAt atomic.Int64
}

// Pool routes calls to backends by priority, capacity and breaker state.
// It starts no goroutines: a waiting call is the caller's goroutine blocked
// on a channel, bounded by QueueTimeout. Calls waiting for their first
// slot are served in arrival order: under overload, the calls that fail
// closed are those that arrived behind too long a queue, not a random few
// that kept losing the race for a freed slot.
//
// Every call into a breaker is made with mu held, so a breaker's state and
// counts read together under mu are consistent with each other and with the
// slot counts.
type Pool struct {
	mu      sync.Mutex
	members []*poolMember
	// order lists member indices by priority, highest first, then config
	// order; selection scans it.
	order []int
	// freed is closed and replaced on every slot release, waking the
	// failover attempts that wait (they do not queue: their call has had
	// its turn); a closed channel cannot lose a wake-up.
	freed chan struct{}
	// queue lists the calls waiting for their first slot, oldest first.
	// While it is not empty, only its head may take a slot for a first
	// attempt, and only the head is woken: by a release, or on becoming
	// the head. Waking every waiter for one slot only the head may take
	// would cost each release a stampede through mu.
	queue []*poolWaiter

	queueTimeout time.Duration
	cooldown     time.Duration

	// onWait, when set (tests only), is called each time a Do call is about
	// to block for capacity.
	onWait func()
}

// poolWaiter is one call's place in Pool.queue.
type poolWaiter struct {
	// ready (buffer 1) is signalled when the waiter should look again; a
	// signal sent while it is not yet blocked waits in the buffer.
	ready chan struct{}
}

// MemberState is a snapshot of one backend for metrics and tests.
type MemberState struct {
	// Name is the backend's configured name.
	Name string
	// InFlight is the number of calls running on the backend.
	InFlight int
	// Breaker is "closed", "open" or "half-open".
	Breaker string
}

// NewPool builds a pool of the members, in the order given (the index fn
// receives is into members). It rejects an empty list, empty or duplicate
// names, MaxConcurrent <= 0 and negative PoolConfig fields.
func NewPool(members []MemberConfig, cfg PoolConfig) (*Pool, error) {
	if len(members) == 0 {
		return nil, errors.New("classifier pool: no backend configured")
	}
	if cfg.QueueTimeout < 0 || cfg.BreakerFailures < 0 || cfg.BreakerCooldown < 0 {
		return nil, fmt.Errorf("classifier pool: negative setting in %+v", cfg)
	}
	if cfg.QueueTimeout == 0 {
		cfg.QueueTimeout = defaultPoolQueueTimeout
	}
	if cfg.BreakerFailures == 0 {
		cfg.BreakerFailures = defaultPoolBreakerFailures
	}
	if cfg.BreakerCooldown == 0 {
		cfg.BreakerCooldown = defaultPoolBreakerCooldown
	}
	trip := uint32(cfg.BreakerFailures)

	p := &Pool{
		members:      make([]*poolMember, len(members)),
		order:        make([]int, len(members)),
		freed:        make(chan struct{}),
		queueTimeout: cfg.QueueTimeout,
		cooldown:     cfg.BreakerCooldown,
	}
	seen := make(map[string]bool, len(members))
	for i, mc := range members {
		switch {
		case mc.Name == "":
			return nil, fmt.Errorf("classifier pool: backend %d has no name", i)
		case seen[mc.Name]:
			return nil, fmt.Errorf("classifier pool: backend name %q is used twice", mc.Name)
		case mc.MaxConcurrent <= 0:
			return nil, fmt.Errorf("classifier pool: backend %q: max concurrent must be > 0, got %d", mc.Name, mc.MaxConcurrent)
		}
		seen[mc.Name] = true
		m := &poolMember{cfg: mc}
		m.breaker = gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
			Name:        mc.Name,
			MaxRequests: 1, // half-open lets exactly one probe through
			Interval:    0, // never reset counts while closed: only consecutive failures matter
			Timeout:     cfg.BreakerCooldown,
			ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= trip },
			IsExcluded:  func(err error) bool { return errors.Is(err, errPoolCallerGone) },
			OnStateChange: func(_ string, _, to gobreaker.State) {
				// Runs under the breaker's lock (and Pool.mu): no locking here.
				if to == gobreaker.StateOpen {
					m.openedAt.Store(time.Now().UnixNano())
				}
			},
		})
		p.members[i] = m
		p.order[i] = i
	}
	slices.SortStableFunc(p.order, func(a, b int) int {
		return cmp.Compare(members[b].Priority, members[a].Priority)
	})
	return p, nil
}

// Do runs fn on one backend: the highest-priority backend whose breaker
// lets calls through and that has a free slot; among equal priorities the
// one with fewer calls in flight, then the first in config order. fn gets
// the caller's ctx and the member index, and should honour ctx.
//
// If every such backend is busy, or other calls are already waiting, Do
// waits for a slot behind them, at most QueueTimeout in total and never
// past ctx, and then returns ErrSaturated. If every
// backend's breaker is open (or a half-open one already has its probe in
// flight) it returns ErrNoBackend at once, as waiting cannot help.
//
// If fn fails while ctx is still live, the failure counts against that
// backend's breaker and Do fails over to the next usable backend not yet
// tried in this call (each backend at most once); when none is left it
// returns ErrNoBackend wrapping the last error. If ctx has ended when fn
// returns an error, the error is the caller's doing: it counts neither
// way, there is no failover, and Do returns ctx's error (wrapping fn's).
//
// Do returns the index of the member whose call succeeded, or the last one
// tried (-1 if none was), and nil, ErrSaturated, ErrNoBackend or ctx's
// error; after a failover each of these also wraps the last backend error.
func (p *Pool) Do(ctx context.Context, fn func(ctx context.Context, member int) error) (int, error) {
	tried := make([]bool, len(p.members))
	last := -1
	var lastErr error

	// One timer per Do, made on the first wait, so the queue budget is
	// shared by every wait of this call (failover included).
	var (
		timer    *time.Timer
		deadline time.Time
		expired  bool
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()

	// me is this call's place in the queue while it waits for a first slot.
	var me *poolWaiter
	defer func() {
		if me != nil {
			p.mu.Lock()
			p.leaveQueueLocked(me)
			p.mu.Unlock()
		}
	}()

	for {
		if err := ctx.Err(); err != nil {
			return last, p.wrapLast(err, last, lastErr)
		}

		p.mu.Lock()
		first := last < 0
		myTurn := !first || len(p.queue) == 0 || p.queue[0] == me
		i, done, waitable, recheck := p.acquireLocked(tried, myTurn)
		if i >= 0 {
			if me != nil {
				p.leaveQueueLocked(me)
				me = nil
			}
			p.mu.Unlock()
			tried[i] = true
			last = i
			failed, err := p.call(ctx, fn, i, done)
			if !failed {
				return i, err
			}
			lastErr = err
			continue
		}
		if !waitable {
			p.mu.Unlock()
			return last, p.wrapLast(ErrNoBackend, last, lastErr)
		}
		if first && me == nil {
			me = &poolWaiter{ready: make(chan struct{}, 1)}
			p.queue = append(p.queue, me)
		}
		// What wakes this call: its own signal if it queues, else the
		// release broadcast, captured under the lock so that a release
		// after this check cannot be missed.
		var wake <-chan struct{}
		if me != nil {
			wake = me.ready
		} else {
			wake = p.freed
		}
		p.mu.Unlock()

		now := time.Now()
		if timer == nil {
			deadline = now.Add(p.queueTimeout)
		}
		wait := deadline.Sub(now)
		if expired || wait <= 0 {
			return last, p.wrapLast(ErrSaturated, last, lastErr)
		}
		if recheck > 0 && recheck < wait {
			// An open breaker will let a probe through before the queue
			// time ends; no release would tell us, so look again then.
			wait = recheck
		}
		if timer == nil {
			timer = time.NewTimer(wait)
		} else {
			timer.Reset(wait)
		}
		if p.onWait != nil {
			p.onWait()
		}
		select {
		case <-wake:
		case <-timer.C:
			// Look once more before giving up: a slot may have freed as
			// the time ran out.
			expired = !time.Now().Before(deadline)
		case <-ctx.Done():
			return last, p.wrapLast(ctx.Err(), last, lastErr)
		}
	}
}

// acquireLocked picks a member, takes a slot and a breaker ticket on it and
// returns its index and the breaker's done callback. With no member to take
// it returns -1, whether a usable member is merely full or, if !mayTake,
// free for a call ahead in the queue (worth waiting for either way), and
// how soon an open breaker among the untried members will half-open (0 if
// none). p.mu must be held.
func (p *Pool) acquireLocked(tried []bool, mayTake bool) (idx int, done func(error), waitable bool, recheck time.Duration) {
	var refused []bool
	for {
		best := -1
		waitable, recheck = false, 0
		for _, i := range p.order {
			if tried[i] || (refused != nil && refused[i]) {
				continue
			}
			m := p.members[i]
			if best >= 0 && m.cfg.Priority < p.members[best].cfg.Priority {
				break // lower priorities are only for overflow
			}
			admits, open := breakerAdmits(m.breaker)
			if !admits {
				if open {
					if d := p.untilHalfOpen(m); recheck == 0 || d < recheck {
						recheck = d
					}
				}
				continue
			}
			if m.inFlight >= m.cfg.MaxConcurrent {
				waitable = true
				continue
			}
			if best < 0 || m.inFlight < p.members[best].inFlight {
				best = i
			}
		}
		if best < 0 {
			return -1, nil, waitable, recheck
		}
		if !mayTake {
			return -1, nil, true, 0
		}
		done, err := p.members[best].breaker.Allow()
		if err != nil {
			// Cannot happen while every breaker call holds p.mu; if it does,
			// skip the member rather than run a call the breaker refused.
			if refused == nil {
				refused = make([]bool, len(p.members))
			}
			refused[best] = true
			continue
		}
		p.members[best].inFlight++
		return best, done, false, 0
	}
}

// breakerAdmits tells, without taking the half-open probe ticket, whether
// the breaker would let a call through now, and whether it is open.
func breakerAdmits(b *gobreaker.TwoStepCircuitBreaker[struct{}]) (admits, open bool) {
	switch b.State() {
	case gobreaker.StateClosed:
		return true, false
	case gobreaker.StateOpen:
		return false, true
	default:
		// Half-open with MaxRequests 1: usable only while no probe is in
		// flight (excluded calls give their ticket back).
		c := b.Counts()
		return c.Requests <= c.TotalExclusions, false
	}
}

// untilHalfOpen estimates how long m's open breaker stays open, rounded up
// a little because gobreaker switches only strictly after the cooldown.
func (p *Pool) untilHalfOpen(m *poolMember) time.Duration {
	d := time.Until(time.Unix(0, m.openedAt.Load()).Add(p.cooldown)) + time.Millisecond
	if d < time.Millisecond {
		d = time.Millisecond
	}
	return d
}

// call runs fn on member i, whose slot and breaker ticket the caller holds,
// and releases both even if fn panics. failed reports a backend failure
// (counted, worth failing over); err is what Do should return otherwise.
func (p *Pool) call(ctx context.Context, fn func(context.Context, int) error, i int, done func(error)) (failed bool, err error) {
	report := errPoolFnPanicked // kept only if fn does not return
	defer func() { p.release(i, done, report) }()

	err = fn(ctx, i)
	switch {
	case err == nil:
		report = nil
		return false, nil
	case ctx.Err() != nil:
		// The caller's deadline or cancel ended the call: not the
		// backend's fault, and no time is left to fail over in.
		report = errPoolCallerGone
		if errors.Is(err, ctx.Err()) {
			return false, err
		}
		return false, fmt.Errorf("%w (backend %s: %w)", ctx.Err(), p.members[i].cfg.Name, err)
	case errors.Is(err, ErrRequestRefused), errors.Is(err, ErrUnusableAnswer):
		report = nil
		return false, err
	default:
		report = err
		return true, err
	}
}

// release reports the outcome to member i's breaker, frees its slot and
// wakes every waiter. Doing both under p.mu keeps breaker state and slot
// counts consistent for selection.
func (p *Pool) release(i int, done func(error), report error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	done(report)
	p.members[i].inFlight--
	close(p.freed)
	p.freed = make(chan struct{})
	p.wakeHeadLocked()
}

// wakeHeadLocked signals the queue's head, if any, to look again. p.mu
// must be held.
func (p *Pool) wakeHeadLocked() {
	if len(p.queue) > 0 {
		select {
		case p.queue[0].ready <- struct{}{}:
		default: // already signalled
		}
	}
}

// leaveQueueLocked takes w out of the queue. If w was its head, the next
// call is the head now and may take a free slot (w may have just taken one
// of several), so it is woken. p.mu must be held.
func (p *Pool) leaveQueueLocked(w *poolWaiter) {
	at := slices.Index(p.queue, w)
	if at < 0 {
		return
	}
	p.queue = slices.Delete(p.queue, at, at+1)
	if at == 0 {
		p.wakeHeadLocked()
	}
}

// wrapLast adds the last backend error, if any, to the sentinel so logs say
// why failover ran out.
func (p *Pool) wrapLast(sentinel error, last int, lastErr error) error {
	if lastErr == nil || last < 0 {
		return sentinel
	}
	return fmt.Errorf("%w: last error from %s: %w", sentinel, p.members[last].cfg.Name, lastErr)
}

// States returns a snapshot of every member, in config order.
func (p *Pool) States() []MemberState {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]MemberState, len(p.members))
	for i, m := range p.members {
		out[i] = MemberState{
			Name:     m.cfg.Name,
			InFlight: m.inFlight,
			Breaker:  m.breaker.State().String(),
		}
	}
	return out
}
