package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// stalls makes the local part of every check whose Read names a path
// containing "stall" block, as a system call on a hung mount does, until
// release is called; it counts the checks it holds.
type stalls struct {
	once    sync.Once
	mu      sync.Mutex
	ch      chan struct{}
	entered int
}

func stallChecks(t *testing.T) *stalls {
	s := &stalls{ch: make(chan struct{})}
	hook := func(req *Request) {
		if p, _ := req.Tool.Input["file_path"].(string); strings.Contains(p, "stall") {
			s.mu.Lock()
			s.entered++
			s.mu.Unlock()
			<-s.ch
		}
	}
	testHookLocal.Store(&hook)
	t.Cleanup(func() {
		s.release() // a test that failed midway leaves no check held
		testHookLocal.Store(nil)
	})
	return s
}

func (s *stalls) release() { s.once.Do(func() { close(s.ch) }) }

// poolEngine is an engine whose local parts run on a pool of n workers
// with a deadline of a second, and a project with one file to read.
func poolEngine(t *testing.T, n int, cls Classifier) (*Engine, *Pool, string) {
	t.Helper()
	pool := NewPool(n)
	e, err := New(Config{Pool: pool, FS: FSConfig{Timeout: time.Second, Workers: n}, Classifier: cls,
		Policies: map[string]PolicySpec{DefaultPolicy: {Permissions: RuleSet{Deny: []string{"Read(./secret/**)"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return e, pool, dir
}

func readReq(dir, file string, mode Mode) *Request {
	return &Request{Tool: ToolCall{Name: "Read", Input: map[string]any{"file_path": filepath.Join(dir, file)}}, WorkingDirectory: dir, Mode: mode}
}

type answer struct {
	res  Result
	err  error
	took time.Duration
}

// checkAsync runs a check and reports its answer and how long (on the
// bubble's clock) it took.
func checkAsync(ctx context.Context, e *Engine, req *Request) <-chan answer {
	ch := make(chan answer, 1)
	go func() {
		start := time.Now()
		res, err := e.Check(ctx, req)
		ch <- answer{res, err, time.Since(start)}
	}()
	return ch
}

// A check whose local part stalls is answered ASK at the deadline, by the
// file-system source, never allowed (bypass mode would allow it), and the
// classifier is not asked; its worker counts as stuck until the call
// returns.
func TestPoolStalledCheckAnsweredAtTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := stallChecks(t)
		e, pool, dir := poolEngine(t, 2, answerAllow{})
		defer pool.Close()
		for _, mode := range []Mode{ModeAuto, ModeBypass} {
			a := <-checkAsync(t.Context(), e, readReq(dir, "stall/x", mode))
			if a.err != nil {
				t.Fatal(a.err)
			}
			if a.res.Decision != Ask || a.res.Source != SourceFileSystem {
				t.Fatalf("%s: %s by %s (%s), want ask by file_system", mode, a.res.Decision, a.res.Source, a.res.Reason)
			}
			if a.took != time.Second {
				t.Errorf("%s: answered after %s, want the 1s deadline", mode, a.took)
			}
			if !strings.Contains(a.res.Reason, "did not answer within 1s (engine.fs_timeout)") || a.res.Kind != KindRead || a.res.Policy != DefaultPolicy {
				t.Errorf("%s: reason %q, kind %q, policy %q", mode, a.res.Reason, a.res.Kind, a.res.Policy)
			}
		}
		if s := pool.Stats(); s.Stuck != 2 || s.Busy != 2 || s.Timeouts != 2 {
			t.Errorf("stats %+v, want 2 stuck, 2 busy, 2 timeouts", s)
		}
		st.release()
		synctest.Wait()
		if s := pool.Stats(); s.Stuck != 0 || s.Busy != 0 {
			t.Errorf("after the calls returned: stats %+v, want none stuck or busy", s)
		}
	})
}

// When every worker is stuck, a check is answered at once (waiting would
// only delay the same answer), even one that would be allowed; once the
// calls return, the workers serve again.
func TestPoolFullOfStuckWorkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := stallChecks(t)
		e, pool, dir := poolEngine(t, 2, answerAllow{})
		defer pool.Close()
		for i := range 2 {
			if a := <-checkAsync(t.Context(), e, readReq(dir, fmt.Sprintf("stall/%d", i), ModeAuto)); a.res.Source != SourceFileSystem {
				t.Fatalf("stalled check %d: %s by %s", i, a.res.Decision, a.res.Source)
			}
		}
		a := <-checkAsync(t.Context(), e, readReq(dir, "main.go", ModeBypass))
		if a.err != nil || a.res.Decision != Ask || a.res.Source != SourceFileSystem || a.took != 0 {
			t.Fatalf("with every worker stuck: %s by %s (%s) after %s, err %v; want ask by file_system at once", a.res.Decision, a.res.Source, a.res.Reason, a.took, a.err)
		}
		if !strings.Contains(a.res.Reason, "engine.fs_workers") {
			t.Errorf("reason %q does not name engine.fs_workers", a.res.Reason)
		}
		if s := pool.Stats(); s.Full != 1 {
			t.Errorf("stats %+v, want 1 refused as full", s)
		}
		st.release()
		synctest.Wait()
		a = <-checkAsync(t.Context(), e, readReq(dir, "main.go", ModeAuto))
		if a.res.Decision != Allow || a.res.Source != SourceSafeTool {
			t.Fatalf("after the calls returned: %s by %s (%s), want allow by safe_tool", a.res.Decision, a.res.Source, a.res.Reason)
		}
	})
}

// A check that finds every worker busy, but none stuck, waits for one
// (up to half its deadline) and is decided as usual: load is not refused.
func TestPoolBusyWorkersAreWaitedFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := stallChecks(t)
		e, pool, dir := poolEngine(t, 1, answerAllow{})
		defer pool.Close()
		first := checkAsync(t.Context(), e, readReq(dir, "stall/x", ModeAuto))
		synctest.Wait() // the only worker is held
		second := checkAsync(t.Context(), e, readReq(dir, "main.go", ModeAuto))
		time.Sleep(400 * time.Millisecond)
		synctest.Wait()
		select {
		case a := <-second:
			t.Fatalf("answered while the worker was busy: %s by %s (%s)", a.res.Decision, a.res.Source, a.res.Reason)
		default:
		}
		st.release()
		a := <-second
		if a.res.Decision != Allow || a.res.Source != SourceSafeTool || a.took != 400*time.Millisecond {
			t.Fatalf("%s by %s (%s) after %s, want allow by safe_tool after 400ms", a.res.Decision, a.res.Source, a.res.Reason, a.took)
		}
		if a := <-first; a.res.Source != SourceSafeTool {
			// Released before its deadline: decided from its facts (a
			// read inside the project).
			t.Fatalf("first: %s by %s (%s)", a.res.Decision, a.res.Source, a.res.Reason)
		}
		// A wait past half the deadline is refused: the worker may be
		// held by a stall.
		st = stallChecks(t)
		held := checkAsync(t.Context(), e, readReq(dir, "stall/y", ModeAuto))
		synctest.Wait()
		a = <-checkAsync(t.Context(), e, readReq(dir, "main.go", ModeAuto))
		if a.res.Decision != Ask || a.res.Source != SourceFileSystem || a.took != 500*time.Millisecond || !strings.Contains(a.res.Reason, "engine.fs_workers") {
			t.Fatalf("%s by %s (%s) after %s, want ask by file_system after 500ms, naming engine.fs_workers", a.res.Decision, a.res.Source, a.res.Reason, a.took)
		}
		if a := <-held; a.took != time.Second || a.res.Source != SourceFileSystem {
			t.Fatalf("held: %s by %s after %s", a.res.Decision, a.res.Source, a.took)
		}
		if s := pool.Stats(); s.Stuck != 1 || s.Full != 1 || s.Timeouts != 1 {
			t.Fatalf("stats %+v", s)
		}
		st.release()
	})
}

// A caller that leaves while its check stalls gets its context's error at
// once, and the worker is counted stuck until the call returns.
func TestPoolCallerCancels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := stallChecks(t)
		e, pool, dir := poolEngine(t, 2, nil)
		defer pool.Close()
		ctx, cancel := context.WithCancel(t.Context())
		ch := checkAsync(ctx, e, readReq(dir, "stall/x", ModeAuto))
		time.Sleep(100 * time.Millisecond)
		cancel()
		a := <-ch
		if !errors.Is(a.err, context.Canceled) || a.took != 100*time.Millisecond {
			t.Fatalf("%v after %s, want context.Canceled after 100ms", a.err, a.took)
		}
		if s := pool.Stats(); s.Stuck != 1 || s.Timeouts != 0 {
			t.Errorf("stats %+v, want 1 stuck and no timeout", s)
		}
		st.release()
		synctest.Wait()
		if s := pool.Stats(); s.Stuck != 0 {
			t.Errorf("stats %+v after release", s)
		}
	})
}

// A check answered at its deadline leaves its worker writing the facts and
// the result it goes on finding; the caller reads none of it (the race
// detector watches), and a later check on the same worker is unaffected.
func TestPoolResultsAfterTimeoutDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := stallChecks(t)
		e, pool, dir := poolEngine(t, 1, nil)
		defer pool.Close()
		var answers []<-chan answer
		// The first holds the only worker; the rest are answered at once
		// (the worker is stuck) or at their deadline.
		for i := range 4 {
			answers = append(answers, checkAsync(t.Context(), e, readReq(dir, fmt.Sprintf("stall/%d", i), ModeAuto)))
		}
		for _, ch := range answers {
			if a := <-ch; a.res.Decision != Ask || a.res.Source != SourceFileSystem {
				t.Fatalf("%s by %s (%s)", a.res.Decision, a.res.Source, a.res.Reason)
			}
		}
		st.mu.Lock()
		entered := st.entered
		st.mu.Unlock()
		if entered != 1 {
			t.Fatalf("%d local parts ran, want 1 (one worker)", entered)
		}
		st.release() // the stuck check goes on, and writes its result
		synctest.Wait()
		a := <-checkAsync(t.Context(), e, readReq(dir, "main.go", ModeAuto))
		if a.res.Decision != Allow {
			t.Fatalf("%s by %s (%s)", a.res.Decision, a.res.Source, a.res.Reason)
		}
	})
}

// A panic in a check's local part reaches its caller, as it would without
// the pool, and the worker lives on.
func TestPoolPanicReachesCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, pool, dir := poolEngine(t, 1, nil)
		defer pool.Close()
		hook := func(req *Request) {
			if strings.HasSuffix(req.Tool.Input["file_path"].(string), "boom") {
				panic("boom")
			}
		}
		testHookLocal.Store(&hook)
		defer testHookLocal.Store(nil)
		func() {
			defer func() {
				if p := recover(); p != "boom" {
					t.Errorf("recovered %v, want boom", p)
				}
			}()
			_, _ = e.Check(t.Context(), readReq(dir, "boom", ModeAuto))
		}()
		if res, err := e.Check(t.Context(), readReq(dir, "main.go", ModeAuto)); err != nil || res.Decision != Allow {
			t.Fatalf("%v %v", res, err)
		}
	})
}

func TestFSConfigValidate(t *testing.T) {
	if err := DefaultFSConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	err := FSConfig{Timeout: 0, Workers: 0}.Validate()
	for _, want := range []string{"engine.fs_timeout", "engine.fs_workers"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
}

// nopWork is work that does nothing but count its runs.
type nopWork struct {
	job localJob
	n   int
}

func (w *nopWork) run() { w.n++ }

// The hand-off to a worker and back is on every check's path: it takes no
// allocation (a job is the caller's, and reused; each worker keeps its
// channels and the timer of its caller's deadline).
func TestPoolRunAllocatesNothing(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	w := &nopWork{}
	for range 3 {
		// One job run again and again, as the engine's pooled local
		// parts are.
		if err := p.run(t.Context(), time.Second, &w.job, w); err != nil {
			t.Fatal(err)
		}
	}
	allocs := testing.AllocsPerRun(1000, func() {
		if err := p.run(t.Context(), time.Second, &w.job, w); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per run, want none", allocs)
	}
	if w.n != 1004 {
		t.Errorf("ran %d times, want 1004", w.n)
	}
}

// spinWork runs for d on the wall clock, busy (as CPU-bound local work
// does) or blocked (as a slow system call is).
type spinWork struct {
	job   localJob
	d     time.Duration
	block bool
	out   int
}

func (w *spinWork) run() {
	if w.block {
		time.Sleep(w.d)
	} else {
		for start := time.Now(); time.Since(start) < w.d; {
		}
	}
	w.out = 1
}

// Many callers on a few workers, with deadlines shorter than some of the
// work: callers give up on workers as they finish, workers are handed on
// to waiting callers and give themselves back after a stall. Every call
// gets its result or an error, never a result written by another's work
// (the race detector watches the reads), and the pool ends with no worker
// busy or stuck.
func TestPoolHandOffUnderContention(t *testing.T) {
	p := NewPool(3)
	defer p.Close()
	const callers, runs = 8, 300
	var wg sync.WaitGroup
	var mu sync.Mutex
	var ok, timedOut, busy int
	for c := range callers {
		wg.Go(func() {
			for i := range runs {
				w := &spinWork{d: time.Duration(i%7) * 40 * time.Microsecond, block: (c+i)%3 == 0}
				deadline := 150 * time.Microsecond
				if w.d == 0 {
					// Work of no length always gets its answer, however
					// loaded the machine: the test needs some of each.
					deadline = 10 * time.Second
				}
				err := p.run(t.Context(), deadline, &w.job, w)
				mu.Lock()
				switch {
				case err == nil:
					if w.out != 1 {
						t.Errorf("a run returned before its work ended")
					}
					ok++
				case errors.Is(err, errFSTimeout):
					timedOut++
				case errors.Is(err, errFSBusy):
					busy++
				default:
					t.Errorf("run: %v", err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if ok == 0 || timedOut == 0 {
		t.Errorf("%d answered, %d timed out, %d busy: want some of each of the first two", ok, timedOut, busy)
	}
	// The workers left behind finish their work within a millisecond.
	for deadline := time.Now().Add(10 * time.Second); ; {
		s := p.Stats()
		if s.Busy == 0 && s.Stuck == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v: workers still busy or stuck", s)
		}
		time.Sleep(time.Millisecond)
	}
	if s := p.Stats(); s.Timeouts != uint64(timedOut) {
		t.Errorf("stats count %d timeouts, the callers %d", s.Timeouts, timedOut)
	}
}

// Idle workers end: within two workerIdle periods of their last check,
// and at once when the pool closes.
func TestPoolIdleWorkersEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := NewPool(4)
		defer p.Close()
		var ws [3]nopWork
		var wg sync.WaitGroup
		for i := range ws {
			wg.Go(func() {
				if err := p.run(t.Context(), time.Second, &ws[i].job, &ws[i]); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if n := p.started.Load(); n < 1 {
			t.Fatalf("%d workers started", n)
		}
		time.Sleep(2*workerIdle + time.Second)
		synctest.Wait()
		if n := p.started.Load(); n != 0 {
			t.Fatalf("%d workers left after two idle periods", n)
		}
		// Started again by the next check; ended by Close.
		if err := p.run(t.Context(), time.Second, &ws[0].job, &ws[0]); err != nil {
			t.Fatal(err)
		}
		p.Close()
		synctest.Wait()
		if n := p.started.Load(); n != 0 {
			t.Fatalf("%d workers left after Close", n)
		}
		if err := p.run(t.Context(), time.Second, &ws[0].job, &ws[0]); !errors.Is(err, errFSBusy) {
			t.Fatalf("after Close: %v, want errFSBusy", err)
		}
	})
}

// BenchmarkPoolRun measures the hand-off alone: a job to a worker and its
// result back, with work that does nothing.
func BenchmarkPoolRun(b *testing.B) {
	p := NewPool(DefaultFSConfig().Workers)
	defer p.Close()
	w := &nopWork{}
	b.ReportAllocs()
	for b.Loop() {
		if err := p.run(b.Context(), time.Second, &w.job, w); err != nil {
			b.Fatal(err)
		}
	}
}
