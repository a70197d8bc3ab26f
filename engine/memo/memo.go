// Package memo keeps answers of pure functions, bounded in entries: a
// check's inputs are hostile, so a memo keyed on them must not grow with
// them. Only a pure function may be memoised (its answer depends on the key
// alone, never on the file system or the time); each user says why its
// function is.
package memo

import (
	"sync"
	"sync/atomic"
)

// Table maps keys to answers. When a generation holds max entries it is
// dropped whole and a new one starts: no eviction bookkeeping on the hot
// path, and memory bounded by max entries (and whatever bounds the caller
// puts on a key's size). It is safe for concurrent use; answers are shared
// between callers, who must not change them.
type Table[K comparable, V any] struct {
	max int64
	cur atomic.Pointer[generation[K, V]]
}

type generation[K comparable, V any] struct {
	m sync.Map // K → V
	n atomic.Int64
}

// New returns a table of at most n entries (at least one).
func New[K comparable, V any](n int) *Table[K, V] {
	t := &Table[K, V]{max: int64(max(n, 1))}
	t.cur.Store(&generation[K, V]{})
	return t
}

// Get returns the answer kept for k.
func (t *Table[K, V]) Get(k K) (V, bool) {
	v, ok := t.cur.Load().m.Load(k)
	if !ok {
		var zero V
		return zero, false
	}
	return v.(V), true
}

// Put keeps v as the answer for k, starting a new generation when the
// current one is full.
func (t *Table[K, V]) Put(k K, v V) {
	g := t.cur.Load()
	if g.n.Add(1) <= t.max {
		g.m.Store(k, v)
		return
	}
	next := &generation[K, V]{}
	next.n.Store(1)
	next.m.Store(k, v)
	// Losing the race means another caller started the new generation;
	// this answer is then not kept, and the next miss keeps it.
	t.cur.CompareAndSwap(g, next)
}
