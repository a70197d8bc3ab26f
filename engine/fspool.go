package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// FSConfig bounds the local part of a check: every stage before the
// classifier, which is where a check touches the file system (resolving
// paths, reading git's files, walking trees). The YAML section is engine.
type FSConfig struct {
	// Timeout is how long a check's local part may take, from the moment
	// it asks for a worker to its result. The agent controls the project,
	// so a path can lead onto a mount that never answers (a hung sshfs,
	// NFS or FUSE server, a failing disk): a system call there blocks its
	// thread, and no deadline ends it. Past Timeout the check is answered
	// ASK and its worker is left behind, counted as stuck. A local check
	// takes microseconds, a few milliseconds on a cold cache; a second is
	// far past any healthy one and well inside the hook's own 5 s.
	Timeout time.Duration `yaml:"fs_timeout"`
	// Workers is how many checks' local parts run at once, on long-lived
	// goroutines (a check's analysis recurses deeply, and a fresh
	// goroutine would grow its stack again for every check). It is also
	// the most threads stalled file-system calls can hold: each stuck
	// worker holds one, so the process never nears Go's limit of 10,000
	// threads (it dies there). The work is CPU-bound, so a few per core
	// keep the cores busy while some wait on the disk; a check waits for
	// a free worker within Timeout rather than being refused.
	Workers int `yaml:"fs_workers"`
}

// DefaultFSConfig returns the defaults.
func DefaultFSConfig() FSConfig {
	return FSConfig{Timeout: time.Second, Workers: max(32, 8*runtime.GOMAXPROCS(0))}
}

// maxFSWorkers keeps fs_workers far from Go's 10,000-thread limit: the
// stalled workers' threads and the runtime's own must stay under it.
const maxFSWorkers = 4096

// Validate reports every bad field, by its YAML path.
func (c FSConfig) Validate() error {
	var errs []error
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("engine.fs_timeout: must be positive, got %s", c.Timeout))
	}
	if c.Workers < 1 || c.Workers > maxFSWorkers {
		errs = append(errs, fmt.Errorf("engine.fs_workers: must be 1 to %d, got %d", maxFSWorkers, c.Workers))
	}
	return errors.Join(errs...)
}

// Why a check's local part was not run to its end. The check is answered
// ASK with the reason (fsUnanswered); these never leave the engine.
var (
	errFSTimeout = errors.New("the file system did not answer in time")
	errFSBusy    = errors.New("every file-system worker is busy")
)

// Pool runs the local part of checks on a fixed number of long-lived
// workers, so that a request's goroutine never blocks in a system call:
// it waits for the result, its context and the deadline, whichever comes
// first. A worker whose check outlives its deadline stays with it (a
// thread blocked in a system call cannot be taken back) and is counted as
// stuck until the call returns; the threads stalls can hold are bounded
// by the pool's size. One Pool serves every engine of a process (a reload
// builds a new engine, not new workers), and is safe for concurrent use.
//
// The hand-off is on every check's path, so it allocates nothing: each
// worker has its own channels and the timer of its caller's deadline, and
// a caller holds the worker from taking it to giving it back, the way a
// connection is taken from a pool (a fresh channel and timer per check
// cost four allocations and a microsecond).
type Pool struct {
	size int
	quit chan struct{} // closed by Close: callers waiting for a worker stop

	mu sync.Mutex
	// idle are the workers waiting for a check, the last used on top: it
	// is taken next (its stack is warm), and the ones below idle out.
	idle []*worker
	// waiters are the callers waiting for a worker, oldest first; a worker
	// given back goes to the first.
	waiters []chan *worker
	closed  bool
	// janitor runs sweep once per workerIdle while any worker exists
	// (swept: it is set), so that idle workers end without a timer on
	// every check's path.
	janitor *time.Timer
	swept   bool

	started atomic.Int64 // workers started, at most size
	busy    atomic.Int64 // workers running a check, stuck ones included
	stuck   atomic.Int64 // workers whose check's caller gave up on them
	// timeouts and full count checks answered without their local part:
	// it did not finish in time, or no worker was free.
	timeouts, full atomic.Uint64
}

// NewPool returns a pool of up to workers workers, started as checks need
// them (and ended after a minute or two idle).
func NewPool(workers int) *Pool {
	return &Pool{size: max(1, workers), quit: make(chan struct{})}
}

// PoolStats is what a Pool is doing now, and what it refused so far.
type PoolStats struct {
	Size, Busy, Stuck int
	Timeouts, Full    uint64
}

// Stats returns the pool's counters.
func (p *Pool) Stats() PoolStats {
	return PoolStats{Size: p.size, Busy: int(p.busy.Load()), Stuck: int(p.stuck.Load()),
		Timeouts: p.timeouts.Load(), Full: p.full.Load()}
}

// Close stops the idle workers, and the others as they are given back;
// checks that arrive later are answered as finding no worker. Stuck
// workers end when their system call returns (or with the process).
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	close(p.quit)
	for _, w := range p.idle {
		w.end()
	}
	p.idle = nil
	if p.janitor != nil {
		p.janitor.Stop()
	}
}

// A localJob's state moves once from running to done (the worker finished
// first: the caller may read what its work wrote) or to abandoned (the caller
// gave up first: it never reads them, and the worker counts itself out of
// stuck when it returns).
const (
	jobRunning int32 = iota
	jobDone
	jobAbandoned
)

// localJob is one run on a worker. The caller owns it (within what it
// runs, as localPart does); it may run it again only once a run returned
// nil (the worker is done with it).
type localJob struct {
	work     localWork
	state    atomic.Int32
	panicked any // work's panic, passed on to the caller
}

// localWork is what a worker runs.
type localWork interface{ run() }

// worker is one long-lived goroutine and what its callers reach it by.
// Whoever holds it (a caller, from taking it to giving it back; or, once
// its caller gave up on it, the worker itself) is alone in using jobs,
// done and timer.
type worker struct {
	p    *Pool
	jobs chan *localJob // the job to run; closed: end
	done chan struct{}  // the job's work returned, and its caller waits
	// timer is the caller's deadline, stopped while no caller holds the
	// worker. It belongs to the worker, not to a sync.Pool: a timer
	// belongs to the synctest bubble it was made in, as the worker does.
	timer *time.Timer
	used  bool // given back since the last sweep; under the pool's mu
}

// run runs w on a worker, with j as its job, and waits for it until
// timeout (counted from now, the wait for a free worker included, which
// may take half of it) or until ctx ends. It returns nil when w ran to its
// end: only then may the caller read what w wrote, and use j again.
// Otherwise w may still be running, and go on writing; the caller must not
// read any of it (w must write only what the caller reads after a nil
// return). A panic in w is raised again in the caller, where the server's
// recovery answers it.
func (p *Pool) run(ctx context.Context, timeout time.Duration, j *localJob, w localWork) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if p.stuck.Load() >= int64(p.size) {
		// Every worker is held by a stalled system call: waiting would
		// only delay the same answer.
		p.full.Add(1)
		return errFSBusy
	}
	wk, wait := p.take()
	if wk == nil {
		if wait == nil {
			p.full.Add(1) // closed
			return errFSBusy
		}
		var err error
		if wk, timeout, err = p.await(ctx, timeout, wait); err != nil {
			return err
		}
	}
	j.work, j.panicked = w, nil
	j.state.Store(jobRunning)
	wk.timer.Reset(timeout)
	wk.jobs <- j
	var err error
	select {
	case <-wk.done:
		wk.timer.Stop()
		p.giveBack(wk)
		return j.result()
	case <-wk.timer.C:
		err = errFSTimeout
	case <-ctx.Done():
		wk.timer.Stop()
		err = ctx.Err()
	}
	// Counted before the state changes, so that a worker finishing at once
	// never takes the count below zero.
	p.stuck.Add(1)
	if !j.state.CompareAndSwap(jobRunning, jobAbandoned) {
		// The worker finished as the deadline came: its result is whole.
		p.stuck.Add(-1)
		<-wk.done
		p.giveBack(wk)
		return j.result()
	}
	// The worker is its own now: it gives itself back when its work returns.
	if errors.Is(err, errFSTimeout) {
		p.timeouts.Add(1)
	}
	return err
}

// result is the outcome of a job whose work returned.
func (j *localJob) result() error {
	if j.panicked != nil {
		panic(j.panicked)
	}
	return nil
}

// take returns an idle worker, or a new one while fewer than size exist.
// Otherwise it returns the channel on which a worker will be given (the
// caller is queued as a waiter), or neither once the pool is closed.
func (p *Pool) take() (*worker, chan *worker) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, nil
	}
	if n := len(p.idle); n > 0 {
		w := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		return w, nil
	}
	if p.started.Load() < int64(p.size) {
		p.started.Add(1)
		w := &worker{p: p, jobs: make(chan *localJob, 1), done: make(chan struct{}, 1), timer: time.NewTimer(workerIdle)}
		w.timer.Stop()
		go w.loop()
		if !p.swept {
			p.swept = true
			if p.janitor == nil {
				p.janitor = time.AfterFunc(workerIdle, func() {
					p.mu.Lock()
					defer p.mu.Unlock()
					p.sweep()
				})
			} else {
				p.janitor.Reset(workerIdle)
			}
		}
		return w, nil
	}
	// Every worker is busy. Under CPU-bound load one frees up within
	// microseconds (a check's local part takes 1-100µs, a hundred times
	// that under the race detector), so waiting keeps a burst on two cores
	// from being refused: half the deadline is thousands of checks queued
	// ahead. Workers held by stalls free up only at their deadlines.
	ch := make(chan *worker, 1)
	p.waiters = append(p.waiters, ch)
	return nil, ch
}

// await waits on ch for a worker, up to half of timeout: the other half is
// left for the work, so an ordinary check arriving among stalls is
// answered within it. It returns the worker and what is left of timeout.
func (p *Pool) await(ctx context.Context, timeout time.Duration, ch chan *worker) (*worker, time.Duration, error) {
	start := time.Now()
	queue := time.NewTimer(timeout / 2)
	defer queue.Stop()
	var err error
	select {
	case w := <-ch:
		return w, timeout - time.Since(start), nil
	case <-p.quit:
		err = errFSBusy
	case <-queue.C:
		err = errFSBusy
	case <-ctx.Done():
		err = ctx.Err()
	}
	p.mu.Lock()
	if i := slices.Index(p.waiters, ch); i >= 0 {
		p.waiters = slices.Delete(p.waiters, i, i+1)
	}
	p.mu.Unlock()
	select {
	case w := <-ch:
		// Given as the wait ended: it goes to the next waiter.
		p.giveBack(w)
	default:
	}
	if errors.Is(err, errFSBusy) {
		p.full.Add(1)
	}
	return nil, 0, err
}

// giveBack returns w, idle, to the first waiter, or to the idle workers;
// once the pool is closed, w ends.
func (p *Pool) giveBack(w *worker) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.closed:
		w.end()
	case len(p.waiters) > 0:
		ch := p.waiters[0]
		p.waiters[0] = nil
		p.waiters = p.waiters[1:]
		ch <- w // buffered: its waiter takes it, or gives it back
	default:
		w.used = true
		p.idle = append(p.idle, w)
	}
}

// end ends w, which is idle and no longer among the idle workers; under mu.
func (w *worker) end() {
	w.p.started.Add(-1)
	close(w.jobs)
}

// workerIdle is how long a worker waits for a check before it ends (up to
// twice that: the pool looks once per workerIdle): long enough that a
// server under load keeps its workers (and their grown stacks), short
// enough that an idle one gives the memory back.
const workerIdle = time.Minute

// loop runs the jobs w is given until the pool ends it. It waits on its
// channel alone: a timer in the same select would be added to the timer
// heap and taken out again on every check; the pool's janitor ends idle
// workers instead.
func (w *worker) loop() {
	for j := range w.jobs {
		if !w.runJob(j) {
			// Its caller gave up on it: the worker gives itself back
			// (and is ended there if the pool has closed).
			w.p.giveBack(w)
		}
	}
}

// sweep ends the workers that stayed idle since the last sweep, and comes
// again in workerIdle while any worker is left; under mu.
func (p *Pool) sweep() {
	p.idle = slices.DeleteFunc(p.idle, func(w *worker) bool {
		if w.used {
			w.used = false
			return false
		}
		w.end()
		return true
	})
	if p.started.Load() > 0 && !p.closed {
		p.janitor.Reset(workerIdle)
	} else {
		p.swept = false
	}
}

// runJob runs j, and reports whether its caller was still waiting for it.
func (w *worker) runJob(j *localJob) (waited bool) {
	p := w.p
	p.busy.Add(1)
	defer p.busy.Add(-1)
	defer func() {
		// A panic is the caller's to report; if it has gone, the worker
		// lives on (the check was answered without this result).
		j.panicked = recover()
		if j.state.CompareAndSwap(jobRunning, jobDone) {
			waited = true
			w.done <- struct{}{}
		} else {
			p.stuck.Add(-1)
		}
	}()
	j.work.run()
	return false
}
