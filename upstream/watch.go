package upstream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"

	pb "github.com/toolgate/toolgate/gen/toolgate/v1"
)

// Reconnection backoff of the policy watch: doubled after each failure
// up to the maximum, and back to the minimum once a stream delivered.
const (
	minBackoff = 200 * time.Millisecond
	maxBackoff = 5 * time.Second
)

// Apply puts a policy set in force: doc is its served form, from says
// where it came from. An error refuses it; the running set stays.
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
}

// NewWatcher watches the centre at the other end of conn (named addr).
func NewWatcher(conn grpc.ClientConnInterface, addr, stateDir string, apply Apply, log *zap.Logger, m *Metrics) *Watcher {
	return &Watcher{client: pb.NewUpstreamServiceClient(conn), addr: addr, stateDir: stateDir, apply: apply, log: log, metrics: m}
}

// From names the upstream as a policy's origin.
func (w *Watcher) From() string { return "upstream " + w.addr }

// SetKnown records the version in force, which the watch then does not
// apply again.
func (w *Watcher) SetKnown(version string) { w.known = version }

// Fetch receives the set in force at the centre, once, within timeout.
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
		return nil, err
	}
	return set, nil
}

// verify refuses a set whose document does not hash to its version.
func verify(set *pb.PolicySet) error {
	if set == nil {
		return errors.New("the upstream sent no policy set")
	}
	if got := Version(set.GetDocument()); got != set.GetVersion() {
		return fmt.Errorf("the upstream's policy set hashes to %s, not the version it names (%q)", got, set.GetVersion())
	}
	return nil
}

// Save keeps set in the state directory, when there is one.
func (w *Watcher) Save(set *pb.PolicySet) {
	if w.stateDir == "" {
		return
	}
	err := SaveState(w.stateDir, &Saved{Version: set.GetVersion(), Upstream: w.addr, Received: time.Now().UTC(), Document: string(set.GetDocument())})
	if err != nil {
		w.log.Error("keeping the policy set in the state directory failed; a restart with the upstream down would not have it", zap.Error(err))
	}
}

// Run watches until ctx ends, reconnecting with backoff.
func (w *Watcher) Run(ctx context.Context) {
	backoff := minBackoff
	for {
		delivered, err := w.watch(ctx)
		if ctx.Err() != nil {
			return
		}
		if delivered {
			backoff = minBackoff
		}
		w.log.Warn("policy watch ended; reconnecting", zap.String("upstream", w.addr), zap.Error(err), zap.Stringer("backoff", backoff))
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

// watch runs one stream; delivered reports whether it brought a set.
func (w *Watcher) watch(ctx context.Context) (delivered bool, _ error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := w.client.WatchPolicies(ctx, &pb.WatchPoliciesRequest{KnownVersion: w.known})
	if err != nil {
		return false, err
	}
	for {
		msg, err := stream.Recv()
		if err != nil {
			return delivered, err
		}
		delivered = true
		w.receive(msg.GetPolicySet())
	}
}

// receive applies a set that is new and sound; a refused one is logged
// and counted, and the one in force stays.
func (w *Watcher) receive(set *pb.PolicySet) {
	if err := verify(set); err != nil {
		w.metrics.policy(policyRefused)
		w.log.Error("policy set from the upstream refused; the one in force stays", zap.String("version", w.known), zap.Error(err))
		return
	}
	if set.GetVersion() == w.known {
		return
	}
	if err := w.apply(set.GetDocument(), set.GetVersion(), w.From()); err != nil {
		w.metrics.policy(policyRefused)
		w.log.Error("policy set from the upstream refused; the one in force stays",
			zap.String("refused_version", set.GetVersion()), zap.String("version", w.known), zap.Error(err))
		return
	}
	w.metrics.policy(policyApplied)
	w.known = set.GetVersion()
	w.Save(set)
}
