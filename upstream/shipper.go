package upstream

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// The reason label of toolgate_upstream_records_dropped_total; a fixed set.
const (
	dropCap        = "spool_full"  // the spool's oldest segment went past its cap
	dropBuffer     = "buffer_full" // the spool's disk did not keep up: the memory buffer was full
	dropSpoolError = "spool_error" // the disk refused the write
	dropCorrupt    = "corrupt"     // a spooled line that does not parse
	dropRefused    = "refused"     // the centre refused the batch for what it holds (INVALID_ARGUMENT)
)

// Shipping's bounds. A batch is at most shipBatch records and about
// shipBatchBytes (under the centre's 4 MiB message cap), sent
// shipDelay after the first record of it was written, or at once when
// full. A check waits at most writeWait for its record's write(2) (so
// that a killed process loses no answered check's record), and not at
// all while the disk is stalled; memBytes of records wait in memory for
// the disk at most, past which they are dropped and counted.
const (
	shipBatch      = 1000
	shipBatchBytes = 2 << 20
	shipDelay      = 200 * time.Millisecond
	syncEvery      = 100 * time.Millisecond
	writeWait      = 50 * time.Millisecond
	memBytes       = 16 << 20
	backoffMin     = 200 * time.Millisecond
	backoffMax     = 30 * time.Second
)

// ShipperOptions configures a Shipper.
type ShipperOptions struct {
	// Dir is the spool's directory (StateDir/records).
	Dir string
	// MaxBytes caps the spool on disk.
	MaxBytes int64
	// Timeout bounds one ShipRecords call.
	Timeout time.Duration
	Log     *zap.Logger
	Metrics *Metrics
}

type writeBatch struct {
	lines [][]byte
	bytes int
	done  chan struct{}
}

// Shipper ships a local server's decision records to the centre, at
// least once: each is appended to the spool before its check is
// answered (write(2); fsync'd in batches every syncEvery), sent in
// batches, and forgotten only once the centre has acknowledged it. The
// spool left by a previous run is sent first.
type Shipper struct {
	client  pb.UpstreamServiceClient
	sp      *spool
	host    string
	timeout time.Duration
	log     *zap.Logger
	m       *Metrics

	mu      sync.Mutex
	cur     *writeBatch
	kick    chan struct{} // the writer has work
	written chan struct{} // the sender has records to send
	stalled atomic.Bool

	cancel context.CancelFunc
	done   sync.WaitGroup
}

// NewShipper opens the spool in o.Dir and starts shipping to conn's
// centre until Close.
func NewShipper(conn grpc.ClientConnInterface, o ShipperOptions) (*Shipper, error) {
	log := o.Log
	if log == nil {
		log = zap.NewNop()
	}
	s := &Shipper{
		client: pb.NewUpstreamServiceClient(conn), timeout: o.Timeout, log: log, m: o.Metrics,
		cur: &writeBatch{done: make(chan struct{})}, kick: make(chan struct{}, 1), written: make(chan struct{}, 1),
	}
	s.host, _ = os.Hostname()
	sp, err := openSpool(o.Dir, o.MaxBytes, s.drop)
	if err != nil {
		return nil, err
	}
	s.sp = sp
	s.m.spooled(sp.size())
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.done.Add(3)
	go func() { defer s.done.Done(); s.writeLoop(ctx) }()
	go func() { defer s.done.Done(); s.syncLoop(ctx) }()
	go func() { defer s.done.Done(); s.sendLoop(ctx) }()
	s.notify(s.written) // what a previous run left
	return s, nil
}

// SpoolDirOf is the spool's directory in a state directory.
func SpoolDirOf(stateDir string) string { return filepath.Join(stateDir, SpoolDir) }

func (s *Shipper) drop(reason string, n int) {
	s.m.droppedRecords(reason, n)
	s.log.Warn("decision records dropped before reaching the upstream", zap.String("reason", reason), zap.Int("records", n))
}

func (s *Shipper) notify(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Record spools rec for the centre. It waits for the record's write to
// the spool file (a kill after the answer loses nothing), at most
// writeWait, and not at all while the disk is stalled.
func (s *Shipper) Record(rec *pb.DecisionRecord) {
	rec.Host = s.host
	line, err := protojson.Marshal(rec)
	if err != nil {
		s.drop(dropSpoolError, 1)
		return
	}
	line = append(line, '\n')
	s.mu.Lock()
	b := s.cur
	if b.bytes+len(line) > memBytes {
		s.mu.Unlock()
		s.m.droppedRecords(dropBuffer, 1)
		return
	}
	b.lines = append(b.lines, line)
	b.bytes += len(line)
	s.mu.Unlock()
	s.notify(s.kick)
	if s.stalled.Load() {
		return
	}
	t := time.NewTimer(writeWait)
	defer t.Stop()
	select {
	case <-b.done:
	case <-t.C:
		s.stalled.Store(true)
	}
}

func (s *Shipper) writeLoop(ctx context.Context) {
	for {
		stop := false
		select {
		case <-s.kick:
		case <-ctx.Done():
			stop = true
		}
		s.mu.Lock()
		b := s.cur
		s.cur = &writeBatch{done: make(chan struct{})}
		s.mu.Unlock()
		if len(b.lines) > 0 {
			if err := s.sp.append(b.lines); err != nil {
				s.drop(dropSpoolError, len(b.lines))
				s.log.Error("writing decision records to the spool", zap.Error(err))
			}
			s.stalled.Store(false)
			s.m.spooled(s.sp.size())
			s.notify(s.written)
		}
		close(b.done)
		if stop {
			return
		}
	}
}

func (s *Shipper) syncLoop(ctx context.Context) {
	t := time.NewTicker(syncEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			if err := s.sp.sync(); err != nil {
				s.log.Error("syncing the decision records' spool", zap.Error(err))
			}
		case <-ctx.Done():
			return
		}
	}
}

func (s *Shipper) sendLoop(ctx context.Context) {
	backoff := backoffMin
	wait := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for {
		lines, next, err := s.sp.read(shipBatch, shipBatchBytes)
		if err != nil {
			s.log.Error("reading the decision records' spool", zap.Error(err))
			if !wait(backoff) {
				return
			}
			backoff = min(2*backoff, backoffMax)
			continue
		}
		if len(lines) == 0 {
			if next != s.sp.cursor() {
				_ = s.sp.acknowledge(next) // only torn lines
			}
			select {
			case <-s.written:
			case <-ctx.Done():
				return
			}
			// Batch by time: more records come while waiting.
			if !wait(shipDelay) {
				return
			}
			continue
		}
		recs := make([]*pb.DecisionRecord, 0, len(lines))
		for _, l := range lines {
			r := new(pb.DecisionRecord)
			if err := protojson.Unmarshal(l, r); err != nil || r.GetId() == "" {
				s.drop(dropCorrupt, 1)
				continue
			}
			recs = append(recs, r)
		}
		if len(recs) > 0 {
			cctx, cancel := context.WithTimeout(ctx, s.timeout)
			resp, err := s.client.ShipRecords(cctx, &pb.ShipRecordsRequest{Records: recs})
			cancel()
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				if refused(err) {
					// Sending it again would be refused again: the spool
					// would stop for ever behind it.
					s.drop(dropRefused, len(recs))
					s.log.Error("the upstream refused a batch of decision records", zap.Error(err))
				} else {
					s.m.shipFailed()
					s.log.Debug("shipping decision records", zap.Error(err))
					if !wait(backoff) {
						return
					}
					backoff = min(2*backoff, backoffMax)
					continue
				}
			} else {
				s.m.shipped(len(recs), int(resp.GetAccepted()))
			}
		}
		backoff = backoffMin
		if err := s.sp.acknowledge(next); err != nil {
			s.log.Error("saving the decision records' cursor", zap.Error(err))
		}
		s.m.spooled(s.sp.size())
	}
}

// Close stops shipping and writes what is waiting in memory to the
// spool, for the next run to send. It waits at most wait: a stalled disk
// keeps the rest.
func (s *Shipper) Close(wait time.Duration) {
	s.cancel()
	done := make(chan struct{})
	go func() { s.done.Wait(); _ = s.sp.close(); close(done) }()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		s.log.Error("the decision records' spool did not close in time", zap.Stringer("waited", wait))
	}
}

// refused reports whether the centre refused a batch for what it holds.
func refused(err error) bool { return status.Code(err) == codes.InvalidArgument }
