package pathcheck

import "sync/atomic"

// Lookups counts the system calls pathcheck makes to look at the file
// system, by kind, while counting is on: what a check's proofs cost, which
// tests hold down and benchmarks report. Off, each call site pays one
// atomic load.
type Lookups struct {
	// Polls are polls of the mount table (one per check's look).
	Polls int64
	// Opens are openat2 calls (a path proven free of links in one call,
	// or not), and Fstats the device checks of what they opened.
	Opens, Fstats int64
	// Stats are stat and lstat calls.
	Stats int64
}

// Total is every system call counted.
func (n Lookups) Total() int64 { return n.Polls + n.Opens + n.Fstats + n.Stats }

type lookupCounts struct{ polls, opens, fstats, stats atomic.Int64 }

var counting atomic.Pointer[lookupCounts]

// CountLookups starts counting, across every goroutine, until the
// returned function stops it and returns the counts. One count at a time.
func CountLookups() (stop func() Lookups) {
	c := new(lookupCounts)
	counting.Store(c)
	return func() Lookups {
		counting.CompareAndSwap(c, nil)
		return Lookups{Polls: c.polls.Load(), Opens: c.opens.Load(), Fstats: c.fstats.Load(), Stats: c.stats.Load()}
	}
}

func counted(f func(*lookupCounts) *atomic.Int64) {
	if c := counting.Load(); c != nil {
		f(c).Add(1)
	}
}

func countPoll()  { counted(func(c *lookupCounts) *atomic.Int64 { return &c.polls }) }
func countOpen()  { counted(func(c *lookupCounts) *atomic.Int64 { return &c.opens }) }
func countFstat() { counted(func(c *lookupCounts) *atomic.Int64 { return &c.fstats }) }
func countStat()  { counted(func(c *lookupCounts) *atomic.Int64 { return &c.stats }) }
