package server

import "sync/atomic"

// decodeBudget bounds the estimated decoded cost (wireScan.cost) of the
// requests being decoded and held by handlers at once, server-wide: the
// per-message bounds keep one request from costing much, the budget keeps
// many of them at once from adding up. A request is counted from before it
// is decoded until its unary handler returns, or until a stream has taken
// it (its next message is read, or the stream ends).
//
// Ordinary checks must keep flowing while large requests flood the
// server: requests of at most smallCost may use the whole budget, larger
// ones only what leaves reserve free. A flood of large requests thus
// leaves room for reserve/smallCost small checks at once; only a flood of
// small ones held at once (each stream holds at most one that is counted)
// can take the reserve too, and then they are refused as well: the budget
// is never passed.
type decodeBudget struct {
	limit     int64
	reserve   int64
	smallCost int64
	held      atomic.Int64
}

// smallRequestCost is the estimated cost up to which a request counts as
// ordinary: a Bash, Read or Edit check with a short transcript is a few KiB
// on the wire and ten or so decoded; a Write of the full tool input (256
// KiB) is about 600 KiB and still counts.
const smallRequestCost = 1 << 20

func newDecodeBudget(limit int64) *decodeBudget {
	return &decodeBudget{limit: limit, reserve: limit / 4, smallCost: smallRequestCost}
}

// acquire counts cost against the budget, or reports false (and counts
// nothing) when it does not fit.
func (b *decodeBudget) acquire(cost int64) bool {
	limit := b.limit
	if cost > b.smallCost {
		limit -= b.reserve
	}
	for {
		cur := b.held.Load()
		if cur+cost > limit {
			return false
		}
		if b.held.CompareAndSwap(cur, cur+cost) {
			return true
		}
	}
}

// release gives back what acquire counted.
func (b *decodeBudget) release(cost int64) { b.held.Add(-cost) }
