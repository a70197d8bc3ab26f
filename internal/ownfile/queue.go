package ownfile

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Queue writes records to a File from a goroutine of its own, so that a
// caller (a check's handler) never waits on the file system: a write(2) or
// an lstat(2) held by a file system that stopped answering (NFS, FUSE)
// holds the writer alone. Records wait in a queue bounded in bytes and in
// records; one that finds it full is not written, and is counted and
// reported like any record the file did not take.
//
// The records waiting and the batch being written together hold at most
// maxBytes (each record in an allocation of its own: no buffer grows by
// doubling), and the writer keeps a buffer of at most 256 KiB.
type Queue struct {
	f          *File
	maxBytes   int
	maxRecords int

	mu sync.Mutex
	// recs are the records waiting, each a copy of its own.
	recs [][]byte
	// bytes and records count what is waiting and what the writer has
	// taken but not finished: the bound covers both.
	bytes, records int
	ctls           []ctl
	wake           chan struct{} // capacity 1: the writer has work
	closed         bool          // no more records; the writer drains and exits
	abandoned      bool          // Close gave up on the writer; it exits when it can
	done           chan struct{} // closed when the writer exits
	closeErr       error
}

// ctl asks the writer to do something between batches: reopen the file,
// or just answer (Flush), once the records queued before it are written.
type ctl struct {
	reopen bool
	reply  chan error
}

// maxCtls bounds the requests waiting for a writer: each SIGHUP adds one,
// and a writer held by its file system answers none of them.
const maxCtls = 8

// ErrFull is the error of a record the queue had no room for.
var ErrFull = errors.New("the write queue is full: the file system does not take records as fast as they come (or does not answer)")

// errClosed is the error of a record written after Close.
var errClosed = errors.New("the file is closed (the process is stopping)")

// NewQueue starts a writer for f. A Queue must be closed (Close), which
// also closes f.
func NewQueue(f *File, maxBytes, maxRecords int) *Queue {
	q := &Queue{f: f, maxBytes: maxBytes, maxRecords: maxRecords, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go q.run()
	return q
}

// Write queues one record (p is copied). It never waits on the file
// system: a record the queue has no room for is counted and reported, and
// the error says why.
func (q *Queue) Write(p []byte) (int, error) {
	q.mu.Lock()
	var err error
	switch {
	case q.closed:
		err = errClosed
	case q.records+1 > q.maxRecords || q.bytes+len(p) > q.maxBytes:
		err = ErrFull
	default:
		q.recs = append(q.recs, append(make([]byte, 0, len(p)), p...))
		q.bytes += len(p)
		q.records++
	}
	q.mu.Unlock()
	if err != nil {
		q.f.rep.note(1, err)
		return 0, err
	}
	q.signal()
	return len(p), nil
}

func (q *Queue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Flush waits until the records queued before it are written (or counted
// as not written), or ctx ends.
func (q *Queue) Flush(ctx context.Context) error { return q.ask(ctx, false) }

// Reopen reopens the file (SIGHUP: an admin's log rotation) once the
// records queued before it are written, and waits for that until ctx ends:
// a writer held by its file system must not hold the caller either.
func (q *Queue) Reopen(ctx context.Context) error { return q.ask(ctx, true) }

func (q *Queue) ask(ctx context.Context, reopen bool) error {
	c := ctl{reopen: reopen, reply: make(chan error, 1)}
	q.mu.Lock()
	switch {
	case q.closed:
		q.mu.Unlock()
		return errClosed
	case len(q.ctls) >= maxCtls:
		q.mu.Unlock()
		return fmt.Errorf("%d earlier requests to the %s file's writer are still waiting: its file system does not answer?", len(q.ctls), q.f.what)
	}
	q.ctls = append(q.ctls, c)
	q.mu.Unlock()
	q.signal()
	select {
	case err := <-c.reply:
		return err
	case <-ctx.Done():
		return fmt.Errorf("the %s file's writer did not answer: its file system does not answer? %w", q.f.what, context.Cause(ctx))
	}
}

// run is the writer: it takes what is queued, writes it in as few writes
// as rotation allows, answers the requests queued with it, and exits once
// Close was called and nothing is left (or Close gave up on it).
func (q *Queue) run() {
	var batch [][]byte // its backing array is reused
	for {
		q.mu.Lock()
		for len(q.recs) == 0 && len(q.ctls) == 0 && !q.closed && !q.abandoned {
			q.mu.Unlock()
			<-q.wake
			q.mu.Lock()
		}
		if q.abandoned || (q.closed && len(q.recs) == 0 && len(q.ctls) == 0) {
			q.mu.Unlock()
			break
		}
		// Swap: callers append to the empty slice while this batch is
		// written.
		batch, q.recs = q.recs, batch[:0]
		ctls := q.ctls
		q.ctls = nil
		q.mu.Unlock()

		if len(batch) > 0 {
			q.f.writeRecords(batch)
		}
		bytes := 0
		for _, r := range batch {
			bytes += len(r)
		}
		clear(batch) // the records' memory goes back with them
		q.mu.Lock()
		if q.abandoned {
			// Close counted this batch as not written and returned.
			q.mu.Unlock()
			break
		}
		q.bytes -= bytes
		q.records -= len(batch)
		q.mu.Unlock()
		for _, c := range ctls {
			var err error
			if c.reopen {
				err = q.f.Reopen()
			}
			c.reply <- err
		}
	}
	q.mu.Lock()
	abandoned := q.abandoned
	q.mu.Unlock()
	if !abandoned {
		q.closeErr = q.f.Close()
	}
	close(q.done)
}

// Close stops taking records, and waits until the writer wrote what was
// queued and closed the file, but no longer than wait: a writer held by
// its file system is left behind (the process is ending), and the records
// it did not write are counted as not written and reported at once.
// Records written after Close are counted as not written.
func (q *Queue) Close(wait time.Duration) error {
	q.mu.Lock()
	already := q.closed
	q.closed = true
	q.mu.Unlock()
	if already {
		return nil
	}
	q.signal()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-q.done:
		return q.closeErr
	case <-timer.C:
	}
	q.mu.Lock()
	if q.abandoned || isClosed(q.done) {
		q.mu.Unlock()
		return q.closeErr
	}
	q.abandoned = true
	lost := q.records
	q.records, q.bytes = 0, 0
	for _, c := range q.ctls {
		c.reply <- errClosed
	}
	q.ctls = nil
	q.mu.Unlock()
	q.signal()
	err := fmt.Errorf("the %s file's writer did not finish within %s of Close: its file system does not answer?", q.f.what, wait)
	q.f.rep.note(lost, err)
	q.f.rep.mu.Lock()
	if q.f.rep.unreported > 0 {
		q.f.rep.flush(err) // the last chance: the process is ending
	}
	q.f.rep.mu.Unlock()
	return fmt.Errorf("%w; %d records not written", err, lost)
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
