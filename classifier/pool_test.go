package classifier

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// errPoolTestBoom is the backend failure the tests inject.
var errPoolTestBoom = errors.New("backend down")

// poolTestLimit bounds every wait in these tests, so a hang fails instead of
// blocking the run.
const poolTestLimit = 5 * time.Second

func newTestPool(t *testing.T, members []MemberConfig, cfg PoolConfig) *Pool {
	t.Helper()
	p, err := NewPool(members, cfg)
	if err != nil {
		t.Fatalf("NewPool: %v", err)
	}
	return p
}

// doResult is what one Do call returned.
type doResult struct {
	member int
	err    error
}

// heldCall is a Do call whose fn is parked until the test releases it.
type heldCall struct {
	member  int
	release chan func() error // fn returns what this function returns (or panics)
	result  chan doResult
}

// startHeld starts Do in a goroutine and waits until its fn runs and parks.
// fail, if not nil, makes fn fail at once on the members it picks, so a held
// call can also fail over before parking.
func startHeld(t *testing.T, p *Pool, ctx context.Context, fail func(member int) bool) *heldCall {
	t.Helper()
	h := &heldCall{release: make(chan func() error, 1), result: make(chan doResult, 1)}
	started := make(chan int, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				h.result <- doResult{-2, fmt.Errorf("panic: %v", r)}
			}
		}()
		m, err := p.Do(ctx, func(_ context.Context, member int) error {
			if fail != nil && fail(member) {
				return errPoolTestBoom
			}
			started <- member
			return (<-h.release)()
		})
		h.result <- doResult{m, err}
	}()
	// Let fn return if the test stops early, so no goroutine stays parked.
	t.Cleanup(func() {
		select {
		case h.release <- func() error { return nil }:
		default:
		}
	})
	select {
	case h.member = <-started:
	case r := <-h.result:
		t.Fatalf("Do returned (%d, %v) before its fn parked", r.member, r.err)
	case <-time.After(poolTestLimit):
		t.Fatal("held fn did not start")
	}
	return h
}

// finish lets the parked fn return ret() and waits for Do's result.
func (h *heldCall) finish(t *testing.T, ret func() error) doResult {
	t.Helper()
	h.release <- ret
	return waitResult(t, h.result)
}

func returns(err error) func() error { return func() error { return err } }

func waitResult(t *testing.T, ch <-chan doResult) doResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(poolTestLimit):
		t.Fatal("Do did not return")
		return doResult{}
	}
}

// goDo runs Do in a goroutine with fn and returns where its result arrives.
func goDo(p *Pool, ctx context.Context, fn func(context.Context, int) error) <-chan doResult {
	ch := make(chan doResult, 1)
	go func() {
		m, err := p.Do(ctx, fn)
		ch <- doResult{m, err}
	}()
	return ch
}

// watchWaits makes p report on the returned channel each time a Do call is
// about to block for capacity.
func watchWaits(p *Pool) <-chan struct{} {
	ch := make(chan struct{}, 64)
	p.onWait = func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	return ch
}

func awaitWaits(t *testing.T, ch <-chan struct{}, n int) {
	t.Helper()
	for range n {
		select {
		case <-ch:
		case <-time.After(poolTestLimit):
			t.Fatalf("fewer than %d Do calls started waiting", n)
		}
	}
}

func breakerOf(p *Pool, i int) string { return p.States()[i].Breaker }

// callLog records the members fn was called with.
type callLog struct {
	mu    sync.Mutex
	calls []int
}

func (l *callLog) add(m int) {
	l.mu.Lock()
	l.calls = append(l.calls, m)
	l.mu.Unlock()
}

func (l *callLog) get() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.calls)
}

func failing(log *callLog) func(context.Context, int) error {
	return func(_ context.Context, m int) error {
		log.add(m)
		return errPoolTestBoom
	}
}

func succeeding(log *callLog) func(context.Context, int) error {
	return func(_ context.Context, m int) error {
		log.add(m)
		return nil
	}
}

func TestNewPoolValidation(t *testing.T) {
	ok := MemberConfig{Name: "a", Priority: 1, MaxConcurrent: 1}
	tests := []struct {
		name    string
		members []MemberConfig
		cfg     PoolConfig
		wantErr string // "" means valid
	}{
		{"valid", []MemberConfig{ok, {Name: "b", MaxConcurrent: 3}}, PoolConfig{}, ""},
		{"no members", nil, PoolConfig{}, "no backend"},
		{"empty name", []MemberConfig{ok, {MaxConcurrent: 1}}, PoolConfig{}, "no name"},
		{"duplicate name", []MemberConfig{ok, ok}, PoolConfig{}, "used twice"},
		{"zero max concurrent", []MemberConfig{{Name: "a"}}, PoolConfig{}, "max concurrent"},
		{"negative max concurrent", []MemberConfig{{Name: "a", MaxConcurrent: -1}}, PoolConfig{}, "max concurrent"},
		{"negative queue timeout", []MemberConfig{ok}, PoolConfig{QueueTimeout: -time.Second}, "negative"},
		{"negative breaker failures", []MemberConfig{ok}, PoolConfig{BreakerFailures: -1}, "negative"},
		{"negative breaker cooldown", []MemberConfig{ok}, PoolConfig{BreakerCooldown: -time.Second}, "negative"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewPool(tc.members, tc.cfg)
			if tc.wantErr == "" {
				if err != nil || p == nil {
					t.Fatalf("NewPool = %v, %v; want a pool", p, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("NewPool error = %v, want one containing %q", err, tc.wantErr)
			}
			if p != nil {
				t.Fatal("NewPool returned a pool with its error")
			}
		})
	}
}

func TestNewPoolDefaultsAndStates(t *testing.T) {
	p := newTestPool(t, []MemberConfig{{Name: "a", MaxConcurrent: 1}, {Name: "b", MaxConcurrent: 2}}, PoolConfig{})
	if p.queueTimeout != time.Second || p.cooldown != 10*time.Second {
		t.Fatalf("defaults: queue %v cooldown %v, want 1s and 10s", p.queueTimeout, p.cooldown)
	}
	want := []MemberState{{Name: "a", Breaker: "closed"}, {Name: "b", Breaker: "closed"}}
	if got := p.States(); !slices.Equal(got, want) {
		t.Fatalf("States = %+v, want %+v", got, want)
	}
	// The default trips after five consecutive failures, not four.
	var log callLog
	for range 4 {
		p.Do(context.Background(), failing(&log))
	}
	if got := breakerOf(p, 0); got != "closed" {
		t.Fatalf("after 4 failures breaker a is %q, want closed", got)
	}
	p.Do(context.Background(), failing(&log))
	if got := breakerOf(p, 0); got != "open" {
		t.Fatalf("after 5 failures breaker a is %q, want open", got)
	}
}

func TestPoolSelection(t *testing.T) {
	tests := []struct {
		name    string
		members []MemberConfig
		want    []int // member of each successive held call
	}{
		{
			name:    "higher priority first, overflow to lower",
			members: []MemberConfig{{Name: "low", Priority: 1, MaxConcurrent: 1}, {Name: "high", Priority: 10, MaxConcurrent: 1}},
			want:    []int{1, 0},
		},
		{
			name:    "higher priority until full",
			members: []MemberConfig{{Name: "low", Priority: 1, MaxConcurrent: 2}, {Name: "high", Priority: 10, MaxConcurrent: 2}},
			want:    []int{1, 1, 0, 0},
		},
		{
			name:    "equal priority balances by in-flight, ties in config order",
			members: []MemberConfig{{Name: "a", Priority: 5, MaxConcurrent: 3}, {Name: "b", Priority: 5, MaxConcurrent: 3}},
			want:    []int{0, 1, 0, 1, 0, 1},
		},
		{
			name:    "balance only on the uneven tie, then overflow",
			members: []MemberConfig{{Name: "a", Priority: 5, MaxConcurrent: 1}, {Name: "b", Priority: 5, MaxConcurrent: 3}, {Name: "c", Priority: 1, MaxConcurrent: 1}},
			want:    []int{0, 1, 1, 1, 2},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// The saturated call waits out its queue time on the fake clock.
			synctest.Test(t, func(t *testing.T) {
				p := newTestPool(t, tc.members, PoolConfig{QueueTimeout: 50 * time.Millisecond})
				var held []*heldCall
				for step, want := range tc.want {
					h := startHeld(t, p, context.Background(), nil)
					if h.member != want {
						t.Fatalf("call %d went to member %d, want %d", step, h.member, want)
					}
					held = append(held, h)
				}
				// Everything is full now: one more call must saturate.
				if _, err := p.Do(context.Background(), succeeding(new(callLog))); !errors.Is(err, ErrSaturated) {
					t.Fatalf("Do on a full pool = %v, want ErrSaturated", err)
				}
				for _, h := range held {
					if r := h.finish(t, returns(nil)); r.err != nil || r.member != h.member {
						t.Fatalf("held call = (%d, %v), want (%d, nil)", r.member, r.err, h.member)
					}
				}
				for _, s := range p.States() {
					if s.InFlight != 0 {
						t.Fatalf("States after release: %+v", p.States())
					}
				}
			})
		})
	}
}

func TestPoolBalancesAfterRelease(t *testing.T) {
	p := newTestPool(t, []MemberConfig{{Name: "a", Priority: 5, MaxConcurrent: 3}, {Name: "b", Priority: 5, MaxConcurrent: 3}}, PoolConfig{})
	a1 := startHeld(t, p, context.Background(), nil) // a
	b1 := startHeld(t, p, context.Background(), nil) // b
	a2 := startHeld(t, p, context.Background(), nil) // a: 2 vs 1
	if a1.member != 0 || b1.member != 1 || a2.member != 0 {
		t.Fatalf("setup went to %d,%d,%d", a1.member, b1.member, a2.member)
	}
	a1.finish(t, returns(nil))
	a2.finish(t, returns(nil)) // a: 0, b: 1
	if h := startHeld(t, p, context.Background(), nil); h.member != 0 {
		t.Fatalf("call went to %d, want the emptier member 0", h.member)
	}
}

// TestPoolSaturationTimesOut: a call finding every slot taken waits its
// queue time, on the fake clock of a synctest bubble, then saturates.
func TestPoolSaturationTimesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const queue = 50 * time.Millisecond
		p := newTestPool(t, []MemberConfig{{Name: "a", MaxConcurrent: 1}}, PoolConfig{QueueTimeout: queue})
		startHeld(t, p, context.Background(), nil)

		var log callLog
		start := time.Now()
		m, err := p.Do(context.Background(), succeeding(&log))
		elapsed := time.Since(start)
		if !errors.Is(err, ErrSaturated) || m != -1 {
			t.Fatalf("Do = (%d, %v), want (-1, ErrSaturated)", m, err)
		}
		if elapsed != queue {
			t.Fatalf("ErrSaturated after %v, want after the %v queue timeout", elapsed, queue)
		}
		if got := log.get(); len(got) != 0 {
			t.Fatalf("fn called with %v on a saturated pool", got)
		}
	})
}

func TestPoolWaiterGetsFreedSlot(t *testing.T) {
	p := newTestPool(t, []MemberConfig{{Name: "a", MaxConcurrent: 1}}, PoolConfig{QueueTimeout: time.Minute})
	waits := watchWaits(p)
	h := startHeld(t, p, context.Background(), nil)

	var log callLog
	res := goDo(p, context.Background(), succeeding(&log))
	awaitWaits(t, waits, 1)
	h.finish(t, returns(nil))
	if r := waitResult(t, res); r.err != nil || r.member != 0 {
		t.Fatalf("waiter = (%d, %v), want (0, nil)", r.member, r.err)
	}
	if got := log.get(); !slices.Equal(got, []int{0}) {
		t.Fatalf("waiter's fn calls = %v", got)
	}
}

func TestPoolTwoReleasesWakeTwoWaiters(t *testing.T) {
	p := newTestPool(t, []MemberConfig{{Name: "a", MaxConcurrent: 2}}, PoolConfig{QueueTimeout: time.Minute})
	// Park both waiters in the gap between their capacity check and their
	// block, and free both slots there: the worst case for a lost wake-up.
	waits := make(chan struct{}, 64)
	gate := make(chan struct{})
	var openGate sync.Once
	defer openGate.Do(func() { close(gate) })
	p.onWait = func() {
		waits <- struct{}{}
		<-gate
	}
	h1 := startHeld(t, p, context.Background(), nil)
	h2 := startHeld(t, p, context.Background(), nil)

	// The waiters' own calls stay in flight until both have started, so a
	// finished waiter's release cannot wake the other and hide a lost wake-up.
	started := make(chan int, 2)
	hold := make(chan struct{})
	defer func() {
		select {
		case <-hold:
		default:
			close(hold)
		}
	}()
	parked := func(_ context.Context, m int) error {
		started <- m
		<-hold
		return nil
	}
	res1 := goDo(p, context.Background(), parked)
	res2 := goDo(p, context.Background(), parked)
	awaitWaits(t, waits, 2) // both are parked in the hook, so these are two distinct waiters

	if r := h1.finish(t, returns(nil)); r.err != nil {
		t.Fatalf("held call: %v", r.err)
	}
	if r := h2.finish(t, returns(nil)); r.err != nil {
		t.Fatalf("held call: %v", r.err)
	}
	openGate.Do(func() { close(gate) })
	for range 2 {
		select {
		case <-started:
		case <-time.After(poolTestLimit):
			t.Fatal("two slots freed but fewer than two waiters got one")
		}
	}
	close(hold)
	for _, res := range []<-chan doResult{res1, res2} {
		if r := waitResult(t, res); r.err != nil || r.member != 0 {
			t.Fatalf("waiter = (%d, %v), want (0, nil)", r.member, r.err)
		}
	}
}

// TestPoolServesWaitersInOrder: calls waiting for a first slot get one in
// arrival order, and a call arriving while they wait does not jump ahead
// even when it finds a slot free.
func TestPoolServesWaitersInOrder(t *testing.T) {
	p := newTestPool(t, []MemberConfig{{Name: "a", MaxConcurrent: 1}}, PoolConfig{QueueTimeout: time.Minute})
	// Waiters park in the hook, between queueing and blocking, until the
	// gate opens: the slot is free then, and only the queue keeps order.
	waits := make(chan struct{}, 256)
	gate := make(chan struct{})
	var openGate sync.Once
	defer openGate.Do(func() { close(gate) })
	p.onWait = func() {
		select {
		case waits <- struct{}{}:
		default:
		}
		<-gate
	}
	h := startHeld(t, p, context.Background(), nil)

	var order callLog
	logAs := func(k int) func(context.Context, int) error {
		return func(context.Context, int) error { order.add(k); return nil }
	}
	var results []<-chan doResult
	for k := range 5 {
		results = append(results, goDo(p, context.Background(), logAs(k)))
		awaitWaits(t, waits, 1) // k is queued before k+1 arrives
	}
	if r := h.finish(t, returns(nil)); r.err != nil {
		t.Fatalf("held call: %v", r.err)
	}
	// The slot is free and every waiter is parked: a newcomer must queue.
	results = append(results, goDo(p, context.Background(), logAs(99)))
	awaitWaits(t, waits, 1)
	openGate.Do(func() { close(gate) })
	for _, res := range results {
		if r := waitResult(t, res); r.err != nil {
			t.Fatalf("waiter: %v", r.err)
		}
	}
	if got := order.get(); !slices.Equal(got, []int{0, 1, 2, 3, 4, 99}) {
		t.Fatalf("served in order %v, want arrival order [0 1 2 3 4 99]", got)
	}
	if n := len(p.queue); n != 0 {
		t.Fatalf("%d calls left in the queue", n)
	}
}

// TestPoolQueueHeadLeaving: when the call at the head of the queue gives up
// while a slot is free, the next one takes it at once rather than at the
// next release.
func TestPoolQueueHeadLeaving(t *testing.T) {
	p := newTestPool(t, []MemberConfig{{Name: "a", MaxConcurrent: 1}}, PoolConfig{QueueTimeout: time.Minute})
	// The first wait (the head's) parks in the hook until the gate opens,
	// so the head cannot take the slot when it frees.
	waits := make(chan struct{}, 256)
	gate := make(chan struct{})
	var openGate sync.Once
	defer openGate.Do(func() { close(gate) })
	var n atomic.Int32
	p.onWait = func() {
		waits <- struct{}{}
		if n.Add(1) == 1 {
			<-gate
		}
	}
	h := startHeld(t, p, context.Background(), nil)
	headCtx, cancelHead := context.WithCancel(context.Background())
	defer cancelHead()
	head := goDo(p, headCtx, func(context.Context, int) error { return nil })
	awaitWaits(t, waits, 1)
	var log callLog
	next := goDo(p, context.Background(), succeeding(&log))
	awaitWaits(t, waits, 1)

	// The slot frees while the head is parked; then the head gives up.
	// Only its leaving can tell the next call that its turn has come.
	if r := h.finish(t, returns(nil)); r.err != nil {
		t.Fatalf("held call: %v", r.err)
	}
	cancelHead()
	openGate.Do(func() { close(gate) })
	if r := waitResult(t, head); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("cancelled head = %v, want context.Canceled", r.err)
	}
	if r := waitResult(t, next); r.err != nil || !slices.Equal(log.get(), []int{0}) {
		t.Fatalf("next waiter = %v, calls %v", r.err, log.get())
	}
}

// TestPoolReleaseWakesOnlyTheHead: a freed slot wakes the queue's head,
// which takes it and hands the turn to the next call; the rest sleep on.
// Waking them all for a slot only the head may take cost throughput under
// overload. In a synctest bubble, synctest.Wait proves every waiter has
// settled before the wake-ups are counted.
func TestPoolReleaseWakesOnlyTheHead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestPool(t, []MemberConfig{{Name: "a", MaxConcurrent: 1}}, PoolConfig{QueueTimeout: time.Minute})
		var waits atomic.Int32
		p.onWait = func() { waits.Add(1) }
		h := startHeld(t, p, context.Background(), nil)

		release := make(chan struct{})
		defer close(release)
		started := make(chan struct{}, 8)
		held := func(context.Context, int) error {
			started <- struct{}{}
			<-release
			return nil
		}
		for n := int32(1); n <= 6; n++ {
			goDo(p, context.Background(), held)
			synctest.Wait() // it has queued and blocks: arrival order is n's
			if got := waits.Load(); got != n {
				t.Fatalf("%d waits after %d calls queued", got, n)
			}
		}
		if r := h.finish(t, returns(nil)); r.err != nil {
			t.Fatalf("held call: %v", r.err)
		}
		synctest.Wait() // every call the release woke has run and blocked again
		if got := len(started); got != 1 {
			t.Fatalf("%d calls took the freed slot, want the head", got)
		}
		// The new head looked once, found the slot taken and waits again.
		if got := waits.Load() - 6; got != 1 {
			t.Fatalf("one release made %d calls look again, want 1 (the new head)", got)
		}
	})
}

// TestPoolContextEndsWait: a call waiting for a slot returns when its ctx
// ends, not at the queue timeout (checked on the fake clock of a bubble).
func TestPoolContextEndsWait(t *testing.T) {
	tests := []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		want error
	}{
		{"deadline before queue timeout", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 30*time.Millisecond)
		}, context.DeadlineExceeded},
		{"already cancelled", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, cancel
		}, context.Canceled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := newTestPool(t, []MemberConfig{{Name: "a", MaxConcurrent: 1}}, PoolConfig{QueueTimeout: time.Minute})
				startHeld(t, p, context.Background(), nil)
				ctx, cancel := tc.ctx()
				defer cancel()
				ended := time.Now() // an ended ctx: Do must not wait at all
				if dl, ok := ctx.Deadline(); ok {
					ended = dl
				}
				var log callLog
				m, err := p.Do(ctx, succeeding(&log))
				if late := time.Since(ended); late > 0 {
					t.Fatalf("Do returned %v after its ctx ended", late)
				}
				if !errors.Is(err, tc.want) || errors.Is(err, ErrSaturated) || m != -1 {
					t.Fatalf("Do = (%d, %v), want (-1, %v)", m, err, tc.want)
				}
				if got := log.get(); len(got) != 0 {
					t.Fatalf("fn called with %v", got)
				}
			})
		})
	}
}

func TestPoolFailover(t *testing.T) {
	members := []MemberConfig{
		{Name: "c", Priority: 1, MaxConcurrent: 1},
		{Name: "a", Priority: 3, MaxConcurrent: 1},
		{Name: "b", Priority: 2, MaxConcurrent: 1},
	}
	memberErr := []error{errors.New("c down"), errors.New("a down"), errors.New("b down")}
	tests := []struct {
		name       string
		fail       []int
		wantCalls  []int
		wantMember int
		wantErr    error // nil, or ErrNoBackend wrapping memberErr[wantMember]
	}{
		{"first answers", nil, []int{1}, 1, nil},
		{"first fails, second answers", []int{1}, []int{1, 2}, 2, nil},
		{"two fail, third answers", []int{1, 2}, []int{1, 2, 0}, 0, nil},
		{"all fail", []int{0, 1, 2}, []int{1, 2, 0}, 0, ErrNoBackend},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newTestPool(t, members, PoolConfig{QueueTimeout: time.Minute})
			var log callLog
			m, err := p.Do(context.Background(), func(_ context.Context, m int) error {
				log.add(m)
				if slices.Contains(tc.fail, m) {
					return memberErr[m]
				}
				return nil
			})
			if got := log.get(); !slices.Equal(got, tc.wantCalls) {
				t.Fatalf("fn calls = %v, want %v (each member at most once)", got, tc.wantCalls)
			}
			if m != tc.wantMember {
				t.Fatalf("Do member = %d, want %d", m, tc.wantMember)
			}
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("Do error = %v", err)
				}
				return
			}
			if !errors.Is(err, ErrNoBackend) || !errors.Is(err, memberErr[m]) {
				t.Fatalf("Do error = %v, want ErrNoBackend wrapping %v", err, memberErr[m])
			}
			if errors.Is(err, memberErr[1]) {
				t.Fatalf("Do error = %v wraps an earlier member's error", err)
			}
		})
	}
}

func TestPoolFailoverSkipsFullMember(t *testing.T) {
	// a fails; b is full; c answers. The call must not wait for b.
	p := newTestPool(t, []MemberConfig{
		{Name: "a", Priority: 3, MaxConcurrent: 1},
		{Name: "b", Priority: 2, MaxConcurrent: 1},
		{Name: "c", Priority: 1, MaxConcurrent: 1},
	}, PoolConfig{QueueTimeout: time.Minute})
	hb := startHeld(t, p, context.Background(), func(m int) bool { return m == 0 }) // fails on a, parks on b
	if hb.member != 1 {
		t.Fatalf("held call parked on %d, want 1", hb.member)
	}
	var log callLog
	m, err := p.Do(context.Background(), func(_ context.Context, m int) error {
		log.add(m)
		if m == 0 {
			return errPoolTestBoom
		}
		return nil
	})
	if err != nil || m != 2 || !slices.Equal(log.get(), []int{0, 2}) {
		t.Fatalf("Do = (%d, %v) calls %v, want (2, nil) calls [0 2]", m, err, log.get())
	}
}

func TestPoolBreakerOpensAfterConsecutiveFailures(t *testing.T) {
	p := newTestPool(t, []MemberConfig{
		{Name: "a", Priority: 2, MaxConcurrent: 1},
		{Name: "b", Priority: 1, MaxConcurrent: 1},
	}, PoolConfig{BreakerFailures: 3, BreakerCooldown: time.Minute, QueueTimeout: time.Minute})
	failA := func(log *callLog) func(context.Context, int) error {
		return func(_ context.Context, m int) error {
			log.add(m)
			if m == 0 {
				return errPoolTestBoom
			}
			return nil
		}
	}
	var log callLog
	// Two failures, a success, two failures: never three in a row.
	p.Do(context.Background(), failA(&log))
	p.Do(context.Background(), failA(&log))
	p.Do(context.Background(), succeeding(&log))
	p.Do(context.Background(), failA(&log))
	p.Do(context.Background(), failA(&log))
	if got := breakerOf(p, 0); got != "closed" {
		t.Fatalf("breaker a = %q after non-consecutive failures, want closed", got)
	}
	p.Do(context.Background(), failA(&log))
	if got := breakerOf(p, 0); got != "open" {
		t.Fatalf("breaker a = %q after 3 consecutive failures, want open", got)
	}
	// Open: a is skipped, b serves.
	var after callLog
	for range 5 {
		if m, err := p.Do(context.Background(), succeeding(&after)); err != nil || m != 1 {
			t.Fatalf("Do with a open = (%d, %v), want (1, nil)", m, err)
		}
	}
	if got := after.get(); slices.Contains(got, 0) {
		t.Fatalf("fn called on open member a: %v", got)
	}
}

func TestPoolBreakerProbe(t *testing.T) {
	const cooldown = 50 * time.Millisecond
	tests := []struct {
		name        string
		probe       func() error
		probeCtx    bool   // cancel the probe's ctx before it returns
		wantErr     error  // what the probing Do returns (errors.Is)
		wantBreaker string // after the probe
	}{
		{"success closes", returns(nil), false, nil, "closed"},
		{"failure reopens", returns(errPoolTestBoom), false, ErrNoBackend, "open"},
		{"caller cancel leaves it half-open", func() error { return context.Canceled }, true, context.Canceled, "half-open"},
		{"panic reopens", func() error { panic("probe exploded") }, false, nil, "open"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := newTestPool(t, []MemberConfig{{Name: "a", MaxConcurrent: 4}},
					PoolConfig{BreakerFailures: 2, BreakerCooldown: cooldown, QueueTimeout: time.Minute})
				var log callLog
				for range 2 {
					if _, err := p.Do(context.Background(), failing(&log)); !errors.Is(err, ErrNoBackend) || !errors.Is(err, errPoolTestBoom) {
						t.Fatalf("failing Do = %v, want ErrNoBackend wrapping the backend error", err)
					}
				}
				if got := breakerOf(p, 0); got != "open" {
					t.Fatalf("breaker = %q after 2 failures, want open", got)
				}
				var skipped callLog
				if _, err := p.Do(context.Background(), succeeding(&skipped)); !errors.Is(err, ErrNoBackend) || len(skipped.get()) != 0 {
					t.Fatalf("Do while open = %v with calls %v, want ErrNoBackend and no call", err, skipped.get())
				}

				// The cooldown runs on the fake clock: open to its last
				// nanosecond, half-open after it.
				time.Sleep(cooldown - time.Nanosecond) // synctest: the fake clock, no real wait
				if got := breakerOf(p, 0); got != "open" {
					t.Fatalf("breaker = %q before its cooldown ended, want open", got)
				}
				time.Sleep(2 * time.Nanosecond) // synctest: the fake clock
				if got := breakerOf(p, 0); got != "half-open" {
					t.Fatalf("breaker = %q after its cooldown, want half-open", got)
				}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				probe := startHeld(t, p, ctx, nil)
				// Only one probe: while it runs, other calls are turned away
				// even though slots are free.
				if _, err := p.Do(context.Background(), succeeding(&skipped)); !errors.Is(err, ErrNoBackend) || len(skipped.get()) != 0 {
					t.Fatalf("Do during probe = %v with calls %v, want ErrNoBackend and no call", err, skipped.get())
				}
				if tc.probeCtx {
					cancel()
				}
				r := probe.finish(t, tc.probe)
				if tc.name == "panic reopens" {
					if r.member != -2 || !strings.Contains(r.err.Error(), "probe exploded") {
						t.Fatalf("probe = (%d, %v), want the panic to reach the caller", r.member, r.err)
					}
				} else if !errors.Is(r.err, tc.wantErr) || (tc.wantErr == nil && r.err != nil) {
					t.Fatalf("probe Do = (%d, %v), want %v", r.member, r.err, tc.wantErr)
				}
				if got := breakerOf(p, 0); got != tc.wantBreaker {
					t.Fatalf("breaker after probe = %q, want %q", got, tc.wantBreaker)
				}
				if got := p.States()[0].InFlight; got != 0 {
					t.Fatalf("in flight after probe = %d", got)
				}
				if tc.wantBreaker == "half-open" {
					// The cancelled probe gave its ticket back: a new probe runs.
					if m, err := p.Do(context.Background(), succeeding(&log)); err != nil || m != 0 {
						t.Fatalf("second probe = (%d, %v), want (0, nil)", m, err)
					}
					if got := breakerOf(p, 0); got != "closed" {
						t.Fatalf("breaker after second probe = %q, want closed", got)
					}
				}
			})
		})
	}
}

func TestPoolAllOpenFailsFast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestPool(t, []MemberConfig{
			{Name: "a", Priority: 2, MaxConcurrent: 1},
			{Name: "b", Priority: 1, MaxConcurrent: 1},
		}, PoolConfig{BreakerFailures: 1, BreakerCooldown: time.Minute, QueueTimeout: time.Minute})
		var log callLog
		if m, err := p.Do(context.Background(), failing(&log)); m != 1 || !errors.Is(err, ErrNoBackend) {
			t.Fatalf("Do = (%d, %v), want (1, ErrNoBackend)", m, err)
		}
		if got := log.get(); !slices.Equal(got, []int{0, 1}) {
			t.Fatalf("fn calls = %v, want [0 1]", got)
		}
		var none callLog
		start := time.Now()
		m, err := p.Do(context.Background(), succeeding(&none))
		// The fake clock moves only if Do waited on a timer.
		if elapsed := time.Since(start); elapsed != 0 {
			t.Fatalf("Do with every breaker open took %v: it waited", elapsed)
		}
		if m != -1 || !errors.Is(err, ErrNoBackend) || len(none.get()) != 0 {
			t.Fatalf("Do = (%d, %v) calls %v, want (-1, ErrNoBackend) and no call", m, err, none.get())
		}
	})
}

func TestPoolOpenAndBusyWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// a is open, b is full: capacity can come back on b, so this is
		// saturation, not "no backend".
		const queue = 50 * time.Millisecond
		p := newTestPool(t, []MemberConfig{
			{Name: "a", Priority: 2, MaxConcurrent: 1},
			{Name: "b", Priority: 1, MaxConcurrent: 1},
		}, PoolConfig{BreakerFailures: 1, BreakerCooldown: time.Minute, QueueTimeout: queue})
		h := startHeld(t, p, context.Background(), func(m int) bool { return m == 0 }) // opens a, parks on b
		if h.member != 1 || breakerOf(p, 0) != "open" {
			t.Fatalf("setup: parked on %d, breaker a %q", h.member, breakerOf(p, 0))
		}
		start := time.Now()
		_, err := p.Do(context.Background(), succeeding(new(callLog)))
		if !errors.Is(err, ErrSaturated) || time.Since(start) < queue {
			t.Fatalf("Do = %v after %v, want ErrSaturated after at least %v", err, time.Since(start), queue)
		}
	})
}

func TestPoolWaiterTakesHalfOpenMember(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// a opens and b is held; a waiter must pick a up when its cooldown ends,
		// although no slot is released.
		p := newTestPool(t, []MemberConfig{
			{Name: "a", Priority: 2, MaxConcurrent: 1},
			{Name: "b", Priority: 1, MaxConcurrent: 1},
		}, PoolConfig{BreakerFailures: 1, BreakerCooldown: 50 * time.Millisecond, QueueTimeout: time.Minute})
		h := startHeld(t, p, context.Background(), func(m int) bool { return m == 0 })
		if h.member != 1 {
			t.Fatalf("held call parked on %d, want 1", h.member)
		}
		var log callLog
		res := goDo(p, context.Background(), succeeding(&log))
		r := waitResult(t, res)
		if r.err != nil || r.member != 0 {
			t.Fatalf("waiter = (%d, %v), want (0, nil) from the half-open member", r.member, r.err)
		}
		if got := breakerOf(p, 0); got != "closed" {
			t.Fatalf("breaker a = %q after a good probe, want closed", got)
		}
	})
}

func TestPoolCallerCancelIsNotAFailure(t *testing.T) {
	errOther := errors.New("stream reset")
	tests := []struct {
		name string
		// run makes one Do call whose ctx ends during fn.
		run     func(p *Pool, log *callLog) (int, error)
		wantErr []error
	}{
		{
			name: "fn returns ctx error after cancel",
			run: func(p *Pool, log *callLog) (int, error) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				return p.Do(ctx, func(ctx context.Context, m int) error {
					log.add(m)
					cancel()
					return ctx.Err()
				})
			},
			wantErr: []error{context.Canceled},
		},
		{
			name: "fn returns its own error after cancel",
			run: func(p *Pool, log *callLog) (int, error) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				return p.Do(ctx, func(_ context.Context, m int) error {
					log.add(m)
					cancel()
					return errOther
				})
			},
			wantErr: []error{context.Canceled, errOther},
		},
		{
			name: "deadline passes during fn",
			run: func(p *Pool, log *callLog) (int, error) {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
				defer cancel()
				return p.Do(ctx, func(ctx context.Context, m int) error {
					log.add(m)
					<-ctx.Done()
					return ctx.Err()
				})
			},
			wantErr: []error{context.DeadlineExceeded},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := newTestPool(t, []MemberConfig{
					{Name: "a", Priority: 2, MaxConcurrent: 1},
					{Name: "b", Priority: 1, MaxConcurrent: 1},
				}, PoolConfig{BreakerFailures: 2, BreakerCooldown: time.Minute, QueueTimeout: time.Minute})
				var log callLog
				const n = 10
				for range n {
					m, err := tc.run(p, &log)
					if m != 0 || errors.Is(err, ErrNoBackend) {
						t.Fatalf("Do = (%d, %v), want member 0 and the caller's error", m, err)
					}
					for _, want := range tc.wantErr {
						if !errors.Is(err, want) {
							t.Fatalf("Do error = %v, want it to wrap %v", err, want)
						}
					}
				}
				if got := log.get(); !slices.Equal(got, slices.Repeat([]int{0}, n)) {
					t.Fatalf("fn calls = %v, want member 0 only (no failover)", got)
				}
				if s := p.States()[0]; s.Breaker != "closed" || s.InFlight != 0 {
					t.Fatalf("member a = %+v, want closed with nothing in flight", s)
				}
				if m, err := p.Do(context.Background(), succeeding(&log)); m != 0 || err != nil {
					t.Fatalf("Do after cancels = (%d, %v), want (0, nil)", m, err)
				}
			})
		})
	}
}

func TestPoolPanicReleasesSlot(t *testing.T) {
	p := newTestPool(t, []MemberConfig{{Name: "a", MaxConcurrent: 1}}, PoolConfig{QueueTimeout: 50 * time.Millisecond})
	for range 3 { // more panics than slots
		func() {
			defer func() {
				if r := recover(); r != "boom" {
					t.Fatalf("recovered %v, want the fn's panic value", r)
				}
			}()
			p.Do(context.Background(), func(context.Context, int) error { panic("boom") })
			t.Fatal("Do returned although fn panicked")
		}()
		if got := p.States()[0].InFlight; got != 0 {
			t.Fatalf("in flight after panic = %d, want 0", got)
		}
	}
	if m, err := p.Do(context.Background(), succeeding(new(callLog))); m != 0 || err != nil {
		t.Fatalf("Do after panics = (%d, %v), want (0, nil)", m, err)
	}
}

func TestPoolGoexitReleasesSlot(t *testing.T) {
	// fn ending its goroutine (as t.FailNow does) must release too.
	p := newTestPool(t, []MemberConfig{{Name: "a", MaxConcurrent: 1}}, PoolConfig{QueueTimeout: 50 * time.Millisecond})
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Do(context.Background(), func(context.Context, int) error {
			runtime.Goexit()
			return nil
		})
	}()
	<-done
	if got := p.States()[0].InFlight; got != 0 {
		t.Fatalf("in flight after Goexit = %d, want 0", got)
	}
}

func TestPoolManyCallers(t *testing.T) {
	members := []MemberConfig{
		{Name: "a", Priority: 2, MaxConcurrent: 2},
		{Name: "b", Priority: 1, MaxConcurrent: 2},
		{Name: "c", Priority: 1, MaxConcurrent: 2},
	}
	p := newTestPool(t, members, PoolConfig{QueueTimeout: 30 * time.Second, BreakerFailures: 1000})
	var (
		inFlight [3]atomic.Int32
		maxSeen  [3]atomic.Int32
		calls    atomic.Int64
	)
	fn := func(_ context.Context, m int) error {
		n := inFlight[m].Add(1)
		defer inFlight[m].Add(-1)
		for {
			old := maxSeen[m].Load()
			if n <= old || maxSeen[m].CompareAndSwap(old, n) {
				break
			}
		}
		runtime.Gosched()
		if calls.Add(1)%5 == 0 { // some failures, to exercise failover
			return errPoolTestBoom
		}
		return nil
	}

	const callers = 200
	results := make(chan doResult, callers)
	for range callers {
		go func() {
			m, err := p.Do(context.Background(), fn)
			results <- doResult{m, err}
		}()
	}
	deadline := time.After(60 * time.Second)
	for i := range callers {
		select {
		case r := <-results:
			if r.err != nil && !errors.Is(r.err, ErrNoBackend) {
				t.Errorf("Do = (%d, %v), want success or ErrNoBackend after failover", r.member, r.err)
			}
		case <-deadline:
			t.Fatalf("only %d of %d calls returned", i, callers)
		}
	}
	for i, m := range members {
		if got := maxSeen[i].Load(); got > int32(m.MaxConcurrent) {
			t.Errorf("member %s had %d calls in flight, max %d", m.Name, got, m.MaxConcurrent)
		}
	}
	for _, s := range p.States() {
		if s.InFlight != 0 || s.Breaker != "closed" {
			t.Errorf("after the run %+v, want closed with nothing in flight", s)
		}
	}
}
