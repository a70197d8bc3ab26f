package upstream

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"

	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// Reconnection backoff of the policy watch: doubled after each stream
// that ended early, up to the maximum, and back to the minimum only after
// a stream that stayed up stableAfter: a centre that accepts the stream
// and drops it at once (or sends a set that is refused) is not retried
// faster than every maxBackoff.
const (
	minBackoff  = 200 * time.Millisecond
	maxBackoff  = 5 * time.Second
	stableAfter = 30 * time.Second
)

// endedLogEvery spaces the "policy watch ended" lines: a centre that
// keeps failing is one line a minute, with the count of those held back.
const endedLogEvery = time.Minute

// MaxDocumentBytes caps a served policy document; a bigger one is
// refused. The centre's own served form is checked against it too.
const MaxDocumentBytes = 1 << 20

// Apply puts a policy set in force: doc is its served form, version its
// verified hash, from says where it came from. An error refuses it; the
// running set stays.
type Apply func(doc []byte, version, from string) error

// Watcher follows the centre's policy set (WatchPolicies) and applies
// each new one; what it applied it keeps in the state directory.
type Watcher struct {
	client   pb.UpstreamServiceClient
	addr     string
	stateDir string // "": keep none
	apply    Apply
	log      *zap.Logger
	metrics  *Metrics
	known    string // the version in force
	// refused is the last version refused: sent again, it is counted
	// but not logged again.
	refused    string
	hasRefused bool
	ended      logLimit
}

// NewWatcher watches the centre at the other end of conn (named addr).
func NewWatcher(conn grpc.ClientConnInterface, addr, stateDir string, apply Apply, log *zap.Logger, m *Metrics) *Watcher {
	return &Watcher{client: pb.NewUpstreamServiceClient(conn), addr: addr, stateDir: stateDir, apply: apply, log: log, metrics: m,
		ended: logLimit{every: endedLogEvery}}
}

// From names the upstream as a policy's origin.
func (w *Watcher) From() string { return "upstream " + w.addr }

// SetKnown records the version in force, which the watch then does not
// apply again, and when it was received from the centre.
func (w *Watcher) SetKnown(version string, received time.Time) {
	w.known = version
	w.metrics.received(received)
}

// Fetch receives the set in force at the centre, once, within timeout,
// verified: its version is then the hash of its document. A set that
// does not verify is refused (counted and logged, as in the watch).
func (w *Watcher) Fetch(ctx context.Context, timeout time.Duration) (*pb.PolicySet, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	stream, err := w.client.WatchPolicies(ctx, &pb.WatchPoliciesRequest{KnownVersion: w.known})
	if err != nil {
		return nil, err
	}
	msg, err := stream.Recv()
	if err != nil {
		return nil, err
	}
	set := msg.GetPolicySet()
	if err := verify(set); err != nil {
		return nil, w.Refuse(set, err)
	}
	return set, nil
}

// Refuse counts and logs a set from the centre that is not put in force
// (once per version), and returns err.
func (w *Watcher) Refuse(set *pb.PolicySet, err error) error {
	w.metrics.policy(policyRefused)
	v := set.GetVersion()
	if !w.hasRefused || v != w.refused {
		w.refused, w.hasRefused = v, true
		w.log.Error("policy set from the upstream refused; the one in force stays",
			zap.String("upstream", w.addr), zap.String("refused_version", quoted(v)), zap.String("version", w.known), zap.Error(err))
	}
	return err
}

// quoted caps a version the centre named, for the log.
func quoted(v string) string {
	if len(v) > 80 {
		return strings.ToValidUTF8(v[:80], "\uFFFD") + "..."
	}
	return v
}

// verify refuses a set that is missing, too big, or whose document does
// not hash to its version.
func verify(set *pb.PolicySet) error {
	if set == nil {
		return errors.New("the upstream sent no policy set")
	}
	if n := len(set.GetDocument()); n > MaxDocumentBytes {
		return fmt.Errorf("the upstream's policy set is %d bytes, over the limit of %d", n, MaxDocumentBytes)
	}
	if got := Version(set.GetDocument()); got != set.GetVersion() {
		return fmt.Errorf("the upstream's policy set hashes to %s, not the version it names", got)
	}
	return nil
}

// Save keeps set in the state directory, when there is one.
func (w *Watcher) Save(set *pb.PolicySet, received time.Time) {
	if w.stateDir == "" {
		return
	}
	err := SaveState(w.stateDir, &Saved{Version: set.GetVersion(), Upstream: w.addr, Received: received.UTC(), Document: string(set.GetDocument())})
	if err != nil {
		w.log.Error("keeping the policy set in the state directory failed; a restart with the upstream down would not have it", zap.Error(err))
	}
}

// Run watches until ctx ends, reconnecting with backoff.
func (w *Watcher) Run(ctx context.Context) {
	backoff := minBackoff
	for {
		started := time.Now()
		err := w.watch(ctx)
		if ctx.Err() != nil {
			return
		}
		if time.Since(started) >= stableAfter {
			backoff = minBackoff
		}
		if held, ok := w.ended.allow(); ok {
			w.log.Warn("policy watch ended; reconnecting", zap.String("upstream", w.addr), zap.Error(err),
				zap.Stringer("backoff", backoff), zap.Int("ended_unlogged", held))
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// errRefused ends a stream that sent a set this server refused: the
// centre is retried after the backoff, not read on.
var errRefused = errors.New("the upstream sent a policy set this server refused")

// watch runs one stream until it fails or sends a set that is refused.
func (w *Watcher) watch(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := w.client.WatchPolicies(ctx, &pb.WatchPoliciesRequest{KnownVersion: w.known})
	if err != nil {
		return err
	}
	defer w.metrics.connected(false)
	for {
		msg, err := stream.Recv()
		if err != nil {
			return err
		}
		w.metrics.connected(true)
		if !w.receive(msg.GetPolicySet()) {
			return errRefused
		}
	}
}

// receive applies a set that is new and sound; a refused one is logged
// (once) and counted, the one in force stays, and receive reports false.
func (w *Watcher) receive(set *pb.PolicySet) bool {
	if err := verify(set); err != nil {
		_ = w.Refuse(set, err)
		return false
	}
	now := time.Now()
	if set.GetVersion() == w.known {
		// The centre confirms the set in force.
		w.metrics.received(now)
		return true
	}
	if err := w.apply(set.GetDocument(), set.GetVersion(), w.From()); err != nil {
		_ = w.Refuse(set, err)
		return false
	}
	w.metrics.policy(policyApplied)
	w.known, w.hasRefused = set.GetVersion(), false
	w.metrics.received(now)
	w.Save(set, now)
	return true
}

// logLimit lets one line through per period and counts those it held
// back. Used by one goroutine.
type logLimit struct {
	every time.Duration
	last  time.Time
	held  int
}

func (l *logLimit) allow() (held int, ok bool) {
	now := time.Now()
	if !l.last.IsZero() && now.Sub(l.last) < l.every {
		l.held++
		return 0, false
	}
	held, l.held, l.last = l.held, 0, now
	return held, true
}
