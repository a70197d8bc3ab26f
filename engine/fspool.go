package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime"
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
type Pool struct {
	size int
	jobs chan *localJob
	quit chan struct{}
	once sync.Once

	started atomic.Int64 // workers started, at most size
	busy    atomic.Int64 // workers running a check, stuck ones included
	stuck   atomic.Int64 // workers whose check's caller gave up on them
	// timeouts and full count checks answered without their local part:
	// it did not finish in time, or no worker was free.
	timeouts, full atomic.Uint64
}

// NewPool returns a pool of up to workers workers, started as checks need
// them (and ended after a minute idle).
func NewPool(workers int) *Pool {
	return &Pool{size: max(1, workers), jobs: make(chan *localJob), quit: make(chan struct{})}
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

// Close stops the idle workers; checks that arrive later are answered as
// finding no worker. Stuck workers end when their system call returns (or
// with the process).
func (p *Pool) Close() { p.once.Do(func() { close(p.quit) }) }

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
// runs, as localPart does) and makes a fresh one per run.
type localJob struct {
	work     localWork
	state    atomic.Int32
	done     chan struct{} // closed when work returned, if the caller still waits
	panicked any           // work's panic, passed on to the caller
}

// localWork is what a worker runs.
type localWork interface{ run() }

// run runs w on a worker, with j (fresh, zero) as its job, and waits for
// it until timeout (counted from
// now, the wait for a free worker included, which may take half of it)
// or until ctx ends. It returns
// nil when w ran to its end: only then may the caller read what w wrote.
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
	j.work, j.done = w, make(chan struct{})
	// A fresh timer, not one kept in a sync.Pool: a timer belongs to the
	// synctest bubble it was made in, and tests run checks in many.
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	if !p.handOff(j) {
		// Every worker is busy. Under CPU-bound load one frees up within
		// microseconds (a check's local part takes 1-100µs, a hundred
		// times that under the race detector), so waiting keeps a burst on
		// two cores from being refused: half the deadline is thousands of
		// checks queued ahead. Workers held by stalls free up only at
		// their deadlines; the other half is left for the work, and an
		// ordinary check arriving among stalls is answered within it.
		queue := time.NewTimer(timeout / 2)
		defer queue.Stop()
		select {
		case p.jobs <- j:
		case <-p.quit:
			p.full.Add(1)
			return errFSBusy
		case <-queue.C:
			p.full.Add(1)
			return errFSBusy
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	var err error
	select {
	case <-j.done:
		return j.result()
	case <-timer.C:
		err = errFSTimeout
	case <-ctx.Done():
		err = ctx.Err()
	}
	// Counted before the state changes, so that a worker finishing at once
	// never takes the count below zero.
	p.stuck.Add(1)
	if !j.state.CompareAndSwap(jobRunning, jobAbandoned) {
		// The worker finished as the deadline came: its result is whole.
		p.stuck.Add(-1)
		<-j.done
		return j.result()
	}
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

// handOff gives j to an idle worker, or to a new one while fewer than size
// exist; false when all exist and are busy.
func (p *Pool) handOff(j *localJob) bool {
	select {
	case p.jobs <- j:
		return true
	default:
	}
	for {
		n := p.started.Load()
		if n >= int64(p.size) {
			return false
		}
		if p.started.CompareAndSwap(n, n+1) {
			go p.work(j)
			return true
		}
	}
}

// workerIdle is how long a worker waits for a check before it ends: long
// enough that a server under load keeps its workers (and their grown
// stacks), short enough that an idle one gives the memory back.
const workerIdle = time.Minute

// work runs j, then every job it is given, until it has been idle for
// workerIdle or the pool closes.
func (p *Pool) work(j *localJob) {
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		p.runJob(j)
		idle.Reset(workerIdle)
		select {
		case j = <-p.jobs:
			continue
		case <-idle.C:
		case <-p.quit:
		}
		p.started.Add(-1)
		return
	}
}

func (p *Pool) runJob(j *localJob) {
	p.busy.Add(1)
	defer p.busy.Add(-1)
	defer func() {
		// A panic is the caller's to report; if it has gone, the worker
		// lives on (the check was answered without this result).
		j.panicked = recover()
		if j.state.CompareAndSwap(jobRunning, jobDone) {
			close(j.done)
		} else {
			p.stuck.Add(-1)
		}
	}()
	j.work.run()
}
