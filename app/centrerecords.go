package app

import (
	"context"
	"os"
	"sync"
	"time"

	"go.uber.org/zap"

	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
	"github.com/toolgate/toolgate/server"
)

// Bounds of a centre's own decision records on their way to its store.
const (
	centreRecordQueue = 8192
	centreRecordBatch = server.MaxShipRecords
	centreRecordFlush = 200 * time.Millisecond
	centreRecordClose = 5 * time.Second
)

// centreRecorder keeps a central server's own decisions (the checks its
// clients send it directly) in its approvals store, beside those its
// local servers ship, so that the fleet's decisions are in one place. A
// check never waits for the store: records go through a bounded queue to
// one writer, which appends them in batches; what does not fit is
// dropped, counted and logged.
type centreRecorder struct {
	host    string
	sink    server.RecordSink
	log     *zap.Logger
	queue   chan *pb.DecisionRecord
	done    chan struct{}
	mu      sync.Mutex
	dropped int
}

func newCentreRecorder(sink server.RecordSink, log *zap.Logger) *centreRecorder {
	host, _ := os.Hostname()
	r := &centreRecorder{host: host, sink: sink, log: log, queue: make(chan *pb.DecisionRecord, centreRecordQueue), done: make(chan struct{})}
	go r.run()
	return r
}

// Record queues rec; it never blocks.
func (r *centreRecorder) Record(rec *pb.DecisionRecord) {
	rec.Host = r.host
	select {
	case r.queue <- rec:
	default:
		r.mu.Lock()
		r.dropped++
		n := r.dropped
		r.mu.Unlock()
		if n&(n-1) == 0 { // 1, 2, 4, ...: a full queue does not flood the log
			r.log.Warn("decision records dropped: the approvals store is not keeping up", zap.Int("dropped", n))
		}
	}
}

// Close stops taking records and writes those queued, for at most
// centreRecordClose.
func (r *centreRecorder) Close() {
	close(r.queue)
	select {
	case <-r.done:
	case <-time.After(centreRecordClose):
		r.log.Warn("decision records still queued at shutdown were not stored")
	}
}

func (r *centreRecorder) run() {
	defer close(r.done)
	var batch []*pb.DecisionRecord
	flush := func() {
		if len(batch) == 0 {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if _, err := r.sink(ctx, batch); err != nil {
			r.log.Warn("storing the centre's decision records", zap.Int("records", len(batch)), zap.Error(err))
		}
		cancel()
		batch = batch[:0]
	}
	t := time.NewTicker(centreRecordFlush)
	defer t.Stop()
	for {
		select {
		case rec, ok := <-r.queue:
			if !ok {
				flush()
				return
			}
			if batch = append(batch, rec); len(batch) == centreRecordBatch {
				flush()
			}
		case <-t.C:
			flush()
		}
	}
}
